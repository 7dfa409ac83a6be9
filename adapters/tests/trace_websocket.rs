//! Trace context over the WebSocket transport: a caller spoke's client span parents the
//! serving spoke's call-handler span, through the hub (also when the hub stamps the
//! caller's identity on the request, which rewrites it).
#![cfg(feature = "websocket")]

#[path = "../../core/tests/trace_support/mod.rs"]
mod trace_support;

use opkit::prelude::*;
use opkit::protocol::{CallHandler, PendingRequestMap};
use opkit::trace::TraceContext;
use opkit_adapters::websocket::{SpokeGrant, StaticTokens, WsHub, WsSpoke};
use serde_json::json;
use std::sync::Arc;
use trace_support::{JsonSpans, SharedBuffer, assert_parent, find};
use tracing_subscriber::layer::SubscriberExt;

const INCOMING: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

#[test]
fn a_call_through_the_hub_keeps_its_trace() {
    let buffer = SharedBuffer::default();
    let subscriber = tracing_subscriber::registry().with(JsonSpans::new(buffer.clone(), "test"));
    let _guard = tracing::subscriber::set_default(subscriber);
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            let tokens = StaticTokens::new()
                .with_token("serve-token", SpokeGrant::new("server"))
                .with_token(
                    "call-token",
                    SpokeGrant::new("caller").with_identity(Identity::new("kiosk")),
                );
            let hub = WsHub::bind("127.0.0.1:0", tokens).await.unwrap();
            let registry = OperationRegistry::new();
            registry
                .register(
                    OperationSpec::new("w", "echo", OperationKind::Query),
                    Handler::unary(|input, _ctx| async move { Ok(input) }),
                )
                .unwrap();
            let server = Arc::new(WsSpoke::connect(&hub.url(), "serve-token").await.unwrap());
            let _handler = CallHandler::new(registry, server).spawn().await.unwrap();
            let caller = Arc::new(WsSpoke::connect(&hub.url(), "call-token").await.unwrap());
            let map = PendingRequestMap::connect(caller).await.unwrap();
            let ctx =
                OperationContext::new().with_trace(TraceContext::parse(INCOMING, None).unwrap());
            let envelope = map.call("w.echo", json!({"x": 1}), &ctx).await.unwrap();
            assert_eq!(envelope.data, json!({"x": 1}));
        });
    let spans = buffer.spans();
    let client = find(&spans, "pending", "w.echo");
    let server = find(&spans, "call_handler", "w.echo");
    let executed = find(&spans, "execute", "w.echo");
    assert_eq!(client["trace_id"], "4bf92f3577b34da6a3ce929d0e0e4736");
    assert_eq!(client["parent_span_id"], "00f067aa0ba902b7");
    assert_parent(server, client);
    assert_parent(executed, server);
}
