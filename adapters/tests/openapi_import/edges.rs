//! The OpenAPI import's handlers against tiny hand-written HTTP servers on 127.0.0.1:
//! timeouts, deadlines, refused connections, a wrong SSE content type, and a raw event
//! stream exercising the SSE parsing rules end to end.

#![cfg(feature = "openapi")]

use futures::StreamExt;
use opkit::{ErrorCode, OperationContext, OperationRegistry};
use opkit_adapters::openapi::{OpenApiImporter, OpenApiOptions};
use serde_json::{Value, json};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

fn document() -> Value {
    json!({
        "openapi": "3.1.0",
        "paths": {
            "/slow": {"get": {"operationId": "slow", "responses": {"200": {"description": "ok", "content": {"application/json": {}}}}}},
            "/events": {"get": {"operationId": "events", "responses": {"200": {"description": "ok", "content": {"text/event-stream": {
                "itemSchema": {"type": "object", "properties": {"data": {"type": "string", "contentMediaType": "application/json", "contentSchema": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}}}}
            }}}}}}
        }
    })
}

fn registry(base: &str, timeout: Option<Duration>) -> OperationRegistry {
    let mut options = OpenApiOptions::new("edge").base_url(base);
    if let Some(timeout) = timeout {
        options = options.timeout(timeout);
    }
    let registry = OperationRegistry::new();
    OpenApiImporter::new(options)
        .import_value(document())
        .unwrap()
        .register_into(&registry)
        .unwrap();
    registry
}

/// A server that answers every connection with `response` (after reading the request head),
/// or never answers when `response` is `None`. Runs until the test's runtime ends.
async fn serve(response: Option<&'static [u8]>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        // Bounded: a test makes only a few connections.
        for _ in 0..16 {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let mut buffer = vec![0u8; 8192];
                let _ = socket.read(&mut buffer).await;
                match response {
                    Some(bytes) => {
                        let _ = socket.write_all(bytes).await;
                        let _ = socket.shutdown().await;
                    }
                    None => tokio::time::sleep(Duration::from_secs(30)).await,
                }
            });
        }
    });
    base
}

#[tokio::test]
async fn option_timeout_and_context_deadline_are_timeouts() {
    let base = serve(None).await;
    let with_option = registry(&base, Some(Duration::from_millis(200)));
    let error = with_option
        .execute("edge.slow", json!({}), &OperationContext::default())
        .await
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::Timeout, "{error:?}");

    let without_option = registry(&base, None);
    let ctx = OperationContext::default().with_timeout(Duration::from_millis(200));
    let error = without_option
        .execute("edge.slow", json!({}), &ctx)
        .await
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::Timeout, "{error:?}");
}

#[tokio::test]
async fn a_refused_connection_is_a_transport_error() {
    let port = TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let registry = registry(
        &format!("http://127.0.0.1:{port}"),
        Some(Duration::from_secs(5)),
    );
    let error = registry
        .execute("edge.slow", json!({}), &OperationContext::default())
        .await
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::TransportError, "{error:?}");
}

#[tokio::test]
async fn a_subscription_answered_without_event_stream_is_an_error() {
    let base = serve(Some(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}")).await;
    let registry = registry(&base, Some(Duration::from_secs(5)));
    let items: Vec<_> = registry
        .subscribe("edge.events", json!({}), &OperationContext::default())
        .await
        .unwrap()
        .collect()
        .await;
    assert_eq!(items.len(), 1);
    let error = items.into_iter().next().unwrap().unwrap_err();
    assert_eq!(error.code, ErrorCode::ExecutionError);
    assert!(
        error.message.contains("text/event-stream"),
        "{}",
        error.message
    );
}

#[tokio::test]
async fn a_raw_event_stream_is_parsed_by_the_whatwg_rules() {
    // BOM, CRLF/CR/LF endings, comments, multi-line data, an id-only block, a malformed
    // (non-JSON) frame, an event without data, and an unterminated final event.
    const STREAM: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-type: Text/Event-Stream; charset=utf-8\r\nconnection: close\r\n\r\n\
\xEF\xBB\xBF: hello\r\ndata: {\"n\":\r\ndata: 1}\r\n\r\n\
id: 7\n\n\
event: noise\rdata: not json\r\r\
event: empty\n\n\
data:{\"n\":2}\n\n\
data: {\"n\":3}";
    let base = serve(Some(STREAM)).await;
    let registry = registry(&base, Some(Duration::from_secs(5)));
    let items: Vec<_> = registry
        .subscribe("edge.events", json!({}), &OperationContext::default())
        .await
        .unwrap()
        .collect()
        .await;
    let data: Vec<Value> = items.into_iter().map(|item| item.unwrap().data).collect();
    assert_eq!(data, [json!({"n": 1}), json!({"n": 2})]);
}

/// A server that records the `x-api-key` of every request it gets, and answers `{"ok": true}`
/// at `/ok`, `302` to `/ok` at `/here`, and `302` to `elsewhere` at `/go`.
async fn redirecting(
    elsewhere: String,
) -> (
    String,
    std::sync::Arc<std::sync::Mutex<Vec<Option<String>>>>,
) {
    let keys = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = keys.clone();
    let record = move |headers: axum::http::HeaderMap| {
        let key = headers
            .get("x-api-key")
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned);
        seen.lock().unwrap().push(key);
    };
    let (ok, here, go) = (record.clone(), record.clone(), record);
    let router = axum::Router::new()
        .route(
            "/ok",
            axum::routing::get(move |headers: axum::http::HeaderMap| async move {
                ok(headers);
                axum::Json(json!({"ok": true}))
            }),
        )
        .route(
            "/here",
            axum::routing::get(move |headers: axum::http::HeaderMap| async move {
                here(headers);
                axum::response::Redirect::to("/ok")
            }),
        )
        .route(
            "/go",
            axum::routing::get(move |headers: axum::http::HeaderMap| async move {
                go(headers);
                axum::response::Redirect::to(&elsewhere)
            }),
        );
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, router).await });
    (base, keys)
}

#[tokio::test]
async fn redirects_are_followed_on_the_apis_origin_only() {
    let (other, other_keys) = redirecting(String::new()).await;
    let (base, keys) = redirecting(format!("{other}/ok")).await;
    let document = json!({
        "openapi": "3.1.0",
        "components": {"securitySchemes": {"key": {"type": "apiKey", "in": "header", "name": "X-API-Key"}}},
        "security": [{"key": []}],
        "paths": {
            "/here": {"get": {"operationId": "here", "responses": {"200": {"description": "ok", "content": {"application/json": {}}}}}},
            "/go": {"get": {"operationId": "go", "responses": {"200": {"description": "ok", "content": {"application/json": {}}}}}}
        }
    });
    let registry = OperationRegistry::new();
    OpenApiImporter::new(
        OpenApiOptions::new("redir")
            .base_url(&base)
            .auth(opkit_adapters::openapi::OpenApiAuth::new().api_key("the-key")),
    )
    .import_value(document)
    .unwrap()
    .register_into(&registry)
    .unwrap();
    let ctx = OperationContext::default();
    // On the API's own origin a redirect is followed, the key sent along.
    let envelope = registry
        .execute("redir.here", json!({}), &ctx)
        .await
        .unwrap();
    assert_eq!(envelope.data, json!({"ok": true}));
    let key = Some("the-key".to_owned());
    assert_eq!(*keys.lock().unwrap(), [key.clone(), key]);
    // To another origin it is the answer: the key goes nowhere else.
    let answered = registry.execute("redir.go", json!({}), &ctx).await;
    assert!(
        answered
            .as_ref()
            .map_or(true, |envelope| envelope.data != json!({"ok": true})),
        "{answered:?}"
    );
    assert!(
        other_keys.lock().unwrap().is_empty(),
        "the other origin was called"
    );
}
