//! Skills (SEP-2640) end to end: opkit's MCP server serves a directory of skills (the
//! conformance fixture, `adapters/peers/conformance/skills`) over Streamable HTTP, and
//! opkit's MCP import lists them without reading a file, then loads one with every file
//! verified, byte for byte what is on disk. A server whose file on disk changed after it was
//! listed serves bytes the listing does not vouch for: the load is refused. (The suite's
//! client scenarios attack digest, size and frontmatter one by one.)
#![cfg(all(feature = "mcp", feature = "mcp-skills"))]

use crate::serve_support::{crate_dir, serve};
use opkit::OperationRegistry;
use opkit_adapters::mcp::{McpConnection, McpOptions, SkillError};
use opkit_adapters::mcp_server::{McpServer, SkillCatalog};
use opkit_testkit::dir::TempDir;

/// The fixture's skill tree copied to a fresh directory.
fn fixture() -> TempDir {
    let dir = TempDir::new("opkit-skills");
    let from = crate_dir().join("peers/conformance/skills/conformance-notes");
    let to = dir.path().join("conformance-notes");
    std::fs::create_dir_all(to.join("references")).unwrap();
    for file in ["SKILL.md", "references/style.md"] {
        std::fs::copy(from.join(file), to.join(file)).unwrap();
    }
    dir
}

#[tokio::test]
async fn skills_are_listed_without_reads_and_loaded_verified() {
    let dir = fixture();
    let catalog = std::sync::Arc::new(SkillCatalog::from_dir(dir.path()).unwrap());
    let server = McpServer::new(OperationRegistry::new()).skills(catalog.clone());
    let served = serve(axum::Router::new().nest("/mcp", server.router())).await;
    let connection = McpConnection::connect_http(&served.url("/mcp"), McpOptions::new("skills"))
        .await
        .unwrap();
    let skills = connection.skills().await.unwrap();
    assert_eq!(skills.len(), 1);
    let skill = &skills[0];
    assert_eq!(skill.uri, "skill://conformance-notes/SKILL.md");
    assert_eq!(skill.name(), "conformance-notes");

    let loaded = connection.load_skill(skill).await.unwrap();
    assert_eq!(loaded.files.len(), 2);
    assert_eq!(loaded.files[0].uri, skill.uri, "SKILL.md first");
    let on_disk = std::fs::read(dir.path().join("conformance-notes/SKILL.md")).unwrap();
    assert_eq!(loaded.files[0].bytes, on_disk);
    assert_eq!(loaded.frontmatter["name"], "conformance-notes");
    let style = std::fs::read(dir.path().join("conformance-notes/references/style.md")).unwrap();
    assert_eq!(loaded.files[1].bytes, style);

    // The file changes on disk after the listing and the server reloads: it now serves
    // bytes the entry the client holds does not vouch for.
    std::fs::write(
        dir.path().join("conformance-notes/references/style.md"),
        "# Style\n\nAnything goes.\n",
    )
    .unwrap();
    assert!(catalog.reload().unwrap(), "the entry changed");
    let error = connection.load_skill(skill).await.unwrap_err();
    assert!(
        matches!(error, SkillError::Size { .. } | SkillError::Digest { .. }),
        "{error}"
    );
    connection.close();
}

#[tokio::test]
async fn a_server_without_skills_lists_none() {
    let server = McpServer::new(OperationRegistry::new());
    let served = serve(axum::Router::new().nest("/mcp", server.router())).await;
    let connection = McpConnection::connect_http(&served.url("/mcp"), McpOptions::new("none"))
        .await
        .unwrap();
    assert!(connection.skills().await.unwrap().is_empty());
    connection.close();
}
