//! The hub's identity stamp cannot be bypassed: a spoke granted an identity that writes a
//! request's keys twice (so that a parser keeping the last occurrence would read another
//! identity) is refused at the hub, whichever key it repeats; the requests it may publish are
//! rewritten with its identity, never passed through.
#![cfg(feature = "websocket")]

use crate::ops::{Counter, init_logs};
use crate::raw::{RawSpoke, refused};
use opkit::prelude::*;
use opkit::protocol::{CallHandler, PendingRequestMap, topics};
use opkit_adapters::websocket::{SpokeGrant, StaticTokens, WsHub, WsSpoke};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

/// `admin.purge` (role `admin`; counted) and `who.ami` (public: the caller's identity id).
fn registry(purges: &Counter) -> OperationRegistry {
    let registry = OperationRegistry::new();
    let purges = purges.clone();
    registry
        .register(
            OperationSpec::new("admin", "purge", OperationKind::Mutation)
                .access(AccessRule::roles(["admin"])),
            Handler::unary(move |_input, _ctx| {
                purges.bump();
                async move { Ok(json!("purged")) }
            }),
        )
        .unwrap();
    registry
        .register(
            OperationSpec::new("who", "ami", OperationKind::Query),
            Handler::unary(|_input, ctx| {
                let id = ctx.identity().map(|identity| identity.id.clone());
                async move { Ok(json!(id)) }
            }),
        )
        .unwrap();
    registry
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stamped_spoke_repeating_any_key_is_refused_and_nothing_runs() {
    init_logs();
    let tokens = StaticTokens::new()
        .with_token("serve-token", SpokeGrant::service("server"))
        .with_token(
            "kiosk-token",
            SpokeGrant::new("kiosk").with_identity(Identity::new("kiosk-7")),
        );
    let hub = WsHub::bind("127.0.0.1:0", tokens).await.unwrap();
    let purges = Counter::default();
    let server = Arc::new(WsSpoke::connect(&hub.url(), "serve-token").await.unwrap());
    let _serving = CallHandler::new(registry(&purges), server)
        .spawn()
        .await
        .unwrap();

    let mut kiosk = RawSpoke::connect(&hub.url(), "kiosk-token").await;
    let admin = r#"{"id":"root","roles":["admin"]}"#;
    let far = opkit::envelope::now_millis() + 60_000;
    let base = r#""operationId":"admin.purge","input":{}"#;
    let variants = [
        (
            "type",
            format!(
                r#"{{"type":"call.aborted","type":"call.requested","requestId":"k:1",{base},"identity":{admin}}}"#
            ),
        ),
        (
            "requestId",
            format!(
                r#"{{"type":"call.requested","requestId":"k:0","requestId":"k:2",{base},"identity":{admin}}}"#
            ),
        ),
        (
            "deadline",
            format!(
                r#"{{"type":"call.requested","requestId":"k:3","deadline":{far},"deadline":{far},{base},"identity":{admin}}}"#
            ),
        ),
        (
            "subscription",
            format!(
                r#"{{"type":"call.requested","requestId":"k:4","subscription":false,"subscription":false,{base},"identity":{admin}}}"#
            ),
        ),
        (
            "identity",
            format!(
                r#"{{"type":"call.requested","requestId":"k:5",{base},"identity":{{"id":"kiosk-7"}},"identity":{admin}}}"#
            ),
        ),
        (
            "operationId",
            format!(
                r#"{{"type":"call.requested","requestId":"k:6","operationId":"admin.purge",{base},"identity":{admin}}}"#
            ),
        ),
        (
            "roles",
            format!(
                r#"{{"type":"call.requested","requestId":"k:7",{base},"identity":{{"id":"root","roles":[],"roles":["admin"]}}}}"#
            ),
        ),
    ];
    let topic = topics::request_topic("admin.purge");
    for (key, payload) in &variants {
        let answer = kiosk.publish(&topic, payload.as_bytes()).await;
        assert!(
            refused(&answer, &format!("`{key}` appears twice")),
            "repeating `{key}`: the hub answered {answer}"
        );
    }

    // The honest path: the kiosk's requests carry the identity it was granted, whatever it
    // states, and the handler sees that identity.
    let spoke = Arc::new(WsSpoke::connect(&hub.url(), "kiosk-token").await.unwrap());
    let map = PendingRequestMap::connect(spoke).await.unwrap();
    let claims_root = OperationContext::default()
        .with_timeout(Duration::from_secs(20))
        .with_identity(Identity::new("root").with_roles(["admin"]));
    let who = map.call("who.ami", json!({}), &claims_root).await.unwrap();
    assert_eq!(who.data, json!("kiosk-7"));
    let denied = map
        .call("admin.purge", json!({}), &claims_root)
        .await
        .unwrap_err();
    assert_eq!(denied.code, ErrorCode::AccessDenied, "{denied}");
    assert_eq!(purges.get(), 0, "no purge ran");
}
