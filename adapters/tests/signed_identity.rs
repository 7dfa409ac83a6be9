//! Identities a replica can verify (`opkit::protocol::signing`), on a real `redis-server` and
//! a WebSocket hub: a replica that requires signed identities runs the genuine signed call
//! and refuses, with `ACCESS_DENIED` and before the operation runs, a rogue client that
//! publishes `call.requested` as `admin` without a signature, with its own key, with a
//! genuine token taken from another request, or with an expired one. Keys rotate by id. On
//! the WebSocket hub, the identity the hub stamps on a spoke's requests is signed by the hub.
#![cfg(all(feature = "redis", feature = "websocket", feature = "signing"))]

mod redis_support;

use futures::StreamExt;
use opkit::prelude::*;
use opkit::protocol::topics::{reply_topic, request_topic};
use opkit::protocol::{
    CallEvent, CallHandler, CallRequested, IdentityKeys, PendingOptions, PendingRequestMap, PubSub,
};
use opkit_adapters::redis::{RedisOptions, RedisPubSub};
use opkit_adapters::websocket::{
    HubOptions, SpokeGrant, SpokeOptions, StaticTokens, WsHub, WsSpoke,
};
use redis_support::RedisServer;
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// An Ed25519 key pair: (private PKCS#8 PEM, public SPKI PEM).
fn ed25519() -> (String, String) {
    let pair = rcgen::KeyPair::generate_for(&rcgen::PKCS_ED25519).unwrap();
    (pair.serialize_pem(), pair.public_key_pem())
}

fn signer(kid: &str, pair: &(String, String)) -> IdentityKeys {
    IdentityKeys::new()
        .with_signing_ed25519_pem(kid, pair.0.as_bytes(), pair.1.as_bytes())
        .unwrap()
}

/// `admin.purge`, for admins only; counts its runs.
fn registry(runs: &Arc<AtomicUsize>) -> OperationRegistry {
    let registry = OperationRegistry::new();
    let runs = runs.clone();
    registry
        .register(
            OperationSpec::new("admin", "purge", OperationKind::Mutation)
                .access(AccessRule::roles(["admin"])),
            Handler::unary(move |_input, _ctx| {
                let runs = runs.clone();
                async move {
                    runs.fetch_add(1, Ordering::SeqCst);
                    Ok(json!("purged"))
                }
            }),
        )
        .unwrap();
    registry
}

fn admin() -> Identity {
    Identity::new("admin").with_roles(["admin"])
}

fn ctx() -> OperationContext {
    OperationContext::default()
        .with_identity(admin())
        .with_timeout(Duration::from_secs(10))
}

fn now_millis() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// Publishes `request` on `bus` as a rogue client would, and returns the code of the
/// `call.error` it is answered with.
async fn publish_raw(bus: &Arc<dyn PubSub>, caller: &str, request: CallRequested) -> String {
    let mut replies = bus.subscribe(&reply_topic(caller)).await.unwrap();
    let payload = CallEvent::Requested(request.clone()).to_bytes().unwrap();
    bus.publish(&request_topic(&request.operation_id), payload)
        .await
        .unwrap();
    let reply = tokio::time::timeout(Duration::from_secs(20), replies.next())
        .await
        .expect("answered")
        .expect("a reply");
    match CallEvent::from_slice(&reply).unwrap() {
        CallEvent::Error(error) => error.code.as_str().to_owned(),
        other => format!("{other:?}"),
    }
}

fn rogue_request(n: u64) -> CallRequested {
    let mut request = CallRequested::new(format!("rogue:{n}"), "admin.purge", json!({}));
    request.identity = Some(admin());
    request.deadline = Some(now_millis() + 10_000);
    request
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_redis_only_the_genuine_signed_identity_passes() {
    let server = RedisServer::start();
    let bus = || async {
        Arc::new(
            RedisPubSub::connect_with(&server.url(), RedisOptions::default().with_prefix("sig:"))
                .await
                .unwrap(),
        )
    };
    let (current, previous) = (ed25519(), ed25519());
    // The replica holds public keys only: the current one and the one being retired.
    let verifying = IdentityKeys::new()
        .with_verifying_ed25519_pem("2026-11", current.1.as_bytes())
        .unwrap()
        .with_verifying_ed25519_pem("2026-10", previous.1.as_bytes())
        .unwrap();
    let runs = Arc::new(AtomicUsize::new(0));
    let _replica = CallHandler::new(registry(&runs), bus().await)
        .with_identity_keys(verifying)
        .spawn()
        .await
        .unwrap();

    // Genuine callers, with the current key and with the one being retired.
    for (kid, pair) in [("2026-11", &current), ("2026-10", &previous)] {
        let options = PendingOptions::default().with_identity_keys(signer(kid, pair));
        let map = PendingRequestMap::connect_with(bus().await, options)
            .await
            .unwrap();
        let envelope = map.call("admin.purge", json!({}), &ctx()).await.unwrap();
        assert_eq!(envelope.data, json!("purged"));
    }
    assert_eq!(runs.load(Ordering::SeqCst), 2);

    // A rogue that only states the identity.
    let stating = PendingRequestMap::connect(bus().await).await.unwrap();
    let error = stating
        .call("admin.purge", json!({}), &ctx())
        .await
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::AccessDenied, "{error}");
    assert!(error.message.contains("is not signed"), "{error}");

    // A rogue that signs with a key of its own under a known key id.
    let forging = PendingOptions::default().with_identity_keys(signer("2026-11", &ed25519()));
    let forging = PendingRequestMap::connect_with(bus().await, forging)
        .await
        .unwrap();
    let error = forging
        .call("admin.purge", json!({}), &ctx())
        .await
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::AccessDenied, "{error}");

    // A genuine token, taken from one request and put on another; and an expired one.
    let raw: Arc<dyn PubSub> = bus().await;
    let genuine = signer("2026-11", &current);
    let seen = rogue_request(1);
    let mut replayed = rogue_request(2);
    replayed.identity_token = genuine.sign_request(&seen).unwrap();
    assert_eq!(publish_raw(&raw, "rogue", replayed).await, "ACCESS_DENIED");
    let mut expired = rogue_request(3);
    expired.deadline = Some(now_millis() - 60_000);
    expired.identity_token = genuine.sign_request(&expired).unwrap();
    expired.deadline = Some(now_millis() + 10_000);
    assert_eq!(publish_raw(&raw, "rogue", expired).await, "ACCESS_DENIED");
    // The same path with a genuine token runs: the refusals above were the signatures'.
    let mut signed = rogue_request(4);
    signed.identity_token = genuine.sign_request(&signed).unwrap();
    let mut replies = raw.subscribe(&reply_topic("rogue")).await.unwrap();
    raw.publish(
        &request_topic("admin.purge"),
        CallEvent::Requested(signed).to_bytes().unwrap(),
    )
    .await
    .unwrap();
    let reply = tokio::time::timeout(Duration::from_secs(20), replies.next())
        .await
        .unwrap()
        .unwrap();
    assert!(
        matches!(
            CallEvent::from_slice(&reply).unwrap(),
            CallEvent::Responded(_)
        ),
        "the genuine raw request is answered"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 3, "no refused request ran");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_websocket_the_hub_signs_the_identity_it_stamps() {
    let pair = ed25519();
    let tokens = StaticTokens::new()
        .with_token("serving-token", SpokeGrant::service("serving"))
        .with_token(
            "console-token",
            SpokeGrant::new("console").with_identity(admin()),
        )
        .with_token("web-token", SpokeGrant::new("web"));
    let hub = WsHub::bind_with(
        "127.0.0.1:0",
        tokens,
        HubOptions::default().with_identity_keys(signer("hub", &pair)),
    )
    .await
    .unwrap();
    let spoke = |token: &'static str| {
        let url = hub.url();
        async move {
            Arc::new(
                WsSpoke::connect_with(&url, SpokeOptions::new(token))
                    .await
                    .unwrap(),
            )
        }
    };
    let runs = Arc::new(AtomicUsize::new(0));
    let verifying = IdentityKeys::new()
        .with_verifying_ed25519_pem("hub", pair.1.as_bytes())
        .unwrap();
    let _serving = CallHandler::new(registry(&runs), spoke("serving-token").await)
        .with_identity_keys(verifying)
        .spawn()
        .await
        .unwrap();
    // The console's requests carry the identity the hub stamps, signed by the hub.
    let console = PendingRequestMap::connect(spoke("console-token").await)
        .await
        .unwrap();
    let anonymous = OperationContext::default().with_timeout(Duration::from_secs(10));
    let envelope = console
        .call("admin.purge", json!({}), &anonymous)
        .await
        .unwrap();
    assert_eq!(envelope.data, json!("purged"));
    // A spoke without a stamped identity that states `admin` is refused.
    let web = PendingRequestMap::connect(spoke("web-token").await)
        .await
        .unwrap();
    let error = web
        .call("admin.purge", json!({}), &ctx())
        .await
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::AccessDenied, "{error}");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

/// A Redis writer forging replies and aborts, with signing on: the caller (a replica's
/// reply key known to it) takes only the replica's signed answer, and the replica takes only
/// the caller's signed abort. Ed25519 keys with one use each: the caller's request key, the
/// replica's reply key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_redis_a_bus_writer_forges_neither_replies_nor_aborts() {
    let server = RedisServer::start();
    let bus = || async {
        Arc::new(
            RedisPubSub::connect_with(&server.url(), RedisOptions::default().with_prefix("rep:"))
                .await
                .unwrap(),
        )
    };
    let (caller_key, reply_key) = (ed25519(), ed25519());
    let registry = OperationRegistry::new();
    let cancelled = Arc::new(AtomicUsize::new(0));
    {
        let cancelled = cancelled.clone();
        registry
            .register(
                OperationSpec::new("work", "slow", OperationKind::Query),
                Handler::unary(move |_input, ctx: OperationContext| {
                    let cancelled = cancelled.clone();
                    async move {
                        let stop = ctx.cancellation().cloned().unwrap_or_default();
                        tokio::select! {
                            () = tokio::time::sleep(Duration::from_millis(600)) => Ok(json!("genuine")),
                            () = stop.cancelled() => {
                                cancelled.fetch_add(1, Ordering::SeqCst);
                                Err(CallError::aborted("cancelled"))
                            }
                        }
                    }
                }),
            )
            .unwrap();
    }
    let replica_keys = IdentityKeys::new()
        .with_verifying_ed25519_pem("caller", caller_key.1.as_bytes())
        .unwrap()
        .with_reply_signing_ed25519_pem("replica", reply_key.0.as_bytes(), reply_key.1.as_bytes())
        .unwrap();
    let _replica = CallHandler::new(registry, bus().await)
        .with_identity_keys(replica_keys)
        .spawn()
        .await
        .unwrap();
    let caller_keys = signer("caller", &caller_key)
        .with_reply_verifying_ed25519_pem("replica", reply_key.1.as_bytes())
        .unwrap();
    let options = PendingOptions::default()
        .with_identity_keys(caller_keys)
        .with_caller_id("victim");
    let caller = PendingRequestMap::connect_with(bus().await, options)
        .await
        .unwrap();

    // The writer knows how request ids are made (`victim:1`, `victim:2`): it answers and
    // aborts each call in the caller's place while the replica works.
    let writer: Arc<dyn PubSub> = bus().await;
    let forge = |n: u64| {
        let writer = writer.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            let request_id = format!("victim:{n}");
            let envelope = opkit::envelope::local_envelope(json!("forged"), "work.slow");
            for event in [
                CallEvent::responded(&request_id, envelope),
                CallEvent::aborted(&request_id),
            ] {
                let topic = match event {
                    CallEvent::Aborted(_) => opkit::protocol::topics::abort_topic("work.slow"),
                    _ => reply_topic("victim"),
                };
                writer
                    .publish(&topic, event.to_bytes().unwrap())
                    .await
                    .unwrap();
            }
        })
    };
    for n in 1..=2 {
        let forger = forge(n);
        let envelope = caller.call("work.slow", json!({}), &ctx()).await.unwrap();
        forger.await.unwrap();
        assert_eq!(envelope.data, json!("genuine"), "call {n}");
    }
    assert_eq!(
        cancelled.load(Ordering::SeqCst),
        0,
        "no forged abort cancelled a call"
    );
}
