//! `examples/serve.rs` runs: it serves the quickstart operations over HTTP and MCP on
//! 127.0.0.1 and prints URLs that work.
#![cfg(all(feature = "http-server", feature = "mcp-server"))]

use crate::serve_support;

use opkit_testkit::process::AsyncChildGuard;
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};
use serve_support::example_binary;
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};

#[tokio::test]
async fn the_serve_example_serves_the_quickstart_over_http_and_mcp() {
    let mut child = tokio::process::Command::new(example_binary("serve"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("the example starts");
    let stdout = child.stdout.take().expect("stdout");
    let _guard = AsyncChildGuard::new(child);
    let mut lines = BufReader::new(stdout).lines();
    let mut printed = Vec::new();
    let read = async {
        while let Some(line) = lines.next_line().await.expect("read stdout") {
            let done = line.contains("MCP (Streamable HTTP)");
            printed.push(line);
            if done {
                break;
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(60), read)
        .await
        .expect("the example prints its URLs");
    let base = printed[0]
        .split_whitespace()
        .find(|word| word.starts_with("http://127.0.0.1:"))
        .expect("the first line names the base URL")
        .to_owned();
    assert!(
        printed
            .iter()
            .any(|line| line.contains(&format!("{base}/openapi.json")))
    );
    let mcp_url = format!("{base}/mcp");
    assert!(printed.iter().any(|line| line.contains(&mcp_url)));

    let client = reqwest::Client::new();
    let doc: Value = client
        .get(format!("{base}/openapi.json"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let ids: Vec<&str> = doc["paths"]
        .as_object()
        .unwrap()
        .keys()
        .map(|path| path.trim_start_matches("/ops/"))
        .collect();
    assert_eq!(
        ids,
        ["clock.ticks", "math.add", "users.create", "web.health"]
    );
    let sum: Value = client
        .get(format!("{base}/ops/math.add?a=2&b=40"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(sum["data"], json!(42));
    let created = client
        .post(format!("{base}/ops/users.create"))
        .bearer_auth("demo-token")
        .json(&json!({"name": "Ada"}))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status().as_u16(), 200);

    let mcp = ()
        .serve(StreamableHttpClientTransport::from_config(
            StreamableHttpClientTransportConfig::with_uri(mcp_url).auth_header("demo-token"),
        ))
        .await
        .expect("an MCP client connects");
    let tools = mcp.list_all_tools().await.unwrap();
    assert_eq!(tools.len(), 4);
    let result = mcp
        .call_tool(
            CallToolRequestParams::new("users.create")
                .with_arguments(json!({"name": "Bo"}).as_object().cloned().unwrap()),
        )
        .await
        .unwrap();
    assert_eq!(
        result.structured_content,
        Some(json!({"id": 1, "name": "Bo"}))
    );
    mcp.cancel().await.unwrap();
}
