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

#[test]
fn without_a_subscriber_the_context_trace_passes_through_unchanged() {
    runtime().block_on(async {
        let registry = OperationRegistry::new();
        registry
            .register(
                OperationSpec::new("t", "echo", OperationKind::Query),
                Handler::unary(|_input, ctx: OperationContext| async move {
                    Ok(json!(ctx.trace().map(TraceContext::traceparent)))
                }),
            )
            .unwrap();
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
