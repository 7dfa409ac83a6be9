//! Trace context over the WebSocket transport: a caller spoke's client span parents the
//! serving spoke's call-handler span, through the hub (also when the hub stamps the
//! caller's identity on the request, which rewrites it).
#![cfg(feature = "websocket")]

use opkit::prelude::*;
use opkit::protocol::{CallHandler, PendingRequestMap};
use opkit::trace::TraceContext;
use opkit_adapters::websocket::{SpokeGrant, StaticTokens, WsHub, WsSpoke};
use opkit_testkit::trace::{INCOMING, echo_registry, spans_of};
use opkit_testkit::trace::{assert_parent, find};
use serde_json::json;
use std::sync::Arc;

#[test]
fn a_call_through_the_hub_keeps_its_trace() {
    let spans = spans_of(async {
        let tokens = StaticTokens::new()
            .with_token("serve-token", SpokeGrant::service("server"))
            .with_token(
                "call-token",
                SpokeGrant::new("caller").with_identity(Identity::new("kiosk")),
            );
        let hub = WsHub::bind("127.0.0.1:0", tokens).await.unwrap();
        let registry = echo_registry("w");
        let server = Arc::new(WsSpoke::connect(&hub.url(), "serve-token").await.unwrap());
        let _handler = CallHandler::new(registry, server).spawn().await.unwrap();
        let caller = Arc::new(WsSpoke::connect(&hub.url(), "call-token").await.unwrap());
        let map = PendingRequestMap::connect(caller).await.unwrap();
        let ctx = OperationContext::new().with_trace(TraceContext::parse(INCOMING, None).unwrap());
        let envelope = map.call("w.echo", json!({"x": 1}), &ctx).await.unwrap();
        assert_eq!(envelope.data, json!({"x": 1}));
    });
    let client = find(&spans, "pending", "w.echo");
    let server = find(&spans, "call_handler", "w.echo");
    assert_eq!(client["trace_id"], "4bf92f3577b34da6a3ce929d0e0e4736");
    assert_eq!(client["parent_span_id"], "00f067aa0ba902b7");
    assert_parent(server, client);
    // A served call has one span, the server's.
    assert!(
        spans.iter().all(|span| span["opkit.path"] != "execute"),
        "{spans:#?}"
    );
}
