//! Routing: each caller receives only its own requests' events; replicas on one bus execute
//! each request once; request ids carry the caller.

mod protocol_support;

use futures::StreamExt;
use opkit::protocol::topics::{
    FALLBACK_REPLY_TOPIC, abort_topic, caller_of, reply_topic, reply_topic_for, request_topic,
};
use opkit::protocol::{CallEvent, CallHandler, CallRequested, PendingRequestMap, Subscription};
use opkit::{Handler, OperationContext, OperationKind, OperationRegistry, OperationSpec};
use protocol_support::{Counter, Probes, bus, has_message, next_event, publish, registry};
use serde_json::json;
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn ctx() -> OperationContext {
    OperationContext::default().with_timeout(Duration::from_secs(20))
}

#[test]
fn the_topic_layout() {
    assert_eq!(request_topic("math.add"), "opkit.request.math.add");
    assert_eq!(abort_topic("math.add"), "opkit.abort.math.add");
    assert_eq!(reply_topic("c1"), "opkit.reply.c1");
    assert_eq!(reply_topic_for("c1:42"), "opkit.reply.c1");
    assert_eq!(reply_topic_for("a:b:42"), FALLBACK_REPLY_TOPIC);
    assert_eq!(caller_of("a:b:42"), None, "`a:b` is not a valid caller id");
    assert_eq!(reply_topic_for("plain-uuid"), FALLBACK_REPLY_TOPIC);
    assert_eq!(reply_topic_for("*.>:1"), FALLBACK_REPLY_TOPIC);
    assert_eq!(reply_topic_for(":1"), FALLBACK_REPLY_TOPIC);
}

/// Drains every message waiting on `subscription` as events.
async fn drain(subscription: &mut Subscription) -> Vec<CallEvent> {
    let mut events = Vec::new();
    while has_message_and_take(subscription, &mut events) {}
    events
}

fn has_message_and_take(subscription: &mut Subscription, events: &mut Vec<CallEvent>) -> bool {
    match futures::FutureExt::now_or_never(subscription.next()) {
        Some(Some(payload)) => {
            events.push(CallEvent::from_slice(&payload).unwrap());
            true
        }
        _ => false,
    }
}

#[tokio::test]
async fn a_caller_receives_only_its_own_events() {
    let (memory, bus) = bus();
    let _handler = CallHandler::new(registry(&Probes::default()), bus.clone())
        .spawn()
        .await
        .unwrap();
    let alice = PendingRequestMap::connect(bus.clone()).await.unwrap();
    let bob = PendingRequestMap::connect(bus.clone()).await.unwrap();
    assert_ne!(alice.reply_topic(), bob.reply_topic());
    // Taps on both reply topics see what each caller's listener sees.
    let mut alice_tap = bus.subscribe(alice.reply_topic()).await.unwrap();
    let mut bob_tap = bus.subscribe(bob.reply_topic()).await.unwrap();

    for i in 0..20 {
        alice
            .call("math.add", json!({"a": i, "b": 0}), &ctx())
            .await
            .unwrap();
    }
    let items = alice
        .subscribe("clock.count", json!({"to": 3}), &ctx())
        .await
        .unwrap()
        .collect::<Vec<_>>()
        .await;
    assert_eq!(items.len(), 3);
    for i in 0..5 {
        bob.call("math.add", json!({"a": i, "b": 0}), &ctx())
            .await
            .unwrap();
    }

    let alice_events = drain(&mut alice_tap).await;
    let bob_events = drain(&mut bob_tap).await;
    assert_eq!(
        alice_events.len(),
        20 + 3 + 1,
        "20 replies, 3 items, 1 completed"
    );
    assert_eq!(bob_events.len(), 5);
    let alice_prefix = format!("{}:", alice.caller_id());
    let bob_prefix = format!("{}:", bob.caller_id());
    assert!(
        alice_events
            .iter()
            .all(|e| e.request_id().starts_with(&alice_prefix))
    );
    assert!(
        bob_events
            .iter()
            .all(|e| e.request_id().starts_with(&bob_prefix))
    );
    // Each caller subscribes to one reply topic, its own.
    assert_eq!(memory.subscriber_count(alice.reply_topic()), 2); // the map + the tap
    assert_eq!(memory.subscriber_count(FALLBACK_REPLY_TOPIC), 0);
}

#[tokio::test]
async fn request_ids_without_a_caller_are_answered_on_the_fallback_topic() {
    let (_, bus) = bus();
    let _handler = CallHandler::new(registry(&Probes::default()), bus.clone())
        .spawn()
        .await
        .unwrap();
    let mut fallback = bus.subscribe(FALLBACK_REPLY_TOPIC).await.unwrap();
    let request = CallRequested::new("4b1d-no-caller", "math.add", json!({"a": 1, "b": 2}));
    publish(
        &*bus,
        &request_topic("math.add"),
        &CallEvent::Requested(request),
    )
    .await;
    match next_event(&mut fallback).await {
        CallEvent::Responded(responded) => {
            assert_eq!(responded.request_id, "4b1d-no-caller");
            assert_eq!(responded.output.data, json!({"sum": 3}));
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(!has_message(&mut fallback));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_handlers_on_one_registry_execute_each_request_once() {
    let (memory, bus) = bus();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let registry = OperationRegistry::new();
    let log = seen.clone();
    registry
        .register(
            OperationSpec::new("work", "item", OperationKind::Mutation),
            Handler::unary(move |input, _ctx| {
                log.lock().unwrap().push(input["n"].as_u64().unwrap());
                async move { Ok(input["n"].clone()) }
            }),
        )
        .unwrap();
    let _a = CallHandler::new(registry.clone(), bus.clone())
        .spawn()
        .await
        .unwrap();
    let _b = CallHandler::new(registry, bus.clone())
        .spawn()
        .await
        .unwrap();
    assert_eq!(memory.subscriber_count(&request_topic("work.item")), 2);
    let map = PendingRequestMap::connect(bus).await.unwrap();
    let calls = (0..1000u64).map(|n| {
        let map = map.clone();
        async move { map.call("work.item", json!({"n": n}), &ctx()).await }
    });
    let results = futures::future::join_all(calls).await;
    for (n, result) in results.into_iter().enumerate() {
        assert_eq!(result.unwrap().data, json!(n));
    }
    let mut seen = seen.lock().unwrap().clone();
    seen.sort_unstable();
    assert_eq!(
        seen,
        (0..1000).collect::<Vec<_>>(),
        "each request executed exactly once"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_share_the_work() {
    let (_, bus) = bus();
    // Two replicas of one service (same operation id, separate registries), to tell them apart.
    let replica = |runs: &Counter| {
        let registry = OperationRegistry::new();
        let runs = runs.clone();
        registry
            .register(
                OperationSpec::new("work", "item", OperationKind::Mutation),
                Handler::unary(move |input, _ctx| {
                    runs.bump();
                    async move { Ok(input["n"].clone()) }
                }),
            )
            .unwrap();
        registry
    };
    let (runs_a, runs_b) = (Counter::default(), Counter::default());
    let _a = CallHandler::new(replica(&runs_a), bus.clone())
        .spawn()
        .await
        .unwrap();
    let _b = CallHandler::new(replica(&runs_b), bus.clone())
        .spawn()
        .await
        .unwrap();
    let map = PendingRequestMap::connect(bus).await.unwrap();
    let calls = (0..200u64).map(|n| {
        let map = map.clone();
        async move {
            map.call("work.item", json!({"n": n}), &ctx())
                .await
                .unwrap()
        }
    });
    futures::future::join_all(calls).await;
    assert_eq!(runs_a.get() + runs_b.get(), 200, "none lost, none twice");
    assert!(runs_a.get() > 0 && runs_b.get() > 0, "both replicas worked");
}

/// A transport wrapper that records the type of every event published through it.
struct Recording {
    inner: Arc<dyn opkit::protocol::PubSub>,
    published: Mutex<Vec<(String, String)>>,
}

impl Recording {
    fn new(inner: Arc<dyn opkit::protocol::PubSub>) -> Arc<Self> {
        Arc::new(Self {
            inner,
            published: Mutex::new(Vec::new()),
        })
    }

    fn types(&self) -> std::collections::BTreeSet<String> {
        let published = self.published.lock().unwrap();
        published.iter().map(|(_, kind)| kind.clone()).collect()
    }
}

impl opkit::protocol::PubSub for Recording {
    fn publish<'a>(
        &'a self,
        topic: &'a str,
        payload: bytes::Bytes,
    ) -> futures::future::BoxFuture<
        'a,
        Result<opkit::protocol::Receipt, opkit::protocol::TransportError>,
    > {
        let event = CallEvent::from_slice(&payload).unwrap();
        self.published
            .lock()
            .unwrap()
            .push((topic.to_owned(), event.type_name().to_owned()));
        self.inner.publish(topic, payload)
    }

    fn subscribe<'a>(
        &'a self,
        topic: &'a str,
    ) -> futures::future::BoxFuture<'a, Result<Subscription, opkit::protocol::TransportError>> {
        self.inner.subscribe(topic)
    }

    fn subscribe_group<'a>(
        &'a self,
        topic: &'a str,
        group: &'a str,
    ) -> futures::future::BoxFuture<'a, Result<Subscription, opkit::protocol::TransportError>> {
        self.inner.subscribe_group(topic, group)
    }
}

#[tokio::test]
async fn callers_publish_requests_and_aborts_handlers_publish_the_rest() {
    let (_, bus) = bus();
    let probes = Probes::default();
    let handler_side = Recording::new(bus.clone());
    let caller_side = Recording::new(bus.clone());
    let handler = CallHandler::new(registry(&probes), handler_side.clone())
        .spawn()
        .await
        .unwrap();
    let map = PendingRequestMap::connect(caller_side.clone())
        .await
        .unwrap();
    map.call("math.add", json!({"a": 1, "b": 2}), &ctx())
        .await
        .unwrap();
    map.call("test.fail", json!({}), &ctx()).await.unwrap_err();
    let items = map
        .subscribe("clock.count", json!({"to": 2}), &ctx())
        .await
        .unwrap()
        .collect::<Vec<_>>()
        .await;
    assert_eq!(items.len(), 2);
    // The caller gives up by cancelling (no deadline the handler could end the call on
    // first), so the abort is the caller's: its guard publishes `call.aborted` from a
    // spawned task.
    let token = tokio_util::sync::CancellationToken::new();
    let cancelling = OperationContext::default().with_cancellation(token.clone());
    let cancel = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(20)).await;
        token.cancel();
    });
    map.call("test.forever", json!({}), &cancelling)
        .await
        .unwrap_err();
    cancel.await.unwrap();
    protocol_support::eventually("the aborted request ended", || handler.in_flight() == 0).await;
    protocol_support::eventually("the caller published call.aborted", || {
        caller_side.types().contains("call.aborted")
    })
    .await;

    assert_eq!(
        caller_side.types().into_iter().collect::<Vec<_>>(),
        ["call.aborted", "call.requested"]
    );
    assert_eq!(
        handler_side.types().into_iter().collect::<Vec<_>>(),
        ["call.completed", "call.error", "call.responded"],
        "the handler is the only publisher of call.responded"
    );
    let caller_topics = caller_side.published.lock().unwrap().clone();
    assert!(caller_topics.iter().all(|(topic, kind)| {
        (kind == "call.requested" && topic.starts_with("opkit.request."))
            || (kind == "call.aborted" && topic == "opkit.abort.test.forever")
    }));
    let handler_topics = handler_side.published.lock().unwrap().clone();
    assert!(
        handler_topics
            .iter()
            .all(|(topic, _)| topic == map.reply_topic())
    );
}
