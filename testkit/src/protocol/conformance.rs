//! The conformance of a transport: the same call, subscription, refusal and abort over a
//! [`PubSub`] as over the in-memory bus, for any transport (core's, the adapters' Redis and
//! WebSocket, or a new one):
//!
//! ```text
//! let server: Arc<dyn PubSub> = Arc::new(MyPubSub::connect(..).await?);
//! let caller: Arc<dyn PubSub> = Arc::new(MyPubSub::connect(..).await?);
//! opkit_testkit::protocol::conformance::check(server, caller, || async { true }).await;
//! ```
//!
//! Callers must see the same outcomes, the caller's reply topic must carry the same events
//! for each request (`call.responded`, …, `call.completed`, `call.error`), and the
//! transport's own bookkeeping of calls in flight (`settled`) must end empty, by the one rule
//! of `opkit::protocol::wire::EventKind::ends_call`.

use super::{Probes, collect_items, eventually, registry, within};
use futures::StreamExt;
use opkit::prelude::*;
use opkit::protocol::wire;
use opkit::protocol::{CallHandler, MemoryPubSub, PendingRequestMap, PubSub, topics};
use serde_json::json;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// What one transport showed: the callers' outcomes and the reply topic's events.
#[derive(Debug, PartialEq)]
pub struct Transcript {
    /// What the callers saw, one line per step.
    pub outcomes: Vec<String>,
    /// The events of each finished request on the reply topic, in order.
    pub replies: Vec<Vec<&'static str>>,
}

/// Runs the sequence with a handler on `server` and a caller on `caller`; `settled` says
/// when the transport's bookkeeping of calls in flight is empty (`|| async { true }` for a
/// transport that keeps none). Panics (bounded by [`super::PATIENCE`] per wait) when a call is
/// not answered or a handler does not stop.
pub async fn transcript<F, Fut>(
    server: Arc<dyn PubSub>,
    caller: Arc<dyn PubSub>,
    settled: F,
) -> Transcript
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let probes = Probes::default();
    let serving = CallHandler::new(registry(&probes), server)
        .spawn()
        .await
        .expect("the transport works");
    let map = PendingRequestMap::connect(caller.clone())
        .await
        .expect("the transport works");
    let mut replies = caller
        .subscribe(&topics::reply_topic(map.caller_id()))
        .await
        .expect("the transport works");
    // Long deadlines: a transport that forgot to end a call would keep it past the test.
    let ctx = OperationContext::default().with_timeout(Duration::from_secs(120));

    let mut outcomes = Vec::new();
    let sum = map.call("math.add", json!({"a": 2, "b": 3}), &ctx).await;
    outcomes.push(format!("{:?}", sum.map(|envelope| envelope.data)));
    let items = collect_items(
        map.subscribe("clock.count", json!({"to": 3}), &ctx)
            .await
            .expect("the transport works"),
    )
    .await;
    outcomes.push(format!("{items:?}"));
    let refused = map
        .call("math.add", json!({"a": "two"}), &ctx)
        .await
        .unwrap_err();
    outcomes.push(format!("{:?}", refused.code));

    let call = {
        let map = map.clone();
        let ctx = ctx.clone();
        tokio::spawn(async move { map.call("test.forever", json!({}), &ctx).await })
    };
    eventually("the handler starts", || probes.started.get() == 1).await;
    call.abort();
    eventually("the aborted handler stops", || probes.dropped.get() == 1).await;
    eventually("nothing runs", || serving.in_flight() == 0).await;
    assert_eq!(map.pending_count(), 0);
    outcomes.push("aborted".to_owned());

    // The reply topic: the events of the three answered requests, in order per request.
    let mut by_request: HashMap<String, Vec<&'static str>> = HashMap::new();
    let mut order = Vec::new();
    let mut ended = 0;
    within("the replies of the answered requests", async {
        while ended < 3 {
            let payload = replies
                .next()
                .await
                .expect("the reply topic stays subscribed");
            let peeked = wire::peek(&payload).expect("a call event");
            let request_id = peeked.request_id.into_owned();
            if !by_request.contains_key(&request_id) {
                order.push(request_id.clone());
            }
            by_request
                .entry(request_id.clone())
                .or_default()
                .push(peeked.kind.as_str());
            // Which request was the subscription is known from the order of the sequence.
            let subscription = order.iter().position(|id| *id == request_id) == Some(1);
            if peeked.kind.ends_call(subscription) {
                ended += 1;
            }
        }
    })
    .await;
    let replies = order
        .iter()
        .take(3)
        .map(|id| by_request.remove(id).unwrap_or_default())
        .collect();

    within("the transport's calls in flight settle", async {
        while !settled().await {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    serving.stop();
    Transcript { outcomes, replies }
}

/// The transcript of the in-memory bus, the reference every transport must match.
pub async fn reference() -> Transcript {
    let memory = MemoryPubSub::new();
    transcript(Arc::new(memory.clone()), Arc::new(memory), || async {
        true
    })
    .await
}

/// Runs the sequence over the transport (a handler on `server`, a caller on `caller`) and
/// asserts that it matches the in-memory bus's.
pub async fn check<F, Fut>(server: Arc<dyn PubSub>, caller: Arc<dyn PubSub>, settled: F)
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let expected = reference().await;
    let seen = transcript(server, caller, settled).await;
    assert_eq!(
        seen, expected,
        "the transport disagrees with the in-memory bus"
    );
}
