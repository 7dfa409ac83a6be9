//! A span per call on every in-process and call-protocol path, linked into one trace:
//! `execute` → a nested call through a `PendingRequestMap` → the `CallHandler` serving it →
//! its `execute`, plus typed calls, subscriptions and the `call.requested` trace fields.

use futures::StreamExt;
use opkit::prelude::*;
use opkit::protocol::{CallEvent, CallHandler, CallRequested, MemoryPubSub, PendingRequestMap};
use opkit::trace::TraceContext;
use opkit_testkit::trace::{JsonSpans, SharedBuffer, assert_parent, find};
use serde_json::json;
use std::sync::Arc;
use tracing_subscriber::layer::SubscriberExt;

const INCOMING: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

fn collect() -> (SharedBuffer, tracing::subscriber::DefaultGuard) {
    let buffer = SharedBuffer::default();
    let subscriber = tracing_subscriber::registry().with(JsonSpans::new(buffer.clone(), "test"));
    (buffer, tracing::subscriber::set_default(subscriber))
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Adds one.
#[operation(namespace = "typed")]
async fn incr(n: i64) -> i64 {
    n + 1
}

#[test]
fn a_nested_remote_call_forms_one_trace() {
    let (buffer, _guard) = collect();
    runtime().block_on(async {
        let bus = Arc::new(MemoryPubSub::new());
        let served = OperationRegistry::new();
        served
            .register(
                OperationSpec::new("b", "inner", OperationKind::Query),
                Handler::unary(|_input, ctx: OperationContext| async move {
                    // The handler runs with its span's context.
                    assert!(ctx.trace().is_some());
                    Ok(json!(1))
                }),
            )
            .unwrap();
        let _handler = CallHandler::new(served, bus.clone()).spawn().await.unwrap();
        let map = PendingRequestMap::connect(bus).await.unwrap();
        let registry = OperationRegistry::new();
        registry
            .register(
                OperationSpec::new("a", "outer", OperationKind::Query),
                Handler::unary(move |_input, ctx: OperationContext| {
                    let map = map.clone();
                    async move {
                        map.call("b.inner", json!({}), &ctx.child())
                            .await
                            .map(|e| e.data)
                    }
                }),
            )
            .unwrap();
        let ctx =
            OperationContext::new().with_trace(TraceContext::parse(INCOMING, Some("k=v")).unwrap());
        let envelope = registry.execute("a.outer", json!({}), &ctx).await.unwrap();
        assert_eq!(envelope.data, 1);
    });
    let spans = buffer.spans();
    let outer = find(&spans, "execute", "a.outer");
    let client = find(&spans, "pending", "b.inner");
    let server = find(&spans, "call_handler", "b.inner");
    assert_eq!(outer["trace_id"], "4bf92f3577b34da6a3ce929d0e0e4736");
    assert_eq!(outer["parent_span_id"], "00f067aa0ba902b7");
    assert_parent(client, outer);
    assert_parent(server, client);
    // A served call has one span, the server's: the front door opens no second one.
    assert!(
        spans
            .iter()
            .all(|span| !(span["opkit.path"] == "execute" && span["rpc.method"] == "b.inner")),
        "{spans:#?}"
    );
    for span in [outer, client, server] {
        assert_eq!(span["rpc.system"], "opkit");
        assert_eq!(span["opkit.outcome"], "ok");
        assert!(span["opkit.duration_ms"].as_f64().unwrap() >= 0.0);
    }
    assert_eq!(client["otel.kind"], "client");
    assert_eq!(server["otel.kind"], "server");
    assert_eq!(server["opkit.kind"], "QUERY");
    assert_eq!(server["opkit.request_id"], client["opkit.request_id"]);
}

#[test]
fn errors_typed_calls_and_subscriptions_have_spans() {
    let (buffer, _guard) = collect();
    runtime().block_on(async {
        let registry = OperationRegistry::new();
        registry
            .register(
                OperationSpec::new("s", "count", OperationKind::Subscription),
                Handler::stream(|_input, _ctx| futures::stream::iter([Ok(json!(1)), Ok(json!(2))])),
            )
            .unwrap();
        let ctx = OperationContext::new();
        let missing = registry
            .execute("no.such", json!({}), &ctx)
            .await
            .unwrap_err();
        assert_eq!(missing.code, ErrorCode::OperationNotFound);
        let items: Vec<_> = registry
            .subscribe("s.count", json!({}), &ctx)
            .await
            .unwrap()
            .collect()
            .await;
        assert_eq!(items.len(), 2);
        assert_eq!(incr::call(&ctx, 1).await.unwrap().data, 2);
    });
    let spans = buffer.spans();
    let missing = find(&spans, "execute", "no.such");
    assert_eq!(missing["opkit.outcome"], "error");
    assert_eq!(missing["error.type"], "OPERATION_NOT_FOUND");
    assert_eq!(missing["otel.status_code"], "ERROR");
    // A call that arrives without a trace context starts a trace of its own.
    assert!(missing.get("parent_span_id").is_none());
    let subscription = find(&spans, "subscribe", "s.count");
    assert_eq!(subscription["opkit.outcome"], "ok");
    let typed = find(&spans, "typed", "typed.incr");
    assert_eq!(typed["opkit.kind"], "QUERY");
    assert_ne!(typed["trace_id"], missing["trace_id"]);
}

#[test]
fn call_requested_carries_trace_context_as_optional_fields() {
    let trace = TraceContext::parse(INCOMING, Some("k=v")).unwrap();
    let event = CallEvent::Requested(
        CallRequested::new("c:1", "a.b", json!({})).with_trace_context(Some(&trace)),
    );
    let wire = event.to_value().unwrap();
    assert_eq!(wire["traceparent"], INCOMING);
    assert_eq!(wire["tracestate"], "k=v");
    let back = CallEvent::from_slice(&event.to_bytes().unwrap()).unwrap();
    assert_eq!(back, event);
    // Absent: omitted (the wire JSON old peers know).
    let plain = CallEvent::Requested(CallRequested::new("c:1", "a.b", json!({})));
    assert!(plain.to_value().unwrap().get("traceparent").is_none());
    // Bad values from a peer are ignored, never an error.
    let odd = br#"{"type":"call.requested","requestId":"c:1","operationId":"a.b","input":{},"traceparent":7,"tracestate":["x"]}"#;
    let CallEvent::Requested(odd) = CallEvent::from_slice(odd).unwrap() else {
        panic!()
    };
    assert_eq!(odd.traceparent, None);
    let junk = br#"{"type":"call.requested","requestId":"c:1","operationId":"a.b","input":{},"traceparent":"junk"}"#;
    let CallEvent::Requested(junk) = CallEvent::from_slice(junk).unwrap() else {
        panic!()
    };
    assert_eq!(junk.trace_context(), None);
}
