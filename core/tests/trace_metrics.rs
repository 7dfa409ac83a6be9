//! The `metrics` feature: calls, errors by code, in-flight calls and durations per
//! operation, read back through `metrics-util`'s debugging recorder.
#![cfg(feature = "metrics")]

use metrics_util::debugging::{DebugValue, DebuggingRecorder};
use opkit::prelude::*;
use opkit::trace::metrics::{CALL_DURATION_SECONDS, CALLS_IN_FLIGHT, CALLS_TOTAL};
use serde_json::json;

#[test]
fn calls_are_counted_timed_and_tracked_in_flight() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    metrics::with_local_recorder(&recorder, || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(async {
                let registry = OperationRegistry::new();
                registry
                    .register(
                        OperationSpec::new("m", "ok", OperationKind::Query),
                        Handler::unary(|_input, _ctx| async { Ok(json!(1)) }),
                    )
                    .unwrap();
                let ctx = OperationContext::new();
                registry.execute("m.ok", json!({}), &ctx).await.unwrap();
                registry.execute("m.ok", json!({}), &ctx).await.unwrap();
                registry
                    .execute("m.nope", json!({}), &ctx)
                    .await
                    .unwrap_err();
            });
    });
    let snapshot = snapshotter.snapshot().into_vec();
    let find = |name: &str, labels: &[(&str, &str)]| {
        snapshot
            .iter()
            .find(|(key, ..)| {
                let key = key.key();
                key.name() == name
                    && labels.iter().all(|(k, v)| {
                        key.labels()
                            .any(|label| label.key() == *k && label.value() == *v)
                    })
            })
            .map(|(_, _, _, value)| value)
    };
    let ok = [
        ("operation", "m.ok"),
        ("kind", "internal"),
        ("outcome", "ok"),
    ];
    assert_eq!(find(CALLS_TOTAL, &ok), Some(&DebugValue::Counter(2)));
    let missing = [
        ("operation", "m.nope"),
        ("outcome", "error"),
        ("code", "OPERATION_NOT_FOUND"),
    ];
    assert_eq!(find(CALLS_TOTAL, &missing), Some(&DebugValue::Counter(1)));
    match find(CALL_DURATION_SECONDS, &[("operation", "m.ok")]) {
        Some(DebugValue::Histogram(samples)) => assert_eq!(samples.len(), 2),
        other => panic!("expected a histogram, found {other:?}"),
    }
    match find(CALLS_IN_FLIGHT, &[("operation", "m.ok")]) {
        Some(DebugValue::Gauge(value)) => assert_eq!(value.into_inner(), 0.0),
        other => panic!("expected a gauge, found {other:?}"),
    }
}
