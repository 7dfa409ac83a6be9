//! Skills (SEP-2640) end to end: opkit's MCP server serves a directory of skills (the
//! conformance fixture, `adapters/peers/conformance/skills`) over Streamable HTTP, and
//! opkit's MCP import lists them without reading a file, then loads one with every file
//! verified, byte for byte what is on disk. A server whose file on disk changed after it was
//! listed serves bytes the listing does not vouch for: the load is refused. (The suite's
//! client scenarios attack digest, size and frontmatter one by one.) Skills held in memory
//! are served beside a directory's, and a dynamic skill's files come from the registry's
//! resource operations, read one by one.
#![cfg(all(feature = "mcp", feature = "mcp-skills"))]

use crate::serve_support::{crate_dir, serve};
use opkit::{OperationRegistry, operation};
use opkit_adapters::mcp::{McpConnection, McpOptions, SkillError};
use opkit_adapters::mcp_server::{McpServer, MemorySkill, SkillCatalog, Skills, SkillsError};
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

/// This week's figures of a report, written when read.
#[operation(namespace = "reports", mcp(resource = "skill://weekly-report/{file}"))]
async fn report_file(file: String) -> String {
    format!("{{\"file\": \"{file}\", \"total\": 42}}")
}

const MEMO: &str = "---\nname: memo\ndescription: Write a memo.\nmetadata:\n  team: ops\n---\nSee templates/memo.md.\n";
const REPORT: &str =
    "---\nname: weekly-report\ndescription: The weekly report.\n---\nRead figures.json.\n";

#[tokio::test]
async fn skills_from_memory_and_operations_are_served_beside_a_directory() {
    let dir = fixture();
    let registry = OperationRegistry::new();
    registry.register_typed::<report_file>().unwrap();
    let skills = Skills::new()
        .skill(
            MemorySkill::new("acme/memo", MEMO)
                .file("templates/memo.md", "# Memo\n")
                .file("logo.png", vec![0x89, b'P', b'N', b'G', 0]),
        )
        .unwrap()
        .skill(MemorySkill::new("weekly-report", REPORT).dynamic())
        .unwrap()
        .directory(dir.path())
        .unwrap();
    let server = McpServer::new(registry).skills(skills);
    let served = serve(axum::Router::new().nest("/mcp", server.router())).await;
    let connection = McpConnection::connect_http(&served.url("/mcp"), McpOptions::new("skills"))
        .await
        .unwrap();
    let listed = connection.skills().await.unwrap();
    let uris: Vec<&str> = listed.iter().map(|skill| skill.uri.as_str()).collect();
    assert_eq!(
        uris,
        [
            "skill://acme/memo/SKILL.md",
            "skill://conformance-notes/SKILL.md",
            "skill://weekly-report/SKILL.md",
        ]
    );

    // In memory: every file verified, a binary one too.
    let memo = connection.load_skill(&listed[0]).await.unwrap();
    assert_eq!(memo.frontmatter["metadata"]["team"], "ops");
    let bytes: Vec<&[u8]> = memo
        .files
        .iter()
        .map(|file| file.bytes.as_slice())
        .collect();
    assert_eq!(
        bytes,
        [MEMO.as_bytes(), &[0x89, b'P', b'N', b'G', 0], b"# Memo\n"]
    );
    let template = connection
        .read_skill_file(&listed[0], "templates/memo.md")
        .await
        .unwrap();
    assert_eq!(template.mime_type.as_deref(), Some("text/markdown"));
    let unlisted = connection
        .read_skill_file(&listed[0], "templates/other.md")
        .await
        .unwrap_err();
    assert!(
        matches!(unlisted, SkillError::NotListed { .. }),
        "{unlisted}"
    );

    // Dynamic: not loadable as a whole; its SKILL.md is checked, its files are the operation's.
    let report = &listed[2];
    let whole = connection.load_skill(report).await.unwrap_err();
    assert!(matches!(whole, SkillError::Dynamic { .. }), "{whole}");
    let manifest = connection
        .read_skill_file(report, "SKILL.md")
        .await
        .unwrap();
    assert_eq!(manifest.bytes, REPORT.as_bytes());
    let figures = connection
        .read_skill_file(report, "figures.json")
        .await
        .unwrap();
    let figures: serde_json::Value = serde_json::from_slice(&figures.bytes).unwrap();
    assert_eq!(figures["total"], 42);
    connection.close();
}

#[test]
fn a_second_skill_at_the_same_uri_is_refused() {
    let twice = Skills::new()
        .skill(MemorySkill::new("memo", MEMO))
        .unwrap()
        .skill(MemorySkill::new("memo", MEMO));
    assert!(matches!(twice, Err(SkillsError::Duplicate(_))));
    let missing = Skills::new().directory("/nonexistent/opkit-skills");
    assert!(matches!(missing, Err(SkillsError::Catalog(_))));
}
