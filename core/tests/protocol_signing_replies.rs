//! Replies and aborts a caller can trust on a shared bus: with signing keys on both sides, a
//! bus writer who watches a call (as an attacker would) can neither answer it in the
//! handler's place, nor replay a subscription's item, nor cancel the run in the caller's
//! place. Without keys the forged reply is taken: what signing adds, shown.
#![cfg(feature = "signing")]

use futures::StreamExt;
use opkit::prelude::*;
use opkit::protocol::topics::{abort_topic, reply_topic, request_topic};
use opkit::protocol::{
    CallEvent, CallHandler, IdentityKeys, MemoryPubSub, PendingOptions, PendingRequestMap, PubSub,
};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

fn keys() -> IdentityKeys {
    IdentityKeys::new().with_signing_secret("k1", b"a secret of 32 bytes or more....")
}

/// `work.slow` answers "genuine" after a while (unless cancelled, which it counts);
/// `work.items` streams three items, slowly.
fn registry(cancelled: &Arc<AtomicUsize>) -> OperationRegistry {
    let registry = OperationRegistry::new();
    let cancelled = cancelled.clone();
    registry
        .register(
            OperationSpec::new("work", "slow", OperationKind::Query),
            Handler::unary(move |_input: Value, ctx: OperationContext| {
                let cancelled = cancelled.clone();
                async move {
                    let stop = ctx.cancellation().cloned().unwrap_or_default();
                    tokio::select! {
                        () = tokio::time::sleep(Duration::from_millis(400)) => Ok(json!("genuine")),
                        () = stop.cancelled() => {
                            cancelled.fetch_add(1, Ordering::SeqCst);
                            Err(CallError::aborted("cancelled"))
                        }
                    }
                }
            }),
        )
        .unwrap();
    registry
        .register(
            OperationSpec::new("work", "items", OperationKind::Subscription),
            Handler::stream(|_input, _ctx| {
                futures::stream::iter(0..3).then(|n| async move {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    Ok(json!(n))
                })
            }),
        )
        .unwrap();
    registry
}

/// A caller named `victim` on `bus`, with `keys`.
async fn victim(bus: &MemoryPubSub, keys: Option<IdentityKeys>) -> PendingRequestMap {
    let mut options = PendingOptions::default().with_caller_id("victim");
    if let Some(keys) = keys {
        options = options.with_identity_keys(keys);
    }
    PendingRequestMap::connect_with(Arc::new(bus.clone()), options)
        .await
        .unwrap()
}

/// The attacker: watches the request topic of `operation` (subscribed before this returns),
/// and when the victim's request comes publishes `forge(request id)` on `topic(operation)`.
async fn attack(
    bus: &MemoryPubSub,
    operation: &'static str,
    topic: fn(&str) -> String,
    forge: fn(&str) -> CallEvent,
) -> tokio::task::JoinHandle<()> {
    let mut requests = bus.subscribe(&request_topic(operation)).await.unwrap();
    let bus = bus.clone();
    tokio::spawn(async move {
        let request = requests.next().await.unwrap();
        let request_id = CallEvent::from_slice(&request)
            .unwrap()
            .request_id()
            .to_owned();
        let forged = forge(&request_id).to_bytes().unwrap();
        bus.publish(&topic(operation), forged).await.unwrap();
    })
}

fn forged_reply(request_id: &str) -> CallEvent {
    CallEvent::responded(
        request_id,
        opkit::envelope::local_envelope(json!("forged"), "work.slow"),
    )
}

fn victims_reply_topic(_: &str) -> String {
    reply_topic("victim")
}

#[tokio::test]
async fn a_forged_reply_is_dropped_and_the_genuine_one_taken() {
    let bus = MemoryPubSub::new();
    let cancelled = Arc::new(AtomicUsize::new(0));
    let _replica = CallHandler::new(registry(&cancelled), Arc::new(bus.clone()))
        .with_identity_keys(keys())
        .spawn()
        .await
        .unwrap();
    let caller = victim(&bus, Some(keys())).await;
    let attacker = attack(&bus, "work.slow", victims_reply_topic, forged_reply).await;
    let envelope = caller
        .call("work.slow", json!({}), &OperationContext::default())
        .await
        .unwrap();
    attacker.await.unwrap();
    assert_eq!(envelope.data, json!("genuine"));

    // A forged error, too.
    let attacker = attack(&bus, "work.slow", victims_reply_topic, |request_id| {
        CallEvent::error(request_id, CallError::not_found("forged"))
    })
    .await;
    let envelope = caller
        .call("work.slow", json!({}), &OperationContext::default())
        .await
        .unwrap();
    attacker.await.unwrap();
    assert_eq!(envelope.data, json!("genuine"));
}

#[tokio::test]
async fn without_keys_the_forged_reply_is_taken() {
    let bus = MemoryPubSub::new();
    let cancelled = Arc::new(AtomicUsize::new(0));
    let _replica = CallHandler::new(registry(&cancelled), Arc::new(bus.clone()))
        .spawn()
        .await
        .unwrap();
    let caller = victim(&bus, None).await;
    let attacker = attack(&bus, "work.slow", victims_reply_topic, forged_reply).await;
    let envelope = caller
        .call("work.slow", json!({}), &OperationContext::default())
        .await
        .unwrap();
    attacker.await.unwrap();
    assert_eq!(
        envelope.data,
        json!("forged"),
        "what signing replies prevents"
    );
}

#[tokio::test]
async fn a_forged_abort_does_not_cancel_a_signed_call() {
    let bus = MemoryPubSub::new();
    let cancelled = Arc::new(AtomicUsize::new(0));
    let _replica = CallHandler::new(registry(&cancelled), Arc::new(bus.clone()))
        .with_identity_keys(keys())
        .spawn()
        .await
        .unwrap();
    let caller = victim(&bus, Some(keys())).await;
    // Signed: the caller states an identity.
    let ctx = OperationContext::default().with_identity(Identity::new("ann"));
    let attacker = attack(&bus, "work.slow", abort_topic, |request_id| {
        CallEvent::aborted(request_id)
    })
    .await;
    let envelope = caller.call("work.slow", json!({}), &ctx).await.unwrap();
    attacker.await.unwrap();
    assert_eq!(envelope.data, json!("genuine"));
    assert_eq!(
        cancelled.load(Ordering::SeqCst),
        0,
        "the forged abort cancelled nothing"
    );

    // The caller's own abort still cancels: it signs it.
    let call = tokio::spawn({
        let caller = caller.clone();
        let ctx = ctx.clone();
        async move { caller.call("work.slow", json!({}), &ctx).await }
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    call.abort();
    for _ in 0..100 {
        if cancelled.load(Ordering::SeqCst) == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        cancelled.load(Ordering::SeqCst),
        1,
        "the caller's signed abort cancels"
    );
}

#[tokio::test]
async fn a_replayed_item_is_not_the_next_one() {
    let bus = MemoryPubSub::new();
    let cancelled = Arc::new(AtomicUsize::new(0));
    let _replica = CallHandler::new(registry(&cancelled), Arc::new(bus.clone()))
        .with_identity_keys(keys())
        .spawn()
        .await
        .unwrap();
    let caller = victim(&bus, Some(keys())).await;
    // The attacker republishes every genuine item it sees on the victim's reply topic.
    let replayer = {
        let bus = bus.clone();
        let mut replies = bus.subscribe(&reply_topic("victim")).await.unwrap();
        tokio::spawn(async move {
            for _ in 0..3 {
                let Some(item) = replies.next().await else {
                    return;
                };
                if matches!(CallEvent::from_slice(&item), Ok(CallEvent::Responded(_))) {
                    bus.publish(&reply_topic("victim"), item).await.unwrap();
                }
            }
        })
    };
    let stream = caller
        .subscribe("work.items", json!({}), &OperationContext::default())
        .await
        .unwrap();
    let items: Vec<Value> = stream
        .map(|item| item.unwrap().data)
        .collect::<Vec<_>>()
        .await;
    replayer.abort();
    assert_eq!(items, [json!(0), json!(1), json!(2)]);
}
