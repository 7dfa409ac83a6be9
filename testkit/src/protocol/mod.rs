//! The call protocol's test fixtures, shared by core's `protocol_*` tests and the adapters'
//! transport tests (Redis, WebSocket): a bus, raw taps on topics, bounded waits, drop
//! counters, a registry of test operations and a recorder of warnings; and the
//! [`conformance`] every transport must show.

pub mod conformance;

use futures::StreamExt;
use opkit::envelope::{McpContentBlock, McpMeta, mcp_envelope};
use opkit::prelude::*;
use opkit::protocol::{
    CallEvent, CallHandler, CallHandlerHandle, MemoryPubSub, PendingRequestMap, PubSub,
    Subscription,
};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The longest any single wait of a test may take before it fails (never reached when the
/// code works: tests assert outcomes, not durations).
pub const PATIENCE: Duration = Duration::from_secs(30);

/// An in-memory bus, as itself and as a `dyn PubSub`.
pub fn bus() -> (Arc<MemoryPubSub>, Arc<dyn PubSub>) {
    let memory = Arc::new(MemoryPubSub::new());
    let dynamic: Arc<dyn PubSub> = memory.clone();
    (memory, dynamic)
}

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
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
}

/// The next event of a raw subscription, decoded.
pub async fn next_event(subscription: &mut Subscription) -> CallEvent {
    let payload = within("waiting for an event", subscription.next())
        .await
        .expect("the subscription ended");
    CallEvent::from_slice(&payload).expect("a valid call event")
}

/// The next message of a raw subscription, as JSON.
pub async fn next_json(subscription: &mut Subscription) -> Value {
    let payload = within("waiting for a message", subscription.next())
        .await
        .expect("the subscription ended");
    serde_json::from_slice(&payload).expect("JSON")
}

/// `true` when a message is already waiting on the subscription.
pub fn has_message(subscription: &mut Subscription) -> bool {
    futures::FutureExt::now_or_never(subscription.next()).is_some()
}

/// Publishes `event` on `topic`, raw.
pub async fn publish(bus: &dyn PubSub, topic: &str, event: &CallEvent) {
    bus.publish(topic, event.to_bytes().unwrap()).await.unwrap();
}

/// Counts how often something was dropped.
#[derive(Clone, Default)]
pub struct Counter(Arc<AtomicUsize>);

impl Counter {
    /// The count.
    pub fn get(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }

    /// Counts one more.
    pub fn bump(&self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }

    /// A value whose drop bumps the counter.
    pub fn on_drop(&self) -> DropBump {
        DropBump(self.clone())
    }
}

/// Bumps its counter when dropped.
pub struct DropBump(Counter);

impl Drop for DropBump {
    fn drop(&mut self) {
        self.0.bump();
    }
}

/// What the test operations count.
#[derive(Clone, Default)]
pub struct Probes {
    /// Runs of `test.work`, by its input `n`.
    pub executions: Arc<Mutex<HashMap<u64, usize>>>,
    /// Handler runs of `math.add`, `test.fail`, `test.work` and `test.forever`.
    pub calls: Counter,
    /// Handler futures/streams of `test.forever` and `test.endless` that started.
    pub started: Counter,
    /// ... and were dropped.
    pub dropped: Counter,
}

impl Probes {
    /// How often `test.work` ran with input `n`.
    pub fn executions_of(&self, n: u64) -> usize {
        self.executions
            .lock()
            .expect("the executions lock")
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
/// - `test.fail` → `EXECUTION_ERROR` "boom"
/// - `test.panic` → panics
/// - `test.work` `{n}` → `n`, counted in `probes.executions`
/// - `test.forever` → never answers (counts `started` / `dropped`)
/// - `test.mcp_error` → an MCP envelope with `isError: true`
/// - `clock.count` `{to}` → items 1..=to (subscription)
/// - `clock.fail_after` `{after}` → `after` items, then `EXECUTION_ERROR`
/// - `clock.endless` → an endless stream: 5 items at once, then one every 100 ms (counts
///   `started` / `dropped`)
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
    registry
        .register(
            OperationSpec::new("test", "fail", OperationKind::Mutation),
            Handler::unary(move |_input, _ctx| {
                calls.bump();
                async move { Err(CallError::execution("boom").with_details(json!({"why": "test"}))) }
            }),
        )
        .unwrap();
    registry
        .register(
            OperationSpec::new("test", "panic", OperationKind::Query),
            Handler::unary(|_input, _ctx| async move {
                if true {
                    panic!("handler exploded");
                }
                Ok(Value::Null)
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
                *executions
                    .lock()
                    .expect("the executions lock")
                    .entry(n)
                    .or_default() += 1;
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
                let guard = dropped.on_drop();
                let started = started.clone();
                async move {
                    started.bump();
                    let _guard = guard;
                    std::future::pending::<()>().await;
                    Ok(Value::Null)
                }
            }),
        )
        .unwrap();
    registry
        .register(
            OperationSpec::new("test", "mcp_error", OperationKind::Query),
            Handler::unary(|_input, _ctx| async move {
                let envelope = mcp_envelope(
                    json!("tool failed"),
                    McpMeta {
                        is_error: true,
                        content: vec![McpContentBlock::text("tool failed")],
                        structured_content: None,
                        meta: None,
                    },
                );
                Ok(serde_json::to_value(envelope).unwrap())
            }),
        )
        .unwrap();
    registry
        .register(
            OperationSpec::new("clock", "count", OperationKind::Subscription).input_schema(object(
                json!({"to": {"type": "integer", "minimum": 0}}),
                &["to"],
            )),
            Handler::stream(|input, _ctx| {
                let to = input["to"].as_u64().unwrap_or(0);
                futures::stream::iter((1..=to).map(|n| Ok(json!(n))))
            }),
        )
        .unwrap();
    registry
        .register(
            OperationSpec::new("clock", "fail_after", OperationKind::Subscription),
            Handler::stream(|input, _ctx| {
                let after = input["after"].as_u64().unwrap_or(0);
                futures::stream::iter((1..=after).map(|n| Ok(json!(n)))).chain(
                    futures::stream::once(async { Err(CallError::execution("the clock broke")) }),
                )
            }),
        )
        .unwrap();
    let (started, dropped) = (probes.started.clone(), probes.dropped.clone());
    registry
        .register(
            OperationSpec::new("clock", "endless", OperationKind::Subscription),
            Handler::stream(move |_input, _ctx| {
                started.bump();
                let guard = dropped.on_drop();
                futures::stream::unfold((0u64, guard), |(n, guard)| async move {
                    // A few items at once, then one every 100 ms.
                    if n < 5 {
                        tokio::task::yield_now().await;
                    } else {
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                    Some((Ok(json!(n)), (n + 1, guard)))
                })
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

/// A handler serving [`registry`]`(probes)` on `bus`, and a caller on the same bus.
pub async fn served(
    probes: &Probes,
    bus: Arc<dyn PubSub>,
) -> (CallHandlerHandle, PendingRequestMap) {
    let handler = CallHandler::new(registry(probes), bus.clone())
        .spawn()
        .await
        .unwrap();
    let map = PendingRequestMap::connect(bus).await.unwrap();
    (handler, map)
}

/// Logs to the test output when `RUST_LOG` is set.
pub fn init_logs() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
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
    /// Every captured warning, in order.
    pub fn messages(&self) -> Vec<String> {
        self.0.lock().expect("the warnings lock").clone()
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
        (self.0)
            .0
            .lock()
            .expect("the warnings lock")
            .push(visitor.0);
    }
}
