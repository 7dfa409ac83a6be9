//! A signed request cannot be replayed or altered by whoever reads and writes the bus (the
//! party signing exists to stop): an attacker who watched one genuine signed
//! `call.requested` to `admin.purge` republishes it after it finished — verbatim, with another
//! input, with its deadline removed, as a subscription, under another parent — and nothing
//! runs a second time. The honest path (several signed calls, one after another) runs each.
#![cfg(feature = "signing")]

use futures::StreamExt;
use opkit::prelude::*;
use opkit::protocol::topics::{reply_topic, request_topic};
use opkit::protocol::{
    CallEvent, CallHandler, CallRequested, IdentityKeys, MemoryPubSub, PendingOptions,
    PendingRequestMap, PubSub, Subscription,
};
use parking_lot::Mutex;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

const SECRET: &[u8] = b"a secret of 32 bytes or more....";

fn keys() -> IdentityKeys {
    IdentityKeys::new().with_signing_secret("k1", SECRET)
}

/// `admin.purge` for admins, recording what it purged.
fn registry(purged: &Arc<Mutex<Vec<Value>>>) -> OperationRegistry {
    let registry = OperationRegistry::new();
    let purged = purged.clone();
    registry
        .register(
            OperationSpec::new("admin", "purge", OperationKind::Mutation)
                .access(AccessRule::roles(["admin"])),
            Handler::unary(move |input: Value, _ctx| {
                let purged = purged.clone();
                async move {
                    purged.lock().push(input["what"].clone());
                    Ok(json!("purged"))
                }
            }),
        )
        .unwrap();
    registry
}

fn admin() -> OperationContext {
    OperationContext::default()
        .with_identity(Identity::new("ann").with_roles(["admin"]))
        .with_timeout(Duration::from_secs(10))
}

/// The next event on `replies`, if one comes within a second.
async fn next_reply(replies: &mut Subscription) -> Option<CallEvent> {
    let payload = tokio::time::timeout(Duration::from_secs(1), replies.next())
        .await
        .ok()??;
    Some(CallEvent::from_slice(&payload).unwrap())
}

/// Publishes `request` as the attacker and returns what its caller's reply topic receives.
async fn republish(
    bus: &MemoryPubSub,
    replies: &mut Subscription,
    request: CallRequested,
) -> Option<CallEvent> {
    let payload = CallEvent::Requested(request).to_bytes().unwrap();
    bus.publish(&request_topic("admin.purge"), payload)
        .await
        .unwrap();
    next_reply(replies).await
}

#[tokio::test]
async fn a_genuine_signed_request_republished_or_altered_runs_no_second_time() {
    let bus = MemoryPubSub::new();
    let purged = Arc::new(Mutex::new(Vec::new()));
    let _replica = CallHandler::new(registry(&purged), Arc::new(bus.clone()))
        .with_identity_keys(keys())
        .spawn()
        .await
        .unwrap();
    // The attacker reads the request topic and the caller's reply topic.
    let mut watched = bus.subscribe(&request_topic("admin.purge")).await.unwrap();
    let options = PendingOptions::default()
        .with_identity_keys(keys())
        .with_caller_id("ann-app");
    let caller = PendingRequestMap::connect_with(Arc::new(bus.clone()), options)
        .await
        .unwrap();
    let mut replies = bus.subscribe(&reply_topic("ann-app")).await.unwrap();

    let envelope = caller
        .call("admin.purge", json!({"what": "tmp"}), &admin())
        .await
        .unwrap();
    assert_eq!(envelope.data, json!("purged"));
    let genuine = match CallEvent::from_slice(&watched.next().await.unwrap()).unwrap() {
        CallEvent::Requested(request) => request,
        other => panic!("expected the request, got {other:?}"),
    };
    assert!(matches!(
        next_reply(&mut replies).await,
        Some(CallEvent::Responded(_))
    ));

    // Verbatim, after it finished: dropped, nothing answered.
    assert_eq!(republish(&bus, &mut replies, genuine.clone()).await, None);

    // Altered: each refused as signed for another request.
    let mut everything = genuine.clone();
    everything.input = json!({"what": "everything"});
    let mut no_deadline = genuine.clone();
    no_deadline.deadline = None;
    let mut later = genuine.clone();
    later.deadline = genuine.deadline.map(|deadline| deadline + 60_000);
    let mut as_subscription = genuine.clone();
    as_subscription.subscription = true;
    let mut under_parent = genuine.clone();
    under_parent.parent_request_id = Some("someone-else:1".into());
    for (altered, field) in [
        (everything, "input"),
        (no_deadline, "deadline"),
        (later, "deadline"),
        (as_subscription, "subscription flag"),
        (under_parent, "parent request"),
    ] {
        match republish(&bus, &mut replies, altered).await {
            Some(CallEvent::Error(error)) => {
                assert_eq!(error.code, ErrorCode::AccessDenied, "{}", error.message);
                assert!(error.message.contains(field), "{}", error.message);
            }
            other => panic!("the altered {field} was answered {other:?}"),
        }
    }
    // Altered with a fresh id as well, so that the replay memory plays no part.
    let mut fresh = genuine.clone();
    fresh.request_id = "ann-app:999".into();
    fresh.input = json!({"what": "production"});
    assert!(matches!(
        republish(&bus, &mut replies, fresh).await,
        Some(CallEvent::Error(error)) if error.code == ErrorCode::AccessDenied
    ));

    assert_eq!(*purged.lock(), [json!("tmp")], "one signature, one run");

    // The honest path: more signed calls, each runs.
    for what in ["a", "b"] {
        caller
            .call("admin.purge", json!({"what": what}), &admin())
            .await
            .unwrap();
    }
    assert_eq!(*purged.lock(), [json!("tmp"), json!("a"), json!("b")]);
}

#[tokio::test]
async fn a_full_replay_memory_refuses_new_signed_requests_and_forgets_none() {
    let bus = MemoryPubSub::new();
    let purged = Arc::new(Mutex::new(Vec::new()));
    let _replica = CallHandler::new(registry(&purged), Arc::new(bus.clone()))
        .with_identity_keys(keys())
        .with_replay_capacity(2)
        .spawn()
        .await
        .unwrap();
    let options = PendingOptions::default().with_identity_keys(keys());
    let caller = PendingRequestMap::connect_with(Arc::new(bus.clone()), options)
        .await
        .unwrap();
    for what in ["a", "b"] {
        caller
            .call("admin.purge", json!({"what": what}), &admin())
            .await
            .unwrap();
    }
    let refused = caller
        .call("admin.purge", json!({"what": "c"}), &admin())
        .await
        .unwrap_err();
    assert_eq!(refused.kind, Some(ErrorKind::Unavailable), "{refused}");
    assert!(
        refused.message.contains("with_replay_capacity"),
        "{refused}"
    );
    // Anonymous requests carry no signature and need no memory.
    let anonymous = OperationContext::default();
    let denied = caller
        .call("admin.purge", json!({"what": "d"}), &anonymous)
        .await
        .unwrap_err();
    assert_eq!(denied.code, ErrorCode::AccessDenied);
    assert_eq!(*purged.lock(), [json!("a"), json!("b")]);
}
