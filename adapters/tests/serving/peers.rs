//! The servers against real clients nobody here wrote: the official Python MCP SDK client
//! (`mcp`, over stdio and Streamable HTTP, both protocol eras), schemathesis (fuzzing the
//! HTTP server from its `/openapi.json`) and openapi-spec-validator. Installed, pinned, by
//! `scripts/install-peers.sh` (adapters/peers/serve/requirements.txt).
#![cfg(all(feature = "http-server", feature = "mcp-server"))]

use crate::serve_support;
use serve_support::serve_fixtures;

use opkit_adapters::http_server::{HttpServer, OpenApiVersion};
use opkit_adapters::mcp_server::McpServer;
use opkit_testkit::dir::TempDir;
use serde_json::{Value, json};
use serve_fixtures::{fixture_registry, fixture_tokens};
use serve_support::{peer_python, python_mcp_client, run, serve, serve_mcp};
use std::time::Duration;

const PEER_LIMIT: Duration = Duration::from_secs(300);

fn calls() -> Value {
    json!([
        {"name": "math.add", "arguments": {"a": 2, "b": 40}},
        {"name": "math.double", "arguments": {"n": 21}},
        {"name": "text.search", "arguments": {"filter": {"prefix": "al"}}},
        {"name": "web.health", "arguments": {}},
        {"name": "clock.ticks", "arguments": {"count": 3}},
        {"name": "users.create", "arguments": {"name": "Ada"}},
        {"name": "jobs.fail", "arguments": {}},
        {"name": "math.add", "arguments": {"a": "two"}},
        {"name": "jobs.panic", "arguments": {}},
        {"name": "admin.stats", "arguments": {}},
    ])
}

fn call_entry(report: &Value, index: usize) -> &Value {
    let entry = &report["calls"][index];
    assert!(
        entry.get("error").is_none(),
        "call {index} raised in the Python client: {entry}"
    );
    &entry["result"]
}

/// What every Python-client report must show; `modern` is the 2026-07-28 era.
fn check_report(report: &Value, modern: bool, writer: &str) {
    let expected_version = if modern { "2026-07-28" } else { "2025-11-25" };
    assert_eq!(report["protocolVersion"], expected_version, "{report}");
    let tools = report["tools"].as_array().expect("tools");
    let names: Vec<&str> = tools
        .iter()
        .filter_map(|tool| tool["name"].as_str())
        .collect();
    let registry = fixture_registry(true);
    let ids: Vec<String> = registry.specs().iter().map(|spec| spec.id()).collect();
    assert_eq!(names, ids);
    for tool in tools {
        assert_eq!(tool["inputSchema"]["type"], "object");
        assert!(tool["description"].is_string());
    }
    let structured = |index: usize| call_entry(report, index)["structuredContent"].clone();
    let text = |index: usize| call_entry(report, index)["content"][0]["text"].clone();
    // structuredContent plus the same JSON as text.
    for index in 0..6 {
        let result = call_entry(report, index);
        assert_eq!(result["isError"], false, "{result}");
        let text: Value = serde_json::from_str(text(index).as_str().unwrap()).unwrap();
        assert_eq!(text, structured(index), "call {index}");
    }
    assert_eq!(structured(0), json!({"sum": 42}));
    let wrap = |value: Value| {
        if modern {
            value
        } else {
            json!({"result": value})
        }
    };
    assert_eq!(structured(1), wrap(json!(42)));
    assert_eq!(structured(2), wrap(json!(["alpha", "alphabet"])));
    assert_eq!(structured(3), wrap(json!({"status": "ok"})));
    assert_eq!(
        structured(4),
        json!({"items": [{"tick": 0}, {"tick": 1}, {"tick": 2}], "truncated": false})
    );
    let progress = report["calls"][4]["progress"].as_array().unwrap();
    assert_eq!(progress.len(), 3, "one progress notification per item");
    assert_eq!(progress[2]["message"], r#"{"tick":2}"#);
    assert_eq!(structured(5)["createdBy"], writer);
    // CallErrors are tool errors with the message.
    let failed = call_entry(report, 6);
    assert_eq!(failed["isError"], true);
    assert_eq!(
        failed["content"][0]["text"],
        "EXECUTION_ERROR: the job failed"
    );
    // No structuredContent on errors (it would not match the outputSchema the client
    // checks); the CallError rides in `_meta`.
    let invalid = call_entry(report, 7);
    assert_eq!(invalid["isError"], true);
    assert!(invalid.get("structuredContent").is_none(), "{invalid}");
    assert_eq!(invalid["_meta"]["opkit/error"]["code"], "VALIDATION_ERROR");
    // Every kind of failure the client can meet is a tool error it accepts (it checks every
    // structuredContent against the outputSchema, so any mismatch would have raised above).
    let panicked = call_entry(report, 8);
    assert_eq!(panicked["isError"], true, "{panicked}");
    assert!(panicked.get("structuredContent").is_none(), "{panicked}");
    assert_eq!(panicked["_meta"]["opkit/error"]["code"], "EXECUTION_ERROR");
    let stats = call_entry(report, 9);
    if writer == "writer" {
        // The writer lacks the `admin` role.
        assert_eq!(stats["isError"], true, "{stats}");
        assert!(stats.get("structuredContent").is_none(), "{stats}");
        assert_eq!(stats["_meta"]["opkit/error"]["code"], "ACCESS_DENIED");
    } else {
        assert_eq!(stats["isError"], false, "{stats}");
    }
}

#[tokio::test]
async fn the_python_mcp_client_over_stdio() {
    let binary = serve_support::example_binary("serve_stdio");
    let binary = binary.to_str().unwrap();
    for (mode, modern) in [("auto", true), ("legacy", false)] {
        let report = python_mcp_client(
            &[
                "--stdio",
                binary,
                "--arg=--as",
                "--arg=writer-token",
                "--mode",
                mode,
            ],
            &calls(),
        )
        .await;
        assert_eq!(report["serverInfo"]["name"], "opkit-fixtures");
        check_report(&report, modern, "writer");
    }
}

#[tokio::test]
async fn the_python_mcp_client_over_streamable_http() {
    let served = serve_mcp(
        McpServer::new(fixture_registry(true))
            .name("opkit-fixtures")
            .identity_resolver(fixture_tokens()),
    )
    .await;
    let url = served.url("/mcp");
    for (mode, modern) in [("auto", true), ("legacy", false)] {
        let report = python_mcp_client(
            &["--http", &url, "--token", "admin-token", "--mode", mode],
            &calls(),
        )
        .await;
        assert_eq!(report["serverInfo"]["name"], "opkit-fixtures");
        check_report(&report, modern, "admin");
    }
}

#[tokio::test]
async fn openapi_spec_validator_accepts_the_document() {
    let dir = TempDir::new("openapi-validator");
    for (label, server) in [
        (
            "fixtures",
            HttpServer::new(fixture_registry(true)).identity_resolver(fixture_tokens()),
        ),
        (
            "fixtures-3.2",
            HttpServer::new(fixture_registry(true))
                .identity_resolver(fixture_tokens())
                .openapi_version(OpenApiVersion::V3_2),
        ),
        ("no-resolver", HttpServer::new(fixture_registry(true))),
        ("empty", HttpServer::new(opkit::OperationRegistry::new())),
    ] {
        let path = dir.join(format!("{label}.json"));
        std::fs::write(&path, serde_json::to_vec_pretty(&server.openapi()).unwrap()).unwrap();
        let mut command = tokio::process::Command::new(peer_python());
        command.args(["-m", "openapi_spec_validator"]).arg(&path);
        let finished = run(command, PEER_LIMIT).await;
        assert!(
            finished.success,
            "openapi-spec-validator rejects the {label} document:\n{}\n{}",
            finished.stdout, finished.stderr
        );
    }
}

#[tokio::test]
async fn schemathesis_finds_nothing() {
    let served = serve(
        HttpServer::new(fixture_registry(false))
            .identity_resolver(fixture_tokens())
            .router(),
    )
    .await;
    // Bounded and reproducible by default; OPKIT_SCHEMATHESIS_EXAMPLES / _SEED for deeper runs.
    let examples = std::env::var("OPKIT_SCHEMATHESIS_EXAMPLES").unwrap_or_else(|_| "30".into());
    let seed = std::env::var("OPKIT_SCHEMATHESIS_SEED").unwrap_or_else(|_| "1".into());
    // schemathesis writes `.hypothesis/` and reports into its working directory.
    let dir = TempDir::new("schemathesis");
    let schemathesis = peer_python().with_file_name("schemathesis");
    let mut command = tokio::process::Command::new(schemathesis);
    command
        .current_dir(dir.path())
        .arg("run")
        .arg(served.url("/openapi.json"))
        .args(["--checks", "all"])
        .args(["--max-examples", &examples])
        .args(["--header", "Authorization: Bearer admin-token"])
        .args(["--seed", &seed])
        .args(["--request-timeout", "20"])
        .args(["--workers", "1"])
        .env("NO_COLOR", "1");
    let finished = run(command, PEER_LIMIT).await;
    assert!(
        finished.success,
        "schemathesis found problems:\n{}\n{}",
        finished.stdout, finished.stderr
    );
    eprintln!("{}", finished.stdout);
}
