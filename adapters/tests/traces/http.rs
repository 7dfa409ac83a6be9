//! The HTTP server and W3C trace headers: a valid `traceparent` parents the server span, an
//! invalid one is ignored (the call succeeds and starts a new trace), and a subscription's
//! span lasts until its event stream ends.
#![cfg(feature = "http-server")]

use crate::serve_support;

use opkit::prelude::*;
use opkit_adapters::http_server::HttpServer;
use opkit_testkit::trace::{INCOMING, echo_registry, spans_of};
use serde_json::{Value, json};
use serve_support::serve;

#[test]
fn trace_headers_are_read_and_bad_ones_ignored() {
    let spans = spans_of(async {
        let registry = echo_registry("h");
        registry
            .register(
                OperationSpec::new("h", "ticks", OperationKind::Subscription),
                Handler::stream(|_input, _ctx| futures::stream::iter([Ok(json!(1)), Ok(json!(2))])),
            )
            .unwrap();
        let served = serve(HttpServer::new(registry).router()).await;
        let client = reqwest::Client::new();
        for traceparent in [
            INCOMING,
            "00-zz-junk",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        ] {
            let response = client
                .post(served.url("/ops/h.echo"))
                .header("traceparent", traceparent)
                .header("tracestate", "a=1")
                .header("tracestate", "b=2")
                .json(&json!({"n": 1}))
                .send()
                .await
                .unwrap();
            assert!(response.status().is_success(), "{traceparent}");
        }
        let text = client
            .post(served.url("/ops/h.ticks"))
            .header("traceparent", INCOMING)
            .json(&json!({}))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(text.contains("complete"), "{text}");
    });
    let servers: Vec<&Value> = spans
        .iter()
        .filter(|span| span["opkit.path"] == "http_server" && span["rpc.method"] == "h.echo")
        .collect();
    assert_eq!(servers.len(), 3, "{spans:#?}");
    let traced = servers
        .iter()
        .find(|span| span["trace_id"] == "4bf92f3577b34da6a3ce929d0e0e4736")
        .expect("the valid traceparent's span");
    assert_eq!(traced["parent_span_id"], "00f067aa0ba902b7");
    // The two invalid headers: new traces, no parent.
    let fresh: Vec<&&Value> = servers
        .iter()
        .filter(|span| span["trace_id"] != "4bf92f3577b34da6a3ce929d0e0e4736")
        .collect();
    assert_eq!(fresh.len(), 2);
    assert!(
        fresh
            .iter()
            .all(|span| span.get("parent_span_id").is_none())
    );
    // A served call has one span, the server's: the front door opens no second one.
    assert!(
        spans.iter().all(|span| span["opkit.path"] != "execute"),
        "{spans:#?}"
    );
    let stream = spans
        .iter()
        .find(|span| span["opkit.path"] == "http_server" && span["rpc.method"] == "h.ticks")
        .expect("the subscription's server span");
    assert_eq!(stream["opkit.outcome"], "ok");
    assert_eq!(stream["opkit.kind"], "SUBSCRIPTION");
}
