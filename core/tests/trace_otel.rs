//! The `opentelemetry` feature: with a `tracing-opentelemetry` layer, call spans are
//! exported as one OpenTelemetry trace, parented under the incoming `traceparent`, and the
//! trace context opkit sends on names the exported spans.
#![cfg(feature = "opentelemetry")]

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};
use opkit::prelude::*;
use opkit::protocol::{CallHandler, MemoryPubSub, PendingRequestMap};
use opkit::trace::TraceContext;
use serde_json::json;
use std::sync::Arc;
use tracing_subscriber::layer::SubscriberExt;

const INCOMING: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

#[test]
fn call_spans_form_one_opentelemetry_trace() {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let subscriber = tracing_subscriber::registry()
        .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("test")));
    let _guard = tracing::subscriber::set_default(subscriber);
    let sent = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            let bus = Arc::new(MemoryPubSub::new());
            let served = OperationRegistry::new();
            served
                .register(
                    OperationSpec::new("b", "inner", OperationKind::Query),
                    Handler::unary(|_input, ctx: OperationContext| async move {
                        Ok(json!(ctx.trace().map(TraceContext::traceparent)))
                    }),
                )
                .unwrap();
            let _handler = CallHandler::new(served, bus.clone()).spawn().await.unwrap();
            let map = PendingRequestMap::connect(bus).await.unwrap();
            let ctx =
                OperationContext::new().with_trace(TraceContext::parse(INCOMING, None).unwrap());
            map.call("b.inner", json!({}), &ctx).await.unwrap().data
        });
    drop(_guard);
    let _ = provider.force_flush();
    let spans = exporter.get_finished_spans().unwrap();
    let named = |path: &str| {
        spans
            .iter()
            .find(|span| {
                span.attributes
                    .iter()
                    .any(|kv| kv.key.as_str() == "opkit.path" && kv.value.as_str() == path)
            })
            .unwrap_or_else(|| panic!("a {path} span in {spans:#?}"))
    };
    let client = named("pending");
    let server = named("call_handler");
    let trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
    for span in [client, server] {
        assert_eq!(span.span_context.trace_id().to_string(), trace_id);
    }
    assert_eq!(client.parent_span_id.to_string(), "00f067aa0ba902b7");
    assert_eq!(server.parent_span_id, client.span_context.span_id());
    // A served call has one span, the server's, and the handler's context names it.
    let expected = format!("00-{trace_id}-{}-01", server.span_context.span_id());
    assert_eq!(sent, expected);
}
