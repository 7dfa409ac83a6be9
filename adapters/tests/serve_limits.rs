//! The HTTP server's bounds on request bodies, at their defaults: size (`413` naming the
//! limit) and JSON nesting (`400` from the parser or from the registry's depth check).
#![cfg(feature = "http-server")]

mod serve_support;

use opkit::limits::MAX_INPUT_DEPTH;
use opkit::prelude::*;
use opkit_adapters::http_server::{DEFAULT_BODY_LIMIT, HttpServer};
use serde_json::{Value, json};
use serve_support::{Served, serve};

async fn start() -> Served {
    let registry = OperationRegistry::new();
    registry
        .register(
            OperationSpec::new("echo", "any", OperationKind::Mutation).input_schema(json!(true)),
            Handler::unary(|input, _ctx| async move {
                Ok(json!(
                    serde_json::to_string(&input).map_or(0, |text| text.len())
                ))
            }),
        )
        .unwrap();
    serve(HttpServer::new(registry).router()).await
}

async fn post(served: &Served, body: String) -> (u16, Value) {
    let response = reqwest::Client::new()
        .post(served.url("/ops/echo.any"))
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.expect("a JSON body"))
}

/// A JSON string literal of exactly `len` bytes.
fn string_of_len(len: usize) -> String {
    format!("\"{}\"", "x".repeat(len - 2))
}

#[tokio::test]
async fn bodies_past_the_default_limit_get_413_naming_it() {
    assert_eq!(DEFAULT_BODY_LIMIT, 1024 * 1024);
    let served = start().await;
    let (status, envelope) = post(&served, string_of_len(DEFAULT_BODY_LIMIT)).await;
    assert_eq!(status, 200, "{envelope}");
    assert_eq!(envelope["data"], DEFAULT_BODY_LIMIT);

    let (status, error) = post(&served, string_of_len(DEFAULT_BODY_LIMIT + 1)).await;
    assert_eq!(status, 413, "{error}");
    assert_eq!(error["code"], "VALIDATION_ERROR");
    assert!(
        error["message"].as_str().is_some_and(
            |message| message.contains(&format!("limit of {DEFAULT_BODY_LIMIT} bytes"))
        ),
        "{error}"
    );
    assert_eq!(
        error["details"],
        json!({"limit": "bodyLimit", "max": DEFAULT_BODY_LIMIT})
    );
}

fn nested_text(depth: usize) -> String {
    format!("{}0{}", "[".repeat(depth), "]".repeat(depth))
}

#[tokio::test]
async fn deeply_nested_bodies_are_validation_errors() {
    let served = start().await;
    let (status, envelope) = post(&served, nested_text(MAX_INPUT_DEPTH)).await;
    assert_eq!(status, 200, "{envelope}");

    // Past the registry's limit, within the parser's: the registry's violation.
    let (status, error) = post(&served, nested_text(MAX_INPUT_DEPTH + 1)).await;
    assert_eq!(
        (status, error["code"].as_str()),
        (400, Some("VALIDATION_ERROR"))
    );
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("MAX_INPUT_DEPTH"),
        "{error}"
    );
    assert_eq!(error["details"][0]["path"], "/0".repeat(MAX_INPUT_DEPTH));

    // Past the parser's limit (127 levels).
    let (status, error) = post(&served, nested_text(100_000)).await;
    assert_eq!(
        (status, error["code"].as_str()),
        (400, Some("VALIDATION_ERROR"))
    );
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("recursion limit"),
        "{error}"
    );
}
