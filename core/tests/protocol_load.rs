//! Load: 10,000 concurrent calls through `MemoryPubSub` (the real wire path: every event is
//! encoded to JSON bytes and decoded again), all answered correctly, none lost, none
//! duplicated.

mod protocol_support;

use opkit::protocol::{CallHandler, PendingRequestMap};
use opkit::{Handler, OperationContext, OperationKind, OperationRegistry, OperationSpec};
use protocol_support::{Counter, bus, eventually, within};
use serde_json::json;
use std::time::Duration;

const CALLS: u64 = 10_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_concurrent_calls() {
    let (_, bus) = bus();
    let runs = Counter::default();
    let registry = OperationRegistry::new();
    let counter = runs.clone();
    registry
        .register(
            OperationSpec::new("math", "square", OperationKind::Query)
                .input_schema(json!({
                    "type": "object",
                    "properties": {"n": {"type": "integer"}},
                    "required": ["n"]
                }))
                .output_schema(json!({"type": "integer"})),
            Handler::unary(move |input, _ctx| {
                counter.bump();
                async move {
                    let n = input["n"].as_u64().unwrap_or(0);
                    Ok(json!(n * n))
                }
            }),
        )
        .unwrap();
    // Two replicas share the load.
    let a = CallHandler::new(registry.clone(), bus.clone())
        .spawn()
        .await
        .unwrap();
    let b = CallHandler::new(registry, bus.clone())
        .spawn()
        .await
        .unwrap();
    let map = PendingRequestMap::connect(bus).await.unwrap();
    let ctx = OperationContext::default().with_timeout(Duration::from_secs(60));

    let calls: Vec<_> = (0..CALLS)
        .map(|n| {
            let (map, ctx) = (map.clone(), ctx.clone());
            tokio::spawn(async move { (n, map.call("math.square", json!({"n": n}), &ctx).await) })
        })
        .collect();
    let mut answered = 0;
    for call in calls {
        let (n, result) = within("a call", call).await.unwrap();
        let envelope = result.unwrap_or_else(|error| panic!("call {n} failed: {error}"));
        assert_eq!(
            envelope.data,
            json!(n * n),
            "call {n} got someone else's answer"
        );
        answered += 1;
    }
    assert_eq!(answered, CALLS);
    assert_eq!(
        runs.get() as u64,
        CALLS,
        "every request executed exactly once"
    );
    assert_eq!(map.pending_count(), 0);
    eventually("both replicas are idle", || {
        a.in_flight() + b.in_flight() == 0
    })
    .await;
}
