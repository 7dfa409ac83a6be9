//! A call's publish under its bounds and the truth of its errors: a publish that never ends
//! cannot hold a call past its deadline, a request that may have left is aborted and said to
//! be of unknown outcome, and one that never left is said to be "not sent" and is not aborted.

mod protocol_support;

use bytes::Bytes;
use futures::FutureExt;
use futures::future::BoxFuture;
use opkit::protocol::topics::{abort_topic, request_topic};
use opkit::protocol::{
    Delivery, MemoryPubSub, PendingRequestMap, PubSub, Receipt, Subscription, TransportError,
};
use opkit::{ErrorCode, OperationContext};
use protocol_support::{has_message, next_event, within};
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What a publish on a request topic does; every other publish goes to the memory bus.
#[derive(Clone, Copy)]
enum Requests {
    /// Never completes (a connection gone silent).
    Hang,
    /// Fails before anything was written.
    NotSent,
    /// Fails after the write may have happened.
    Unknown,
}

struct Scripted {
    bus: MemoryPubSub,
    requests: Requests,
}

impl PubSub for Scripted {
    fn publish<'a>(
        &'a self,
        topic: &'a str,
        payload: Bytes,
    ) -> BoxFuture<'a, Result<Receipt, TransportError>> {
        if !topic.starts_with(&request_topic("")) {
            return self.bus.publish(topic, payload);
        }
        match self.requests {
            Requests::Hang => std::future::pending().boxed(),
            Requests::NotSent => {
                async { Err(TransportError::not_sent("connection refused")) }.boxed()
            }
            Requests::Unknown => async { Err(TransportError::new("no answer in time")) }.boxed(),
        }
    }

    fn subscribe<'a>(
        &'a self,
        topic: &'a str,
    ) -> BoxFuture<'a, Result<Subscription, TransportError>> {
        self.bus.subscribe(topic)
    }

    fn subscribe_group<'a>(
        &'a self,
        topic: &'a str,
        group: &'a str,
    ) -> BoxFuture<'a, Result<Subscription, TransportError>> {
        self.bus.subscribe_group(topic, group)
    }
}

async fn setup(requests: Requests) -> (PendingRequestMap, Subscription) {
    let bus = Arc::new(Scripted {
        bus: MemoryPubSub::new(),
        requests,
    });
    let aborts = bus.subscribe(&abort_topic("test.op")).await.unwrap();
    (PendingRequestMap::connect(bus).await.unwrap(), aborts)
}

const DEADLINE: Duration = Duration::from_millis(300);
/// Generous: the bound is the deadline plus scheduling.
const SLACK: Duration = Duration::from_millis(500);

#[tokio::test]
async fn a_call_whose_publish_never_ends_ends_at_its_deadline_and_is_aborted() {
    let (map, mut aborts) = setup(Requests::Hang).await;
    let ctx = OperationContext::default().with_timeout(DEADLINE);
    let started = Instant::now();
    let error = map.call("test.op", json!({}), &ctx).await.unwrap_err();
    assert!(
        started.elapsed() < DEADLINE + SLACK,
        "{:?}",
        started.elapsed()
    );
    assert_eq!(error.code, ErrorCode::Timeout);
    assert_eq!(error.details, Some(json!({"delivery": "unknown"})));
    assert!(error.message.contains("may have"), "{error}");
    let aborted = within("call.aborted", next_event(&mut aborts)).await;
    assert!(aborted.request_id().starts_with(map.caller_id()));
    assert_eq!(map.pending_count(), 0);
}

#[tokio::test]
async fn a_subscription_whose_publish_never_ends_ends_at_its_deadline() {
    let (map, mut aborts) = setup(Requests::Hang).await;
    let ctx = OperationContext::default().with_timeout(DEADLINE);
    let started = Instant::now();
    let error = map
        .subscribe("test.op", json!({}), &ctx)
        .await
        .err()
        .unwrap();
    assert!(
        started.elapsed() < DEADLINE + SLACK,
        "{:?}",
        started.elapsed()
    );
    assert_eq!(error.code, ErrorCode::Timeout);
    assert_eq!(error.details, Some(json!({"delivery": "unknown"})));
    within("call.aborted", next_event(&mut aborts)).await;
    assert_eq!(map.pending_count(), 0);
}

#[tokio::test]
async fn a_request_not_sent_says_so_and_is_not_aborted() {
    let (map, mut aborts) = setup(Requests::NotSent).await;
    let ctx = OperationContext::default().with_timeout(DEADLINE);
    let error = map.call("test.op", json!({}), &ctx).await.unwrap_err();
    assert_eq!(error.code, ErrorCode::TransportError);
    assert_eq!(error.details, Some(json!({"delivery": "notSent"})));
    assert!(error.message.contains("was not sent"), "{error}");
    let error = map
        .subscribe("test.op", json!({}), &ctx)
        .await
        .err()
        .unwrap();
    assert_eq!(error.details, Some(json!({"delivery": "notSent"})));
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(
        !has_message(&mut aborts),
        "a request never sent was aborted"
    );
    assert_eq!(map.pending_count(), 0);
}

#[tokio::test]
async fn a_request_of_unknown_outcome_says_it_may_have_run_and_is_aborted() {
    let (map, mut aborts) = setup(Requests::Unknown).await;
    let ctx = OperationContext::default().with_timeout(DEADLINE);
    let error = map.call("test.op", json!({}), &ctx).await.unwrap_err();
    assert_eq!(error.code, ErrorCode::TransportError);
    assert_eq!(error.details, Some(json!({"delivery": "unknown"})));
    assert!(
        error.message.contains("may have reached a handler"),
        "{error}"
    );
    within("call.aborted", next_event(&mut aborts)).await;
    assert_eq!(map.pending_count(), 0);
}

#[test]
fn transport_errors_are_of_unknown_delivery_unless_said_otherwise() {
    assert_eq!(TransportError::new("x").delivery(), Delivery::Unknown);
    assert_eq!(TransportError::not_sent("x").delivery(), Delivery::NotSent);
    assert_eq!(Delivery::NotSent.as_str(), "notSent");
    assert_eq!(Delivery::Unknown.as_str(), "unknown");
}
