//! Resources, resource templates, prompts, completion and elicitation from `#[operation]`s,
//! as the official SDK clients see them: the TypeScript SDK client
//! (`peers/conformance/ts_surface.mjs`, protocol 2025-11-25: the question comes in the call)
//! and the Python SDK client (`peers/serve/mcp_surface.py`, protocol 2026-07-28: the question
//! comes as an input-required result, and the client calls again with the answer).
#![cfg(feature = "mcp-server")]

mod serve_support;

use opkit::elicit::Elicited;
use opkit::prelude::*;
use opkit_adapters::mcp_server::McpServer;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use serve_support::{Finished, crate_dir, peer_python, peer_script, run, serve};
use std::time::Duration;

/// A shelf of the library.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, JsonSchema)]
enum Shelf {
    Fiction,
    History,
    Science,
}

/// The books on one shelf.
#[operation(namespace = "books", resource = "books://{shelf}")]
async fn on_shelf(shelf: Shelf) -> Vec<String> {
    match shelf {
        Shelf::Fiction => vec!["Dune".to_owned()],
        Shelf::History => vec!["SPQR".to_owned(), "The Guns of August".to_owned()],
        Shelf::Science => vec!["Cosmos".to_owned()],
    }
}

/// What the library is.
#[operation(namespace = "books", resource = "books://about")]
async fn about() -> String {
    "A small library.".to_owned()
}

/// Ask for a recommendation from one shelf.
#[operation(namespace = "books", prompt)]
async fn recommend(
    /// The shelf to pick from.
    shelf: Shelf,
) -> String {
    format!("Recommend one book from the {shelf:?} shelf.")
}

/// The answer to "burn it?".
#[derive(Deserialize, JsonSchema)]
struct Confirm {
    /// Burn the book.
    confirm: bool,
}

/// Burns a book, once the user confirms.
#[operation(namespace = "books", mutation)]
async fn burn(ctx: &OperationContext, title: String) -> Result<String, CallError> {
    match ctx.elicit::<Confirm>(format!("Burn {title:?}?")).await? {
        Elicited::Accepted(Confirm { confirm: true }) => Ok(format!("burned {title}")),
        _ => Ok(format!("kept {title}")),
    }
}

fn library() -> OperationRegistry {
    let registry = OperationRegistry::new();
    registry.register_typed::<on_shelf>().unwrap();
    registry.register_typed::<about>().unwrap();
    registry.register_typed::<recommend>().unwrap();
    registry.register_typed::<burn>().unwrap();
    registry
}

fn plan() -> Value {
    json!({
        "read": "books://History",
        "prompt": {"name": "books.recommend", "arguments": {"shelf": "Science"}},
        "complete": {
            "ref": {"type": "ref/resource", "uri": "books://{shelf}"},
            "argument": {"name": "shelf", "value": "hi"}
        },
        "answer": {"confirm": true},
        "calls": [{"name": "books.burn", "arguments": {"title": "Dune"}}]
    })
}

/// The checks both clients' reports pass.
fn check(report: &Value, client: &str) {
    let uris: Vec<&Value> = report["resources"]["resources"]
        .as_array()
        .unwrap_or_else(|| panic!("{client}: no resources: {report}"))
        .iter()
        .map(|resource| &resource["uri"])
        .collect();
    assert_eq!(uris, [&json!("books://about")], "{client}");
    assert_eq!(
        report["templates"]["resourceTemplates"][0]["uriTemplate"], "books://{shelf}",
        "{client}: {report}"
    );
    let contents = &report["read"]["contents"][0];
    assert_eq!(contents["uri"], "books://History", "{client}: {report}");
    assert_eq!(contents["mimeType"], "application/json");
    let books: Value = serde_json::from_str(contents["text"].as_str().unwrap_or("null")).unwrap();
    assert_eq!(books, json!(["SPQR", "The Guns of August"]), "{client}");
    let prompt = &report["prompts"]["prompts"][0];
    assert_eq!(prompt["name"], "books.recommend", "{client}: {report}");
    assert_eq!(prompt["arguments"][0]["name"], "shelf");
    assert_eq!(prompt["arguments"][0]["required"], true);
    assert_eq!(
        report["prompt"]["messages"][0]["content"]["text"],
        "Recommend one book from the Science shelf.",
        "{client}: {report}"
    );
    assert_eq!(
        report["completion"]["completion"]["values"],
        json!(["History"]),
        "{client}: {report}"
    );
    let questions = report["questions"].as_array().expect("questions");
    assert_eq!(questions.len(), 1, "{client}: asked once: {report}");
    assert_eq!(questions[0]["message"], "Burn \"Dune\"?");
    assert_eq!(
        questions[0]["requestedSchema"]["properties"]["confirm"]["type"], "boolean",
        "{client}"
    );
    let call = &report["calls"][0];
    assert!(call.get("error").is_none(), "{client}: {call}");
    assert_eq!(
        call["result"]["content"][0]["text"], "burned Dune",
        "{client}: {call}"
    );
}

#[tokio::test]
async fn the_typescript_sdk_client_reads_prompts_completes_and_answers_a_question() {
    let served = serve(axum::Router::new().nest("/mcp", McpServer::new(library()).router())).await;
    let peers = crate_dir().join("peers/conformance");
    let node = peers.join("node_modules/.bin/node");
    assert!(
        node.exists(),
        "Node 22 and the TypeScript SDK are missing: run `bash scripts/install-peers.sh`"
    );
    let mut command = tokio::process::Command::new(node);
    command
        .current_dir(&peers)
        .arg(peers.join("ts_surface.mjs"))
        .args([served.url("/mcp"), plan().to_string()]);
    let Finished {
        success,
        stdout,
        stderr,
    } = run(command, Duration::from_secs(120)).await;
    assert!(
        success,
        "the TypeScript SDK client failed:\n{stderr}\n{stdout}"
    );
    let report: Value = serde_json::from_str(stdout.trim()).expect("a report");
    assert_eq!(report["protocolVersion"], "2025-11-25");
    check(&report, "TypeScript SDK");
}

#[tokio::test]
async fn the_python_sdk_client_reads_prompts_completes_and_answers_over_round_trips() {
    let served = serve(axum::Router::new().nest("/mcp", McpServer::new(library()).router())).await;
    let mut command = tokio::process::Command::new(peer_python());
    command
        .arg(peer_script("mcp_surface.py"))
        .args([served.url("/mcp"), plan().to_string()]);
    let Finished {
        success,
        stdout,
        stderr,
    } = run(command, Duration::from_secs(120)).await;
    assert!(success, "the Python SDK client failed:\n{stderr}\n{stdout}");
    let report: Value = serde_json::from_str(stdout.trim()).expect("a report");
    assert_eq!(report["protocolVersion"], "2026-07-28");
    check(&report, "Python SDK");
}
