//! No leaks: after 10,000 mixed calls (successes, errors, timeouts, aborts, subscriptions run
//! to the end or dropped early) no pending entry and no running request is left, and every
//! abandoned handler future or stream was dropped.

mod protocol_support;

use futures::StreamExt;
use opkit::ErrorCode;
use opkit::OperationContext;
use opkit::protocol::PendingRequestMap;
use protocol_support::{Probes, bus, eventually, served};
use serde_json::json;
use std::time::Duration;

const CALLS: usize = 10_000;

#[derive(Debug, PartialEq, Eq, Hash, Clone, Copy, PartialOrd, Ord)]
enum Outcome {
    Success,
    ExecutionError,
    ValidationError,
    Timeout,
    AbortedByDrop,
    SubscriptionCompleted,
    SubscriptionDropped,
}

const KINDS: [Outcome; 7] = [
    Outcome::Success,
    Outcome::ExecutionError,
    Outcome::ValidationError,
    Outcome::Timeout,
    Outcome::AbortedByDrop,
    Outcome::SubscriptionCompleted,
    Outcome::SubscriptionDropped,
];

async fn run(map: PendingRequestMap, kind: Outcome, i: usize) -> Outcome {
    let ctx = OperationContext::default().with_timeout(Duration::from_secs(60));
    match kind {
        Outcome::Success => {
            let envelope = map
                .call("math.add", json!({"a": i, "b": 1}), &ctx)
                .await
                .unwrap();
            assert_eq!(envelope.data, json!({"sum": i + 1}));
        }
        Outcome::ExecutionError => {
            let error = map.call("test.fail", json!({}), &ctx).await.unwrap_err();
            assert_eq!(error.code, ErrorCode::ExecutionError);
        }
        Outcome::ValidationError => {
            let error = map
                .call("math.add", json!({"a": "x"}), &ctx)
                .await
                .unwrap_err();
            assert_eq!(error.code, ErrorCode::ValidationError);
        }
        Outcome::Timeout => {
            let short = OperationContext::default().with_timeout(Duration::from_millis(30));
            let error = map
                .call("test.forever", json!({}), &short)
                .await
                .unwrap_err();
            assert_eq!(error.code, ErrorCode::Timeout);
        }
        Outcome::AbortedByDrop => {
            // The call future is dropped when the outer timeout fires.
            let call = map.call("test.forever", json!({}), &ctx);
            assert!(
                tokio::time::timeout(Duration::from_millis(30), call)
                    .await
                    .is_err()
            );
        }
        Outcome::SubscriptionCompleted => {
            let items: Vec<_> = map
                .subscribe("clock.count", json!({"to": 3}), &ctx)
                .await
                .unwrap()
                .collect()
                .await;
            assert_eq!(items.len(), 3);
            assert!(items.iter().all(Result::is_ok));
        }
        Outcome::SubscriptionDropped => {
            let mut stream = map
                .subscribe("clock.endless", json!({}), &ctx)
                .await
                .unwrap();
            for _ in 0..2 {
                stream.next().await.unwrap().unwrap();
            }
            drop(stream);
        }
    }
    kind
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_mixed_calls_leave_nothing_behind() {
    let (_, bus) = bus();
    let probes = Probes::default();
    let (handler, map) = served(&probes, bus).await;

    let tasks: Vec<_> = (0..CALLS)
        .map(|i| tokio::spawn(run(map.clone(), KINDS[i % KINDS.len()], i)))
        .collect();
    let mut counts = std::collections::BTreeMap::new();
    for task in tasks {
        *counts.entry(task.await.unwrap()).or_insert(0usize) += 1;
    }
    for kind in KINDS {
        let expected = CALLS / KINDS.len() + usize::from((kind as usize) < CALLS % KINDS.len());
        assert_eq!(counts.get(&kind), Some(&expected), "{kind:?}");
    }

    assert_eq!(map.pending_count(), 0, "no pending entry is left");
    // Aborts reach the handler asynchronously; every abandoned request ends there too.
    eventually("the handler is idle", || handler.in_flight() == 0).await;
    let abandoned = counts[&Outcome::Timeout]
        + counts[&Outcome::AbortedByDrop]
        + counts[&Outcome::SubscriptionDropped];
    eventually(
        "every abandoned handler future or stream was dropped",
        || probes.dropped.get() == probes.started.get(),
    )
    .await;
    // Most abandoned requests reached their handler (some may be aborted before they ran).
    assert!(probes.started.get() <= abandoned);
    assert_eq!(map.pending_count(), 0);
}
