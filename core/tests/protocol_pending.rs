//! `PendingRequestMap` on its own, against a scripted peer on a `MemoryPubSub`: replies,
//! errors, `respond` refusing non-envelopes, deadlines, aborts on drop and cancellation,
//! transport failures, and entries removed on every path.

mod protocol_support;

use bytes::Bytes;
use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use opkit::envelope::local_envelope;
use opkit::protocol::topics::{HANDLER_GROUP, abort_topic, reply_topic_for, request_topic};
use opkit::protocol::{
    CallEvent, CallRequested, MemoryPubSub, PendingOptions, PendingRequestMap, PubSub, Receipt,
    Subscription, TransportError,
};
use opkit::{CallError, ErrorCode, Identity, OperationContext};
use protocol_support::{bus, eventually, has_message, next_event, publish, within};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// A scripted handler: receives the requests of `operation`, the test answers by hand.
struct Peer {
    bus: Arc<dyn PubSub>,
    requests: Subscription,
    aborts: Subscription,
}

impl Peer {
    async fn new(bus: &Arc<dyn PubSub>, operation: &str) -> Self {
        Self {
            bus: bus.clone(),
            requests: bus
                .subscribe_group(&request_topic(operation), HANDLER_GROUP)
                .await
                .unwrap(),
            aborts: bus.subscribe(&abort_topic(operation)).await.unwrap(),
        }
    }

    async fn request(&mut self) -> CallRequested {
        match next_event(&mut self.requests).await {
            CallEvent::Requested(request) => request,
            other => panic!("expected a request, got {other:?}"),
        }
    }

    async fn abort(&mut self) -> String {
        match next_event(&mut self.aborts).await {
            CallEvent::Aborted(aborted) => aborted.request_id,
            other => panic!("expected an abort, got {other:?}"),
        }
    }

    async fn reply(&self, event: CallEvent) {
        publish(&*self.bus, &reply_topic_for(event.request_id()), &event).await;
    }

    async fn reply_raw(&self, request_id: &str, json: serde_json::Value) {
        self.bus
            .publish(&reply_topic_for(request_id), Bytes::from(json.to_string()))
            .await
            .unwrap();
    }
}

fn ctx() -> OperationContext {
    OperationContext::default().with_timeout(Duration::from_secs(20))
}

#[tokio::test]
async fn a_call_resolves_with_the_envelope_and_carries_the_context() {
    let (_, bus) = bus();
    let mut peer = Peer::new(&bus, "math.add").await;
    let map = PendingRequestMap::connect(bus.clone()).await.unwrap();
    let ctx = ctx().with_identity(Identity::new("ann").with_scopes(["math:use"]));
    let deadline = ctx.deadline().unwrap();
    let call = tokio::spawn({
        let (map, ctx) = (map.clone(), ctx.clone());
        async move { map.call("math.add", json!({"a": 1, "b": 2}), &ctx).await }
    });
    let request = peer.request().await;
    assert!(
        request
            .request_id
            .starts_with(&format!("{}:", map.caller_id()))
    );
    assert_eq!(request.operation_id, "math.add");
    assert_eq!(request.input, json!({"a": 1, "b": 2}));
    assert_eq!(request.identity, ctx.identity().cloned());
    assert_eq!(request.deadline, Some(deadline.epoch_millis()));
    assert_eq!(
        request.parent_request_id, None,
        "a top-level call has no parent"
    );
    assert_eq!(map.pending_count(), 1);
    peer.reply(CallEvent::responded(
        &request.request_id,
        local_envelope(json!({"sum": 3}), "math.add"),
    ))
    .await;
    let envelope = within("the call", call).await.unwrap().unwrap();
    assert_eq!(envelope.data, json!({"sum": 3}));
    assert_eq!(map.pending_count(), 0);
}

#[tokio::test]
async fn the_parent_request_id_travels_for_nested_calls() {
    let (_, bus) = bus();
    let mut peer = Peer::new(&bus, "a.b").await;
    let map = PendingRequestMap::connect(bus.clone()).await.unwrap();
    let child = ctx().with_request_id("outer-1").child();
    let call = tokio::spawn(async move { map.call("a.b", json!({}), &child).await });
    let request = peer.request().await;
    assert_eq!(request.parent_request_id.as_deref(), Some("outer-1"));
    peer.reply(CallEvent::error(
        &request.request_id,
        CallError::aborted("x"),
    ))
    .await;
    within("the call", call).await.unwrap().unwrap_err();
}

#[tokio::test]
async fn a_call_error_resolves_the_call_with_that_error() {
    let (_, bus) = bus();
    let mut peer = Peer::new(&bus, "test.fail").await;
    let map = PendingRequestMap::connect(bus.clone()).await.unwrap();
    let call = tokio::spawn({
        let map = map.clone();
        async move { map.call("test.fail", json!({}), &ctx()).await }
    });
    let request = peer.request().await;
    let error = CallError::execution("boom").with_details(json!({"disk": "full"}));
    peer.reply(CallEvent::error(&request.request_id, error.clone()))
        .await;
    assert_eq!(within("the call", call).await.unwrap().unwrap_err(), error);
    assert_eq!(map.pending_count(), 0);
}

#[cfg(feature = "testing")]
#[tokio::test]
async fn respond_refuses_non_envelopes_with_a_clear_error() {
    let (_, bus) = bus();
    let mut peer = Peer::new(&bus, "a.b").await;
    let map = PendingRequestMap::connect(bus.clone()).await.unwrap();
    let call = tokio::spawn({
        let map = map.clone();
        async move { map.call("a.b", json!({}), &ctx()).await }
    });
    let request_id = peer.request().await.request_id;
    let cases = [
        (json!({"data": 1}), "must have a `meta` key"),
        (json!(42), "must be a JSON object, found a number"),
        (
            json!({"data": 1, "meta": {"source": "carrier-pigeon"}}),
            "unknown envelope source \"carrier-pigeon\"",
        ),
    ];
    for (output, message) in cases {
        let error = map.respond(&request_id, output).unwrap_err();
        assert_eq!(error.code, ErrorCode::ValidationError);
        assert!(
            error.message.contains("is not a ResponseEnvelope") && error.message.contains(message),
            "{error}"
        );
        assert_eq!(error.details, Some(json!({"requestId": request_id})));
    }
    assert_eq!(map.pending_count(), 1, "a refused output resolves nothing");
    let envelope = serde_json::to_value(local_envelope(json!("ok"), "a.b")).unwrap();
    assert_eq!(map.respond(&request_id, envelope.clone()), Ok(true));
    assert_eq!(
        within("the call", call).await.unwrap().unwrap().data,
        json!("ok")
    );
    // Late, duplicate and foreign replies are ignored.
    assert_eq!(map.respond(&request_id, envelope.clone()), Ok(false));
    assert_eq!(map.respond("someone-else:1", envelope.clone()), Ok(false));
    assert_eq!(map.respond("no-caller-part", envelope), Ok(false));
    assert_eq!(map.pending_count(), 0);
}

#[tokio::test]
async fn a_non_envelope_output_on_the_wire_fails_the_call() {
    let (_, bus) = bus();
    let mut peer = Peer::new(&bus, "a.b").await;
    let map = PendingRequestMap::connect(bus.clone()).await.unwrap();
    let call = tokio::spawn({
        let map = map.clone();
        async move { map.call("a.b", json!({}), &ctx()).await }
    });
    let request_id = peer.request().await.request_id;
    peer.reply_raw(
        &request_id,
        json!({"type": "call.responded", "requestId": request_id, "output": {"sum": 3}}),
    )
    .await;
    let error = within("the call", call).await.unwrap().unwrap_err();
    assert_eq!(error.code, ErrorCode::ValidationError);
    assert!(error.message.contains("not a ResponseEnvelope"), "{error}");
    assert_eq!(map.pending_count(), 0);
}

#[tokio::test]
async fn duplicate_replies_are_ignored() {
    let (_, bus) = bus();
    let mut peer = Peer::new(&bus, "a.b").await;
    let map = PendingRequestMap::connect(bus.clone()).await.unwrap();
    let call = tokio::spawn({
        let map = map.clone();
        async move { map.call("a.b", json!({}), &ctx()).await }
    });
    let request_id = peer.request().await.request_id;
    for n in 0..3 {
        peer.reply(CallEvent::responded(
            &request_id,
            local_envelope(json!(n), "a.b"),
        ))
        .await;
    }
    peer.reply(CallEvent::completed(&request_id)).await;
    assert_eq!(
        within("the call", call).await.unwrap().unwrap().data,
        json!(0)
    );
    assert_eq!(map.pending_count(), 0);
}

#[tokio::test]
async fn the_deadline_becomes_timeout_and_aborts_the_request() {
    let (_, bus) = bus();
    let mut peer = Peer::new(&bus, "test.forever").await;
    let map = PendingRequestMap::connect(bus.clone()).await.unwrap();
    let ctx = OperationContext::default().with_timeout(Duration::from_millis(50));
    let error = map.call("test.forever", json!({}), &ctx).await.unwrap_err();
    assert_eq!(error.code, ErrorCode::Timeout);
    assert_eq!(map.pending_count(), 0);
    let request = peer.request().await;
    assert_eq!(peer.abort().await, request.request_id);
}

#[tokio::test]
async fn the_default_timeout_applies_without_a_deadline() {
    let (_, bus) = bus();
    let mut peer = Peer::new(&bus, "test.forever").await;
    let options = PendingOptions::default().with_default_timeout(Duration::from_millis(50));
    let map = PendingRequestMap::connect_with(bus.clone(), options)
        .await
        .unwrap();
    assert_eq!(map.default_timeout(), Duration::from_millis(50));
    let error = map
        .call("test.forever", json!({}), &OperationContext::default())
        .await
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::Timeout);
    let request = peer.request().await;
    assert!(request.deadline.is_some(), "the default deadline travels");
    assert_eq!(map.pending_count(), 0);
}

#[tokio::test]
async fn an_expired_deadline_fails_before_publishing() {
    let (_, bus) = bus();
    let mut peer = Peer::new(&bus, "a.b").await;
    let map = PendingRequestMap::connect(bus.clone()).await.unwrap();
    let ctx = OperationContext::default().with_deadline(opkit::Deadline::from_epoch_millis(1));
    let error = map.call("a.b", json!({}), &ctx).await.unwrap_err();
    assert_eq!(error.code, ErrorCode::Timeout);
    assert!(!has_message(&mut peer.requests));
}

#[tokio::test]
async fn dropping_the_call_future_publishes_call_aborted() {
    let (_, bus) = bus();
    let mut peer = Peer::new(&bus, "test.forever").await;
    let map = PendingRequestMap::connect(bus.clone()).await.unwrap();
    let call = tokio::spawn({
        let map = map.clone();
        async move { map.call("test.forever", json!({}), &ctx()).await }
    });
    let request = peer.request().await;
    assert_eq!(map.pending_count(), 1);
    call.abort(); // drops the call future
    assert_eq!(peer.abort().await, request.request_id);
    assert_eq!(map.pending_count(), 0);
}

#[tokio::test]
async fn cancelling_the_context_aborts_the_call() {
    let (_, bus) = bus();
    let mut peer = Peer::new(&bus, "test.forever").await;
    let map = PendingRequestMap::connect(bus.clone()).await.unwrap();
    let token = CancellationToken::new();
    let call = tokio::spawn({
        let map = map.clone();
        let ctx = ctx().with_cancellation(token.clone());
        async move { map.call("test.forever", json!({}), &ctx).await }
    });
    let request = peer.request().await;
    token.cancel();
    let error = within("the call", call).await.unwrap().unwrap_err();
    assert_eq!(error.code, ErrorCode::Aborted);
    assert_eq!(peer.abort().await, request.request_id);
    assert_eq!(map.pending_count(), 0);
    // An already-cancelled context does not even publish.
    let cancelled = ctx().with_cancellation(token);
    let error = map
        .call("test.forever", json!({}), &cancelled)
        .await
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::Aborted);
    assert!(!has_message(&mut peer.requests));
}

#[tokio::test]
async fn nobody_listening_is_operation_not_found_at_once() {
    let (_, bus) = bus();
    let map = PendingRequestMap::connect(bus).await.unwrap();
    let error = map.call("no.such", json!({}), &ctx()).await.unwrap_err();
    assert_eq!(error.code, ErrorCode::OperationNotFound);
    assert!(error.message.contains("no.such"), "{error}");
    let error = map
        .subscribe("no.such", json!({}), &ctx())
        .await
        .err()
        .unwrap();
    assert_eq!(error.code, ErrorCode::OperationNotFound);
    assert_eq!(map.pending_count(), 0);
}

#[tokio::test]
async fn a_subscription_yields_envelopes_until_call_completed() {
    let (_, bus) = bus();
    let mut peer = Peer::new(&bus, "clock.count").await;
    let map = PendingRequestMap::connect(bus.clone()).await.unwrap();
    let mut stream = map
        .subscribe("clock.count", json!({"to": 3}), &ctx())
        .await
        .unwrap();
    let request_id = peer.request().await.request_id;
    for n in 1..=3 {
        peer.reply(CallEvent::responded(
            &request_id,
            local_envelope(json!(n), "clock.count"),
        ))
        .await;
    }
    peer.reply(CallEvent::completed(&request_id)).await;
    let items: Vec<_> = within("the stream", stream.by_ref().collect::<Vec<_>>()).await;
    let data: Vec<_> = items.into_iter().map(|item| item.unwrap().data).collect();
    assert_eq!(data, [json!(1), json!(2), json!(3)]);
    assert!(stream.next().await.is_none(), "the stream stays ended");
    assert_eq!(map.pending_count(), 0);
    assert!(
        !has_message(&mut peer.aborts),
        "a completed stream is not aborted"
    );
}

#[tokio::test]
async fn a_subscription_error_is_its_last_item() {
    let (_, bus) = bus();
    let mut peer = Peer::new(&bus, "clock.count").await;
    let map = PendingRequestMap::connect(bus.clone()).await.unwrap();
    let stream = map
        .subscribe("clock.count", json!({}), &ctx())
        .await
        .unwrap();
    let request_id = peer.request().await.request_id;
    peer.reply(CallEvent::responded(
        &request_id,
        local_envelope(json!(1), "clock.count"),
    ))
    .await;
    peer.reply(CallEvent::error(&request_id, CallError::execution("broke")))
        .await;
    let items: Vec<_> = within("the stream", stream.collect::<Vec<_>>()).await;
    assert_eq!(items.len(), 2);
    assert_eq!(items[0].as_ref().unwrap().data, json!(1));
    assert_eq!(
        items[1].as_ref().unwrap_err().code,
        ErrorCode::ExecutionError
    );
    assert_eq!(map.pending_count(), 0);
}

#[tokio::test]
async fn dropping_a_subscription_publishes_call_aborted() {
    let (_, bus) = bus();
    let mut peer = Peer::new(&bus, "clock.endless").await;
    let map = PendingRequestMap::connect(bus.clone()).await.unwrap();
    let mut stream = map
        .subscribe("clock.endless", json!({}), &ctx())
        .await
        .unwrap();
    let request_id = peer.request().await.request_id;
    peer.reply(CallEvent::responded(
        &request_id,
        local_envelope(json!(0), "clock.endless"),
    ))
    .await;
    assert_eq!(
        within("an item", stream.next())
            .await
            .unwrap()
            .unwrap()
            .data,
        json!(0)
    );
    drop(stream);
    assert_eq!(peer.abort().await, request_id);
    assert_eq!(map.pending_count(), 0);
}

#[tokio::test]
async fn subscription_deadline_and_idle_timeouts() {
    let (_, bus) = bus();
    let mut peer = Peer::new(&bus, "clock.endless").await;
    let options =
        PendingOptions::default().with_subscription_idle_timeout(Some(Duration::from_millis(50)));
    let map = PendingRequestMap::connect_with(bus.clone(), options)
        .await
        .unwrap();

    // No deadline: the idle timeout ends a silent subscription.
    let stream = map
        .subscribe("clock.endless", json!({}), &OperationContext::default())
        .await
        .unwrap();
    let request = peer.request().await;
    assert_eq!(
        request.deadline, None,
        "subscriptions get no default deadline"
    );
    let items: Vec<_> = within("the stream", stream.collect::<Vec<_>>()).await;
    assert_eq!(items.len(), 1);
    let error = items[0].as_ref().unwrap_err();
    assert_eq!(error.code, ErrorCode::Timeout);
    assert!(error.message.contains("idle timeout"), "{error}");
    assert_eq!(peer.abort().await, request.request_id);

    // A deadline: it ends the subscription.
    let ctx = OperationContext::default().with_timeout(Duration::from_millis(50));
    let stream = map
        .subscribe("clock.endless", json!({}), &ctx)
        .await
        .unwrap();
    let request = peer.request().await;
    assert!(request.deadline.is_some());
    let items: Vec<_> = within("the stream", stream.collect::<Vec<_>>()).await;
    assert_eq!(items[0].as_ref().unwrap_err().code, ErrorCode::Timeout);
    assert_eq!(peer.abort().await, request.request_id);
    assert_eq!(map.pending_count(), 0);
}

#[tokio::test]
async fn cancelling_the_context_ends_a_subscription_with_aborted() {
    let (_, bus) = bus();
    let mut peer = Peer::new(&bus, "clock.endless").await;
    let map = PendingRequestMap::connect(bus.clone()).await.unwrap();
    let token = CancellationToken::new();
    let ctx = ctx().with_cancellation(token.clone());
    let stream = map
        .subscribe("clock.endless", json!({}), &ctx)
        .await
        .unwrap();
    let request_id = peer.request().await.request_id;
    token.cancel();
    let items: Vec<_> = within("the stream", stream.collect::<Vec<_>>()).await;
    assert_eq!(items.len(), 1);
    assert_eq!(items[0].as_ref().unwrap_err().code, ErrorCode::Aborted);
    assert_eq!(peer.abort().await, request_id);
    assert_eq!(map.pending_count(), 0);
}

/// A transport whose publishes fail.
struct BrokenPublish(MemoryPubSub);

impl PubSub for BrokenPublish {
    fn publish<'a>(
        &'a self,
        _topic: &'a str,
        _payload: Bytes,
    ) -> BoxFuture<'a, Result<Receipt, TransportError>> {
        async { Err(TransportError::new("connection refused")) }.boxed()
    }

    fn subscribe<'a>(
        &'a self,
        topic: &'a str,
    ) -> BoxFuture<'a, Result<Subscription, TransportError>> {
        self.0.subscribe(topic)
    }

    fn subscribe_group<'a>(
        &'a self,
        topic: &'a str,
        group: &'a str,
    ) -> BoxFuture<'a, Result<Subscription, TransportError>> {
        self.0.subscribe_group(topic, group)
    }
}

#[tokio::test]
async fn a_failed_publish_is_a_transport_error() {
    let bus: Arc<dyn PubSub> = Arc::new(BrokenPublish(MemoryPubSub::new()));
    let map = PendingRequestMap::connect(bus).await.unwrap();
    let error = map.call("a.b", json!({}), &ctx()).await.unwrap_err();
    assert_eq!(error.code, ErrorCode::TransportError);
    assert!(error.message.contains("connection refused"), "{error}");
    let error = map.subscribe("a.b", json!({}), &ctx()).await.err().unwrap();
    assert_eq!(error.code, ErrorCode::TransportError);
    assert_eq!(map.pending_count(), 0);
    assert_eq!(
        CallError::from(TransportError::new("x")).code,
        ErrorCode::TransportError
    );
}

/// A transport whose subscriptions can be cut.
struct Cuttable {
    inner: MemoryPubSub,
    cut: CancellationToken,
}

impl PubSub for Cuttable {
    fn publish<'a>(
        &'a self,
        topic: &'a str,
        payload: Bytes,
    ) -> BoxFuture<'a, Result<Receipt, TransportError>> {
        self.inner.publish(topic, payload)
    }

    fn subscribe<'a>(
        &'a self,
        topic: &'a str,
    ) -> BoxFuture<'a, Result<Subscription, TransportError>> {
        let cut = self.cut.clone();
        async move {
            let subscription = self.inner.subscribe(topic).await?;
            Ok(Subscription::new(
                subscription.take_until(cut.cancelled_owned()),
            ))
        }
        .boxed()
    }

    fn subscribe_group<'a>(
        &'a self,
        topic: &'a str,
        group: &'a str,
    ) -> BoxFuture<'a, Result<Subscription, TransportError>> {
        self.inner.subscribe_group(topic, group)
    }
}

#[tokio::test]
async fn losing_the_reply_subscription_fails_pending_and_new_calls() {
    let cut = CancellationToken::new();
    let bus: Arc<dyn PubSub> = Arc::new(Cuttable {
        inner: MemoryPubSub::new(),
        cut: cut.clone(),
    });
    let mut peer = Peer::new(&bus, "test.forever").await;
    let map = PendingRequestMap::connect(bus.clone()).await.unwrap();
    let call = tokio::spawn({
        let map = map.clone();
        async move { map.call("test.forever", json!({}), &ctx()).await }
    });
    peer.request().await;
    cut.cancel();
    let error = within("the call", call).await.unwrap().unwrap_err();
    assert_eq!(error.code, ErrorCode::TransportError);
    assert!(
        error.message.contains("reply subscription ended"),
        "{error}"
    );
    let error = map
        .call("test.forever", json!({}), &ctx())
        .await
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::TransportError);
    assert_eq!(map.pending_count(), 0);
}

#[tokio::test]
async fn dropping_the_map_unsubscribes_its_reply_topic() {
    let (memory, bus) = bus();
    let map = PendingRequestMap::connect(bus).await.unwrap();
    let topic = map.reply_topic().to_owned();
    assert_eq!(topic, format!("opkit.reply.{}", map.caller_id()));
    assert_eq!(memory.subscriber_count(&topic), 1);
    drop(map);
    eventually("the reply topic is unsubscribed", || {
        memory.subscriber_count(&topic) == 0
    })
    .await;
}

#[tokio::test]
async fn a_chosen_caller_id_names_the_reply_topic() {
    let (_, bus) = bus();
    let options = PendingOptions::default().with_caller_id("billing-1");
    let map = PendingRequestMap::connect_with(bus, options).await.unwrap();
    assert_eq!(map.caller_id(), "billing-1");
    assert_eq!(map.reply_topic(), "opkit.reply.billing-1");
}

#[test]
#[should_panic(expected = "invalid caller id")]
fn an_invalid_caller_id_is_refused() {
    let _ = PendingOptions::default().with_caller_id("has space");
}
