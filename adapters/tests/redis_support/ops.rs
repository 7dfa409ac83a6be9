//! Test operations and helpers shared by the `redis_*` and `websocket_*` transport tests
//! (the WebSocket tests include this file with `#[path]`).
#![allow(dead_code, missing_docs)]

use futures::StreamExt;
use opkit::prelude::*;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The longest any single wait of a test may take before the test fails (never reached when
/// the code works: tests assert outcomes, not durations).
pub const PATIENCE: Duration = Duration::from_secs(30);

/// Awaits `future`, failing the test if it takes longer than [`PATIENCE`].
pub async fn within<T>(what: &str, future: impl Future<Output = T>) -> T {
    match tokio::time::timeout(PATIENCE, future).await {
        Ok(value) => value,
        Err(_) => panic!("{what}: nothing happened within {PATIENCE:?}"),
    }
}

/// Polls `condition` until it holds (bounded: fails the test after [`PATIENCE`]).
pub async fn eventually(what: &str, condition: impl Fn() -> bool) {
    within(what, async {
        while !condition() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
}

/// Logs to the test output when `RUST_LOG` is set.
pub fn init_logs() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
}

#[derive(Clone, Default)]
pub struct Counter(Arc<AtomicUsize>);

impl Counter {
    pub fn get(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }

    pub fn bump(&self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

struct DropBump(Counter);

impl Drop for DropBump {
    fn drop(&mut self) {
        self.0.bump();
    }
}

/// What a replica's operations count.
#[derive(Clone, Default)]
pub struct Probes {
    /// Runs of `test.work`, by its input `n`.
    pub executions: Arc<Mutex<HashMap<u64, usize>>>,
    /// Runs of every operation.
    pub calls: Counter,
    /// `test.forever` handlers that started ...
    pub started: Counter,
    /// ... and were dropped (cancelled).
    pub dropped: Counter,
}

impl Probes {
    pub fn executions_of(&self, n: u64) -> usize {
        self.executions
            .lock()
            .unwrap()
            .get(&n)
            .copied()
            .unwrap_or(0)
    }
}

fn object(properties: Value, required: &[&str]) -> Value {
    json!({"type": "object", "properties": properties, "required": required})
}

/// A registry of test operations:
/// - `math.add` `{a, b}` → `{sum}` (query)
/// - `test.work` `{n}` → `n`, counted in `probes.executions`
/// - `test.forever` → never answers (counts `started` / `dropped`)
/// - `clock.count` `{to}` → items 1..=to (subscription)
/// - `admin.secret` → `"s3cret"`, only for identities with the scope `admin:read`
pub fn registry(probes: &Probes) -> OperationRegistry {
    let registry = OperationRegistry::new();
    let calls = probes.calls.clone();
    registry
        .register(
            OperationSpec::new("math", "add", OperationKind::Query)
                .input_schema(object(
                    json!({"a": {"type": "integer"}, "b": {"type": "integer"}}),
                    &["a", "b"],
                ))
                .output_schema(object(json!({"sum": {"type": "integer"}}), &["sum"])),
            Handler::unary(move |input, _ctx| {
                calls.bump();
                async move {
                    let sum = input["a"].as_i64().unwrap_or(0) + input["b"].as_i64().unwrap_or(0);
                    Ok(json!({"sum": sum}))
                }
            }),
        )
        .unwrap();
    let calls = probes.calls.clone();
    let executions = probes.executions.clone();
    registry
        .register(
            OperationSpec::new("test", "work", OperationKind::Mutation).input_schema(object(
                json!({"n": {"type": "integer", "minimum": 0}}),
                &["n"],
            )),
            Handler::unary(move |input, _ctx| {
                calls.bump();
                let n = input["n"].as_u64().unwrap_or(u64::MAX);
                *executions.lock().unwrap().entry(n).or_default() += 1;
                async move { Ok(json!(n)) }
            }),
        )
        .unwrap();
    let (calls, started, dropped) = (
        probes.calls.clone(),
        probes.started.clone(),
        probes.dropped.clone(),
    );
    registry
        .register(
            OperationSpec::new("test", "forever", OperationKind::Query),
            Handler::unary(move |_input, _ctx| {
                calls.bump();
                started.bump();
                let guard = DropBump(dropped.clone());
                async move {
                    let _guard = guard;
                    futures::future::pending::<()>().await;
                    Ok(Value::Null)
                }
            }),
        )
        .unwrap();
    registry
        .register(
            OperationSpec::new("clock", "count", OperationKind::Subscription)
                .input_schema(object(json!({"to": {"type": "integer"}}), &["to"])),
            Handler::stream(|input, _ctx| {
                let to = input["to"].as_u64().unwrap_or(0);
                futures::stream::iter((1..=to).map(|n| Ok(json!(n))))
            }),
        )
        .unwrap();
    registry
        .register(
            OperationSpec::new("admin", "secret", OperationKind::Query)
                .access(AccessRule::scopes(["admin:read"])),
            Handler::unary(|_input, _ctx| async move { Ok(json!("s3cret")) }),
        )
        .unwrap();
    registry
}

/// Collects the items of a remote subscription.
pub async fn collect_items(stream: opkit::EnvelopeStream) -> Vec<Result<Value, CallError>> {
    within(
        "collecting a subscription",
        stream
            .map(|item| item.map(|envelope| envelope.data))
            .collect::<Vec<_>>(),
    )
    .await
}

/// Warnings logged by the transports and the protocol, captured for one test.
#[derive(Clone, Default)]
pub struct CapturedWarnings(Arc<Mutex<Vec<String>>>);

impl CapturedWarnings {
    pub fn messages(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }

    /// `true` when a captured warning contains `text`.
    pub fn contains(&self, text: &str) -> bool {
        self.messages().iter().any(|message| message.contains(text))
    }

    /// A subscriber that records `WARN` and `ERROR` events here (install it with
    /// `tracing::subscriber::set_default` on a current-thread runtime).
    pub fn subscriber(&self) -> impl tracing::Subscriber + Send + Sync {
        use tracing_subscriber::layer::SubscriberExt;
        tracing_subscriber::registry().with(CaptureLayer(self.clone()))
    }
}

struct CaptureLayer(CapturedWarnings);

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for CaptureLayer {
    fn on_event(
        &self,
        event: &tracing::Event<'_>,
        _ctx: tracing_subscriber::layer::Context<'_, S>,
    ) {
        if *event.metadata().level() > tracing::Level::WARN {
            return;
        }
        struct Visitor(String);
        impl tracing::field::Visit for Visitor {
            fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
                use std::fmt::Write;
                let _ = write!(self.0, "{}={:?} ", field.name(), value);
            }
        }
        let mut visitor = Visitor(String::new());
        event.record(&mut visitor);
        (self.0).0.lock().unwrap().push(visitor.0);
    }
}
