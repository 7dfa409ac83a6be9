//! Without a `tracing` subscriber, in-process calls leave the context's trace as it is (in
//! a test binary of its own: a subscriber set in another test's thread changes the
//! callsites' cached interest for the whole process).

use opkit::prelude::*;
use opkit::trace::TraceContext;
use serde_json::json;

const INCOMING: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// A registry with `handler` as the query `t.echo`.
fn with_echo(handler: Handler) -> OperationRegistry {
    let registry = OperationRegistry::new();
    registry
        .register(
            OperationSpec::new("t", "echo", OperationKind::Query),
            handler,
        )
        .unwrap();
    registry
}

#[test]
fn without_a_subscriber_the_context_trace_passes_through_unchanged() {
    runtime().block_on(async {
        let registry = with_echo(Handler::unary(|_input, ctx: OperationContext| async move {
            Ok(json!(ctx.trace().map(TraceContext::traceparent)))
        }));
        let ctx = OperationContext::new();
        let none = registry.execute("t.echo", json!({}), &ctx).await.unwrap();
        assert_eq!(none.data, serde_json::Value::Null);
        let traced = ctx.with_trace(TraceContext::parse(INCOMING, None).unwrap());
        let same = registry
            .execute("t.echo", json!({}), &traced)
            .await
            .unwrap();
        assert_eq!(same.data, INCOMING);
    });
}

/// Over the call protocol, with no subscriber: a handler that may read its context gets the
/// caller's trace (the request's `traceparent`), and the edge's facts; one that reads none
/// (an `#[operation]` fn without a context) is served without them, and answers the same.
#[test]
fn without_a_subscriber_a_served_handler_that_reads_its_context_gets_the_callers_trace() {
    use opkit::protocol::{CallHandler, CallProtocolRequest, MemoryPubSub, PendingRequestMap};
    use std::sync::Arc;

    #[operation(namespace = "t")]
    async fn add(a: i64, b: i64) -> i64 {
        a + b
    }

    runtime().block_on(async {
        let registry = with_echo(Handler::unary(|_input, ctx: OperationContext| async move {
            let caller = ctx
                .edge()
                .and_then(|edge| edge.fact::<CallProtocolRequest>())
                .and_then(|request| request.caller.clone());
            Ok(json!({
                "traceparent": ctx.trace().map(TraceContext::traceparent),
                "caller": caller,
            }))
        }));
        registry.register_operation(add).unwrap();
        let bus = Arc::new(MemoryPubSub::new());
        let _handler = CallHandler::new(registry, bus.clone())
            .spawn()
            .await
            .unwrap();
        let map = PendingRequestMap::connect(bus).await.unwrap();
        let traced =
            OperationContext::new().with_trace(TraceContext::parse(INCOMING, None).unwrap());
        let echoed = map.call("t.echo", json!({}), &traced).await.unwrap();
        assert_eq!(echoed.data["traceparent"], INCOMING);
        assert_eq!(echoed.data["caller"], map.caller_id());
        let sum = map
            .call("t.add", json!({"a": 2, "b": 3}), &traced)
            .await
            .unwrap();
        assert_eq!(sum.data, json!(5));
    });
}
