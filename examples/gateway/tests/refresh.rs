//! A refresh on `SIGHUP` drops no call in flight: an event stream of the FastAPI peer
//! (OpenAPI from a file, imported again, the streaming operation's definition changed)
//! keeps sending across the refresh, and a long-running tool of
//! server-everything (MCP, listed again) started before it completes after it; every
//! source answers new calls afterwards.

mod support;

use opkit_testkit::dir::TempDir;
use opkit_testkit::process::ChildGuard;
use serde_json::json;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;
use support::{ANN_KEY, GatewayProcess, curl_post};

/// Reads lines until one that carries event data (bounded by the stream's own pace: the
/// peer sends a tick about every 100 ms; at most 1,000 lines).
fn next_data(lines: &mut impl Iterator<Item = std::io::Result<String>>) -> String {
    for line in lines.take(1000) {
        let line = line.expect("the stream is readable");
        if line.starts_with("data:") {
            return line;
        }
    }
    panic!("the event stream ended");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refresh_drops_no_call_in_flight() {
    let dir = TempDir::new("gateway-refresh");
    let fastapi = opkit_testkit::peers::start_fastapi();
    let (notes, notes_task) = support::serve_notes(&dir).await;
    // The FastAPI document as a file, so that the test can change it before the refresh.
    let (_, mut document) =
        support::curl_get(&format!("{}/openapi.json", fastapi.base_url()), None);
    let file = dir.join("shop.json");
    std::fs::write(&file, document.to_string()).expect("the document is written");
    let config = support::config(&fastapi.base_url(), &notes).replace(
        &format!("openapi = \"{}/openapi.json\"", fastapi.base_url()),
        &format!(
            "openapi = \"{}\"\nbase_url = \"{}\"",
            file.display(),
            fastapi.base_url()
        ),
    );
    let mut gateway =
        tokio::task::spawn_blocking(move || GatewayProcess::start(&config, &support::env()))
            .await
            .expect("the gateway starts");

    // An event stream through the gateway, read by curl.
    let mut stream = ChildGuard::spawn(
        Command::new("curl")
            .args(["-sS", "-N", "--max-time", "120", "-H"])
            .arg(format!("x-api-key: {ANN_KEY}"))
            .arg(gateway.op_url("shop.forever"))
            .stdout(Stdio::piped()),
        "curl (event stream)",
    );
    let stdout = stream
        .child_mut()
        .and_then(|child| child.stdout.take())
        .expect("curl's stdout");
    let mut lines = BufReader::new(stdout).lines();
    let first = next_data(&mut lines);

    // A long-running MCP tool, started before the refresh.
    let long_call = {
        let url = gateway.op_url("tools.trigger_long_running_operation");
        std::thread::spawn(move || {
            curl_post(&url, Some(ANN_KEY), &json!({"duration": 4, "steps": 4}))
        })
    };

    // The operation whose stream is open changes (its description), the others do not.
    document["paths"]["/forever"]["get"]["description"] = json!("Streams ticks, version 2.");
    std::fs::write(&file, document.to_string()).expect("the document is written");
    gateway.signal("-HUP");
    let shop = gateway.wait_line("refreshed shop", Duration::from_secs(60));
    assert!(shop.contains(": 0 added, 0 removed, 1 replaced"), "{shop}");
    gateway.wait_line("refreshed", Duration::from_secs(60));

    // The stream opened before the refresh still sends.
    let after = next_data(&mut lines);
    assert_ne!(first, after);
    stream.kill();

    let (status, reply) = long_call.join().expect("the long call's thread");
    assert_eq!(status, 200, "{reply}");
    assert!(
        reply
            .to_string()
            .contains("Long running operation completed"),
        "{reply}"
    );

    for (id, input) in [
        ("shop.get_item", json!({"item_id": 2})),
        ("tools.echo", json!({"message": "after"})),
        ("memo.notes_create", json!({"title": "after"})),
    ] {
        let (status, reply) = curl_post(&gateway.op_url(id), Some(ANN_KEY), &input);
        assert_eq!(status, 200, "{id}: {reply}");
    }

    drop(gateway);
    notes_task.abort();
}
