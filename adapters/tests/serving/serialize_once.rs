//! An `#[operation]` fn's data is serialized once on its way out: into the HTTP response's
//! bytes (RPC route) and into each SSE event's, without a `Value` in between; a middleware
//! that reads the result gets the envelope (the data serialized once, into that `Value`),
//! and one that does not costs no serialization.
#![cfg(feature = "http-server")]

use crate::serve_support::{parse_sse, serve};
use futures::Stream;
use opkit::middleware;
use opkit::prelude::*;
use opkit_adapters::http_server::HttpServer;
use serde::ser::{Serialize, SerializeStruct, Serializer};
use serde_json::{Value, json};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Times any `Counted` was serialized, and how many of those were into a `Value` (tests of
/// this file run one at a time: a lock).
static SERIALIZED: AtomicUsize = AtomicUsize::new(0);
static INTO_VALUE: AtomicUsize = AtomicUsize::new(0);
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Data whose every serialization is counted.
#[derive(schemars::JsonSchema)]
pub struct Counted {
    n: i64,
}

impl Serialize for Counted {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        SERIALIZED.fetch_add(1, Ordering::SeqCst);
        // serde_json's `Value` serializer (`serde_json::to_value`) is `serde_json::value::..`.
        if std::any::type_name::<S>().starts_with("serde_json::value") {
            INTO_VALUE.fetch_add(1, Ordering::SeqCst);
        }
        let mut out = serializer.serialize_struct("Counted", 1)?;
        out.serialize_field("n", &self.n)?;
        out.end()
    }
}

#[operation(namespace = "once")]
async fn one(n: i64) -> Counted {
    Counted { n }
}

#[operation(namespace = "once", http(method = "GET", path = "/once/{n}"))]
async fn fetched(n: i64) -> Counted {
    Counted { n }
}

#[operation(
    namespace = "once",
    http(method = "POST", path = "/once", status = 201, body = "envelope")
)]
async fn made(n: i64) -> Counted {
    Counted { n }
}

#[operation(namespace = "once", subscription)]
fn many(count: i64) -> impl Stream<Item = Counted> + Send + 'static {
    futures::stream::iter((0..count).map(|n| Counted { n }))
}

fn reset() {
    SERIALIZED.store(0, Ordering::SeqCst);
    INTO_VALUE.store(0, Ordering::SeqCst);
}

/// `(serializations, of which into a Value)`.
fn counts() -> (usize, usize) {
    (
        SERIALIZED.load(Ordering::SeqCst),
        INTO_VALUE.load(Ordering::SeqCst),
    )
}

fn registry() -> OperationRegistry {
    let registry = OperationRegistry::new();
    registry.register_typed::<one>().expect("registers");
    registry.register_typed::<many>().expect("registers");
    registry.register_typed::<fetched>().expect("registers");
    registry.register_typed::<made>().expect("registers");
    registry
}

async fn call(registry: OperationRegistry, path: &str, input: Value) -> (String, String) {
    let served = serve(HttpServer::new(registry).router()).await;
    let response = reqwest::Client::new()
        .post(served.url(path))
        .json(&input)
        .send()
        .await
        .expect("the server answers");
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    (content_type, response.text().await.expect("a body"))
}

#[tokio::test]
async fn the_rpc_route_writes_the_data_once_into_the_body() {
    let _one = ONE_AT_A_TIME.lock().await;
    reset();
    let (content_type, body) = call(registry(), "/ops/once.one", json!({"n": 7})).await;
    assert_eq!(content_type, "application/json");
    let envelope: Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(envelope["data"], json!({"n": 7}));
    assert_eq!(envelope["meta"]["source"], "local");
    assert_eq!(envelope["meta"]["operationId"], "once.one");
    assert!(
        body.starts_with(
            r#"{"data":{"n":7},"meta":{"source":"local","operationId":"once.one","timestamp":"#
        ),
        "{body}"
    );
    assert_eq!(counts(), (1, 0), "serialized once, into the body");
}

#[tokio::test]
async fn a_rest_route_writes_the_data_or_the_envelope_once_into_the_body() {
    let _one = ONE_AT_A_TIME.lock().await;
    let served = serve(HttpServer::new(registry()).router()).await;
    let client = reqwest::Client::new();
    reset();
    let response = client.get(served.url("/once/7")).send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "application/json");
    assert_eq!(response.text().await.unwrap(), r#"{"n":7}"#);
    assert_eq!(
        counts(),
        (1, 0),
        "the bare data, serialized once into the body"
    );
    reset();
    let response = client
        .post(served.url("/once"))
        .json(&json!({"n": 8}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 201);
    let body = response.text().await.unwrap();
    assert!(
        body.starts_with(
            r#"{"data":{"n":8},"meta":{"source":"local","operationId":"once.made","timestamp":"#
        ),
        "{body}"
    );
    assert_eq!(
        counts(),
        (1, 0),
        "the envelope, its data serialized once into the body"
    );
}

#[tokio::test]
async fn each_event_of_a_subscription_is_written_once() {
    let _one = ONE_AT_A_TIME.lock().await;
    reset();
    let (content_type, body) = call(registry(), "/ops/once.many", json!({"count": 3})).await;
    assert!(
        content_type.starts_with("text/event-stream"),
        "{content_type}"
    );
    let events = parse_sse(&body);
    let items: Vec<Value> = events
        .iter()
        .filter(|event| event.id.is_some())
        .map(|event| serde_json::from_str::<Value>(&event.data).expect("JSON")["data"].clone())
        .collect();
    assert_eq!(items, [json!({"n": 0}), json!({"n": 1}), json!({"n": 2})]);
    assert_eq!(
        counts(),
        (3, 0),
        "each item serialized once, into its event"
    );
}

#[tokio::test]
async fn a_middleware_that_reads_the_result_makes_the_one_value() {
    let _one = ONE_AT_A_TIME.lock().await;
    reset();
    let reading = middleware::from_fn(|call, next| async move {
        let outcome = next.run(call).await?;
        let mut reply = outcome.into_reply()?;
        assert_eq!(reply.envelope()?.data, json!({"n": 5}));
        Ok(middleware::Outcome::Unary(reply))
    });
    let layered_reading = registry().with_middleware(reading);
    let (_, body) = call(layered_reading, "/ops/once.one", json!({"n": 5})).await;
    assert!(body.starts_with(r#"{"data":{"n":5},"#), "{body}");
    assert_eq!(
        counts(),
        (1, 1),
        "serialized once, into the Value the middleware read"
    );

    reset();
    let passing = middleware::from_fn(|call, next| async move { next.run(call).await });
    let layered = registry().with_middleware(passing);
    let (_, body) = call(layered, "/ops/once.one", json!({"n": 6})).await;
    assert!(body.starts_with(r#"{"data":{"n":6},"#), "{body}");
    assert_eq!(
        counts(),
        (1, 0),
        "a middleware that does not read adds no Value"
    );
}
