//! The FastAPI peer (OpenAPI, by URL and from a file), server-everything (MCP over stdio) and the notes example (MCP
//! over Streamable HTTP, with its own API key) behind one gateway: one OpenAPI document,
//! `curl` calling each source through it, the official TypeScript SDK client calling
//! through its MCP endpoint, callers without the right key or scope refused, operations
//! without a rule internal, and a rate limit.

mod support;

use opkit_testkit::dir::TempDir;
use serde_json::json;
use support::{ANN_KEY, BOB_KEY, GatewayProcess, curl_get, curl_post};

/// One OpenAPI document holds the three sources' operations.
fn one_document(gateway: &GatewayProcess) {
    // One OpenAPI document with the three namespaces.
    let (status, document) = curl_get(&format!("{}/api/openapi.json", gateway.base), None);
    assert_eq!(status, 200);
    let text = document.to_string();
    for id in [
        "shop.get_item",
        "shopfile.get_item",
        "tools.echo",
        "memo.notes_create",
    ] {
        assert!(
            text.contains(id),
            "{id} missing from the OpenAPI document: {:?}",
            document["paths"]
                .as_object()
                .map(|paths| paths.keys().collect::<Vec<_>>())
        );
    }
}

/// `curl` through the gateway reaches each source.
fn curl_reaches_every_source(gateway: &GatewayProcess) {
    // curl through the gateway to each source.
    let (status, reply) = curl_post(
        &gateway.op_url("shop.get_item"),
        Some(ANN_KEY),
        &json!({"item_id": 7}),
    );
    assert_eq!(status, 200, "{reply}");
    assert_eq!(reply["data"]["item_id"], 7, "{reply}");
    let (status, reply) = curl_post(
        &gateway.op_url("shopfile.get_item"),
        Some(ANN_KEY),
        &json!({"item_id": 8}),
    );
    assert_eq!(status, 200, "{reply}");
    assert_eq!(reply["data"]["item_id"], 8, "{reply}");
    let (status, reply) = curl_post(
        &gateway.op_url("tools.echo"),
        Some(ANN_KEY),
        &json!({"message": "hi"}),
    );
    assert_eq!(status, 200, "{reply}");
    assert!(reply["data"].to_string().contains("hi"), "{reply}");
    let (status, reply) = curl_post(
        &gateway.op_url("memo.notes_create"),
        Some(ANN_KEY),
        &json!({"title": "milk"}),
    );
    assert_eq!(status, 200, "{reply}");
    assert!(reply["data"].to_string().contains("milk"), "{reply}");
}

/// Callers without a key or scope are refused, imports without a rule are internal, and a
/// rate limit holds.
fn refusals_and_limits(gateway: &GatewayProcess) {
    // A public operation answers anyone; the others need a key with the right scope.
    let (status, reply) = curl_post(&gateway.op_url("shop.hello"), None, &json!({"name": "zoe"}));
    assert_eq!(status, 200, "{reply}");
    let (status, _) = curl_post(
        &gateway.op_url("shop.get_item"),
        None,
        &json!({"item_id": 1}),
    );
    assert_eq!(status, 403);
    let (status, _) = curl_post(
        &gateway.op_url("shop.get_item"),
        Some("wrong-key"),
        &json!({"item_id": 1}),
    );
    assert_eq!(status, 401);
    let (status, reply) = curl_post(
        &gateway.op_url("tools.echo"),
        Some(BOB_KEY),
        &json!({"message": "hi"}),
    );
    assert_eq!(status, 403, "{reply}");
    assert_eq!(reply["code"], "ACCESS_DENIED", "{reply}");

    // Nothing imported is public unless the configuration says so: `tools.get_sum` has no
    // rule, and is refused even to a caller with every scope.
    let (status, reply) = curl_post(
        &gateway.op_url("tools.get_sum"),
        Some(ANN_KEY),
        &json!({"a": 1, "b": 2}),
    );
    assert_eq!(status, 403, "{reply}");

    // The rate limit of `shop.teapot`: two calls, then 429.
    let statuses: Vec<u16> = (0..3)
        .map(|_| curl_post(&gateway.op_url("shop.teapot"), Some(ANN_KEY), &json!({})).0)
        .collect();
    assert_eq!(statuses[2], 429, "{statuses:?}");
    assert!(
        statuses[..2].iter().all(|status| *status != 429),
        "{statuses:?}"
    );
}

/// The official TypeScript SDK client through the MCP endpoint.
async fn typescript_client(gateway: &GatewayProcess) {
    // The official TypeScript SDK client over MCP: it lists the tools and calls one of
    // each MCP source; bob's key gets ACCESS_DENIED for a tool he has no scope for.
    let calls = json!([
        {"name": "tools.echo", "arguments": {"message": "from ts"}},
        {"name": "memo.notes_create", "arguments": {"title": "eggs"}},
        {"name": "shop.get_item", "arguments": {"item_id": 3}},
    ]);
    let report = support::ts_client(&gateway.mcp_url(), ANN_KEY, &calls).await;
    // The first page of `tools/list` (the client does not follow `nextCursor`).
    let tools: Vec<&str> = report["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|tool| tool["name"].as_str())
        .collect();
    assert!(
        tools.contains(&"memo.notes_create") && tools.contains(&"shop.get_item"),
        "{tools:?}"
    );
    for call in report["calls"].as_array().expect("calls") {
        assert!(call.get("error").is_none(), "{call}");
        assert_ne!(call["result"]["isError"], true, "{call}");
    }
    assert!(
        report["calls"][0].to_string().contains("from ts"),
        "{report}"
    );
    let report = support::ts_client(
        &gateway.mcp_url(),
        BOB_KEY,
        &json!([{"name": "tools.echo", "arguments": {"message": "x"}}]),
    )
    .await;
    let refused = &report["calls"][0];
    assert!(
        refused["result"]["isError"] == true || refused.get("error").is_some(),
        "{refused}"
    );
    assert!(refused.to_string().contains("ACCESS_DENIED"), "{refused}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_sources_one_surface() {
    let dir = TempDir::new("gateway-surface");
    let fastapi = opkit_testkit::peers::start_fastapi();
    let (notes, notes_task) = support::serve_notes(&dir).await;
    // The FastAPI document also as a file, imported a second time under its own namespace.
    let (_, document) = curl_get(&format!("{}/openapi.json", fastapi.base_url()), None);
    let file = dir.join("shop.json");
    std::fs::write(&file, document.to_string()).expect("the document is written");
    let config = format!(
        "{}\n[[sources]]\nnamespace = \"shopfile\"\nopenapi = \"{}\"\nbase_url = \"{}\"\n\n[[rules]]\nnamespace = \"shopfile\"\nscopes = [\"shop\"]\n",
        support::config(&fastapi.base_url(), &notes),
        file.display(),
        fastapi.base_url()
    );
    let gateway =
        tokio::task::spawn_blocking(move || GatewayProcess::start(&config, &support::env()))
            .await
            .expect("the gateway starts");

    one_document(&gateway);
    curl_reaches_every_source(&gateway);
    refusals_and_limits(&gateway);
    typescript_client(&gateway).await;

    drop(gateway);
    notes_task.abort();
}
