//! The `trace_*` tests' shared steps: running a scenario with its spans recorded, the
//! incoming trace context they continue, and the echo operation they call. Needs the test
//! crate's `trace_support` module (core's span recorder).
#![allow(dead_code, missing_docs)]

use crate::trace_support::{JsonSpans, SharedBuffer};
use opkit::prelude::*;
use serde_json::Value;
use std::future::Future;
use tracing_subscriber::layer::SubscriberExt;

/// The `traceparent` the scenarios continue: trace `4bf92f35…`, parent span `00f067aa…`.
pub const INCOMING: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

/// Runs `scenario` on a current-thread runtime with a span recorder as the default
/// subscriber; returns the recorded spans, one JSON object each.
pub fn spans_of(scenario: impl Future<Output = ()>) -> Vec<Value> {
    let buffer = SharedBuffer::default();
    let subscriber = tracing_subscriber::registry().with(JsonSpans::new(buffer.clone(), "test"));
    let _guard = tracing::subscriber::set_default(subscriber);
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(scenario);
    buffer.spans()
}

/// A registry with `<namespace>.echo`, a query answering its input.
pub fn echo_registry(namespace: &str) -> OperationRegistry {
    let registry = OperationRegistry::new();
    registry
        .register(
            OperationSpec::new(namespace, "echo", OperationKind::Query),
            Handler::unary(|input, _ctx| async move { Ok(input) }),
        )
        .unwrap();
    registry
}
