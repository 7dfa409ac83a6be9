//! A source that goes away fails its own calls only: with the FastAPI peer killed (by its
//! PID), its operations answer `502 TRANSPORT_ERROR` while server-everything and the notes
//! example keep answering through the same gateway, and a refresh names the missing source
//! and refreshes the others.

mod support;

use opkit_testkit::dir::TempDir;
use serde_json::json;
use std::time::Duration;
use support::{ANN_KEY, GatewayProcess, curl_post};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_source_that_goes_away_fails_only_its_own_calls() {
    let dir = TempDir::new("gateway-down");
    let mut fastapi = opkit_testkit::peers::start_fastapi();
    let (notes, notes_task) = support::serve_notes(&dir).await;
    let config = support::config(&fastapi.base_url(), &notes);
    let mut gateway =
        tokio::task::spawn_blocking(move || GatewayProcess::start(&config, &support::env()))
            .await
            .expect("the gateway starts");

    let item = json!({"item_id": 1});
    let (status, reply) = curl_post(&gateway.op_url("shop.get_item"), Some(ANN_KEY), &item);
    assert_eq!(status, 200, "{reply}");

    fastapi.kill();

    let (status, reply) = curl_post(&gateway.op_url("shop.get_item"), Some(ANN_KEY), &item);
    assert_eq!(status, 502, "{reply}");
    assert_eq!(reply["code"], "TRANSPORT_ERROR", "{reply}");
    let (status, reply) = curl_post(
        &gateway.op_url("tools.echo"),
        Some(ANN_KEY),
        &json!({"message": "still here"}),
    );
    assert_eq!(status, 200, "{reply}");
    assert!(reply["data"].to_string().contains("still here"), "{reply}");
    let (status, reply) = curl_post(
        &gateway.op_url("memo.notes_create"),
        Some(ANN_KEY),
        &json!({"title": "still here"}),
    );
    assert_eq!(status, 200, "{reply}");

    // A refresh: the missing source is reported, the others refreshed, nothing removed.
    gateway.signal("-HUP");
    let failed = gateway.wait_line("refresh of shop failed", Duration::from_secs(60));
    assert!(failed.contains("source `shop`"), "{failed}");
    gateway.wait_line("refreshed tools", Duration::from_secs(60));
    gateway.wait_line("refreshed memo", Duration::from_secs(60));
    gateway.wait_line("refreshed", Duration::from_secs(60));
    let (status, reply) = curl_post(
        &gateway.op_url("tools.echo"),
        Some(ANN_KEY),
        &json!({"message": "after"}),
    );
    assert_eq!(status, 200, "{reply}");
    let (status, reply) = curl_post(&gateway.op_url("shop.get_item"), Some(ANN_KEY), &item);
    assert_eq!(
        status, 502,
        "the operation is still there, failing: {reply}"
    );

    drop(gateway);
    notes_task.abort();
}
