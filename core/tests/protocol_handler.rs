//! `CallHandler`: error codes, dispatch on kind, subscriptions on the wire, aborts that drop
//! the handler's future or stream, handler-side deadlines, stopping, late registrations.

mod protocol_support;

use opkit::protocol::topics::{abort_topic, reply_topic, request_topic};
use opkit::protocol::{CallEvent, CallHandler, CallRequested, PendingRequestMap};
use opkit::{Deadline, ErrorCode, Handler, OperationContext, OperationKind, OperationSpec};
use protocol_support::{
    Probes, bus, eventually, has_message, next_event, next_json, publish, registry, served, within,
};
use serde_json::json;
use std::time::Duration;

fn ctx() -> OperationContext {
    OperationContext::default().with_timeout(Duration::from_secs(20))
}

#[tokio::test]
async fn queries_and_mutations_are_answered_with_envelopes() {
    let (_, bus) = bus();
    let probes = Probes::default();
    let (_handler, map) = served(&probes, bus).await;
    let envelope = map
        .call("math.add", json!({"a": 2, "b": 40}), &ctx())
        .await
        .unwrap();
    assert_eq!(envelope.data, json!({"sum": 42}));
    assert_eq!(envelope.meta.source(), "local");
    assert_eq!(probes.calls.get(), 1);
}

#[tokio::test]
async fn errors_become_call_error_with_the_right_code() {
    let (_, bus) = bus();
    let probes = Probes::default();
    let (_handler, map) = served(&probes, bus).await;

    let invalid = map
        .call("math.add", json!({"a": "x"}), &ctx())
        .await
        .unwrap_err();
    assert_eq!(invalid.code, ErrorCode::ValidationError);
    let details = invalid.details.unwrap();
    assert_eq!(
        details.as_array().unwrap().len(),
        2,
        "every violation: {details}"
    );
    assert_eq!(
        probes.calls.get(),
        0,
        "invalid input never reaches the handler"
    );

    let failed = map.call("test.fail", json!({}), &ctx()).await.unwrap_err();
    assert_eq!(failed.code, ErrorCode::ExecutionError);
    assert_eq!(failed.message, "boom");
    assert_eq!(failed.details, Some(json!({"why": "test"})));

    let panicked = map.call("test.panic", json!({}), &ctx()).await.unwrap_err();
    assert_eq!(panicked.code, ErrorCode::ExecutionError);
    assert!(panicked.message.contains("handler exploded"), "{panicked}");

    // Calling a subscription as a query (or the reverse) is dispatched on the spec's kind:
    // `call` on a subscription gets its first item back.
    let first = map
        .call("clock.count", json!({"to": 2}), &ctx())
        .await
        .unwrap();
    assert_eq!(first.data, json!(1));

    // The handler still serves after all that.
    let envelope = map
        .call("math.add", json!({"a": 1, "b": 1}), &ctx())
        .await
        .unwrap();
    assert_eq!(envelope.data, json!({"sum": 2}));
    assert_eq!(map.pending_count(), 0);
}

#[tokio::test]
async fn an_operation_gone_from_the_registry_is_not_found() {
    let (_, bus) = bus();
    let probes = Probes::default();
    let registry = registry(&probes);
    let handler = CallHandler::new(registry.clone(), bus.clone())
        .with_refresh_interval(None)
        .spawn()
        .await
        .unwrap();
    assert!(handler.operations().contains(&"math.add".to_owned()));
    assert!(registry.unregister("math.add"));
    let map = PendingRequestMap::connect(bus).await.unwrap();
    // Still subscribed (no refresh yet): the handler answers OPERATION_NOT_FOUND.
    let error = map
        .call("math.add", json!({"a": 1, "b": 2}), &ctx())
        .await
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::OperationNotFound);
    assert_eq!(error.message, "no operation `math.add` is registered");
    // After a refresh the handler stops listening: the caller learns it from the transport.
    handler.refresh().await.unwrap();
    assert!(!handler.operations().contains(&"math.add".to_owned()));
    let error = map
        .call("math.add", json!({"a": 1, "b": 2}), &ctx())
        .await
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::OperationNotFound);
    assert!(error.message.contains("no call handler serves"), "{error}");
}

#[tokio::test]
async fn an_is_error_envelope_is_a_normal_response() {
    let (_, bus) = bus();
    let _handler = CallHandler::new(registry(&Probes::default()), bus.clone())
        .spawn()
        .await
        .unwrap();
    let map = PendingRequestMap::connect(bus).await.unwrap();
    let envelope = map.call("test.mcp_error", json!({}), &ctx()).await.unwrap();
    assert!(envelope.is_error());
    assert_eq!(envelope.meta.source(), "mcp");
    assert_eq!(envelope.data, json!("tool failed"));
}

#[tokio::test]
async fn a_subscription_is_one_responded_per_item_then_completed() {
    let (_, bus) = bus();
    let _handler = CallHandler::new(registry(&Probes::default()), bus.clone())
        .spawn()
        .await
        .unwrap();
    let mut replies = bus.subscribe(&reply_topic("tap")).await.unwrap();
    let request = CallRequested::new("tap:1", "clock.count", json!({"to": 3}));
    publish(
        &*bus,
        &request_topic("clock.count"),
        &CallEvent::Requested(request),
    )
    .await;
    for n in 1..=3 {
        match next_event(&mut replies).await {
            CallEvent::Responded(responded) => {
                assert_eq!(responded.request_id, "tap:1");
                assert_eq!(responded.output.data, json!(n));
            }
            other => panic!("expected call.responded, got {other:?}"),
        }
    }
    assert_eq!(
        next_event(&mut replies).await,
        CallEvent::completed("tap:1")
    );
    assert!(!has_message(&mut replies), "nothing after call.completed");
}

#[tokio::test]
async fn a_failing_item_ends_the_subscription_with_call_error() {
    let (_, bus) = bus();
    let _handler = CallHandler::new(registry(&Probes::default()), bus.clone())
        .spawn()
        .await
        .unwrap();
    let mut replies = bus.subscribe(&reply_topic("tap")).await.unwrap();
    let request = CallRequested::new("tap:2", "clock.fail_after", json!({"after": 2}));
    publish(
        &*bus,
        &request_topic("clock.fail_after"),
        &CallEvent::Requested(request),
    )
    .await;
    for _ in 0..2 {
        assert!(matches!(
            next_event(&mut replies).await,
            CallEvent::Responded(_)
        ));
    }
    match next_event(&mut replies).await {
        CallEvent::Error(failed) => {
            assert_eq!(failed.code, ErrorCode::ExecutionError);
            assert_eq!(failed.message, "the clock broke");
        }
        other => panic!("expected call.error, got {other:?}"),
    }

    // Through a map: the same, as stream items.
    let map = PendingRequestMap::connect(bus).await.unwrap();
    let stream = map
        .subscribe("clock.fail_after", json!({"after": 1}), &ctx())
        .await
        .unwrap();
    let items: Vec<_> = within("the stream", futures::StreamExt::collect::<Vec<_>>(stream)).await;
    assert_eq!(items.len(), 2);
    assert_eq!(
        items[1].as_ref().unwrap_err().code,
        ErrorCode::ExecutionError
    );
}

#[tokio::test]
async fn call_aborted_drops_the_handlers_future() {
    let (_, bus) = bus();
    let probes = Probes::default();
    let handler = CallHandler::new(registry(&probes), bus.clone())
        .spawn()
        .await
        .unwrap();
    let mut replies = bus.subscribe(&reply_topic("tap")).await.unwrap();
    let request = CallRequested::new("tap:3", "test.forever", json!({}));
    publish(
        &*bus,
        &request_topic("test.forever"),
        &CallEvent::Requested(request),
    )
    .await;
    eventually("the handler started", || probes.started.get() == 1).await;
    assert_eq!(handler.in_flight(), 1);
    assert_eq!(probes.dropped.get(), 0);
    publish(
        &*bus,
        &abort_topic("test.forever"),
        &CallEvent::aborted("tap:3"),
    )
    .await;
    eventually("the handler's future was dropped", || {
        probes.dropped.get() == 1
    })
    .await;
    eventually("the request is gone", || handler.in_flight() == 0).await;
    assert!(
        !has_message(&mut replies),
        "nothing is published for an aborted request"
    );
}

#[tokio::test]
async fn call_aborted_drops_the_handlers_stream() {
    let (_, bus) = bus();
    let probes = Probes::default();
    let (handler, map) = served(&probes, bus).await;
    let mut stream = map
        .subscribe("clock.endless", json!({}), &ctx())
        .await
        .unwrap();
    for n in 0..3 {
        let item = within("an item", futures::StreamExt::next(&mut stream)).await;
        assert_eq!(item.unwrap().unwrap().data, json!(n));
    }
    assert_eq!(probes.started.get(), 1);
    drop(stream); // publishes call.aborted
    eventually("the handler's stream was dropped", || {
        probes.dropped.get() == 1
    })
    .await;
    eventually("the request is gone", || handler.in_flight() == 0).await;
}

#[tokio::test]
async fn the_requests_deadline_is_enforced_by_the_handler() {
    let (_, bus) = bus();
    let probes = Probes::default();
    let handler = CallHandler::new(registry(&probes), bus.clone())
        .spawn()
        .await
        .unwrap();
    let mut replies = bus.subscribe(&reply_topic("tap")).await.unwrap();
    let mut request = CallRequested::new("tap:4", "test.forever", json!({}));
    request.deadline = Some(Deadline::after(Duration::from_millis(50)).epoch_millis());
    publish(
        &*bus,
        &request_topic("test.forever"),
        &CallEvent::Requested(request),
    )
    .await;
    match next_event(&mut replies).await {
        CallEvent::Error(failed) => {
            assert_eq!(failed.request_id, "tap:4");
            assert_eq!(failed.code, ErrorCode::Timeout);
        }
        other => panic!("expected call.error TIMEOUT, got {other:?}"),
    }
    eventually("the handler's future was dropped", || {
        probes.dropped.get() == 1
    })
    .await;
    eventually("the request is gone", || handler.in_flight() == 0).await;

    // A subscription past its deadline ends with call.error TIMEOUT too.
    let mut request = CallRequested::new("tap:5", "clock.endless", json!({}));
    request.deadline = Some(Deadline::after(Duration::from_millis(50)).epoch_millis());
    publish(
        &*bus,
        &request_topic("clock.endless"),
        &CallEvent::Requested(request),
    )
    .await;
    loop {
        match next_event(&mut replies).await {
            CallEvent::Responded(_) => {}
            CallEvent::Error(failed) => {
                assert_eq!(failed.code, ErrorCode::Timeout);
                break;
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    eventually("the handler's stream was dropped", || {
        probes.dropped.get() == 2
    })
    .await;
}

#[tokio::test]
async fn stopping_the_handler_answers_running_requests_with_aborted() {
    let (memory, bus) = bus();
    let probes = Probes::default();
    let (handler, map) = served(&probes, bus).await;
    let call = tokio::spawn({
        let map = map.clone();
        async move { map.call("test.forever", json!({}), &ctx()).await }
    });
    eventually("the handler started", || probes.started.get() == 1).await;
    handler.stop();
    let error = within("the call", call).await.unwrap().unwrap_err();
    assert_eq!(error.code, ErrorCode::Aborted);
    assert!(error.message.contains("stopped"), "{error}");
    assert_eq!(probes.dropped.get(), 1);
    eventually("the handler unsubscribed", || {
        memory.subscriber_count(&request_topic("math.add")) == 0
    })
    .await;
}

#[tokio::test]
async fn a_malformed_request_is_answered_with_validation_error() {
    let (_, bus) = bus();
    let _handler = CallHandler::new(registry(&Probes::default()), bus.clone())
        .spawn()
        .await
        .unwrap();
    let mut replies = bus.subscribe(&reply_topic("tap")).await.unwrap();
    let bad = json!({"type": "call.requested", "requestId": "tap:6", "input": {}});
    bus.publish(&request_topic("math.add"), bad.to_string().into())
        .await
        .unwrap();
    let reply = next_json(&mut replies).await;
    assert_eq!(reply["type"], "call.error");
    assert_eq!(reply["requestId"], "tap:6");
    assert_eq!(reply["code"], "VALIDATION_ERROR");
    assert_eq!(
        reply["message"],
        "`call.requested` is missing the required field `operationId`"
    );
}

#[tokio::test]
async fn operations_registered_later_are_served_after_a_refresh() {
    let (_, bus) = bus();
    let probes = Probes::default();
    let registry = registry(&probes);
    let manual = CallHandler::new(registry.clone(), bus.clone())
        .with_refresh_interval(None)
        .spawn()
        .await
        .unwrap();
    registry
        .register(
            OperationSpec::new("late", "hello", OperationKind::Query),
            Handler::unary(|_input, _ctx| async move { Ok(json!("hello")) }),
        )
        .unwrap();
    assert!(!manual.operations().contains(&"late.hello".to_owned()));
    manual.refresh().await.unwrap();
    assert!(manual.operations().contains(&"late.hello".to_owned()));
    let map = PendingRequestMap::connect(bus.clone()).await.unwrap();
    assert_eq!(
        map.call("late.hello", json!({}), &ctx())
            .await
            .unwrap()
            .data,
        json!("hello")
    );
    drop(manual);

    // With a refresh interval, the handler picks new operations up by itself.
    let periodic = CallHandler::new(registry.clone(), bus.clone())
        .with_refresh_interval(Some(Duration::from_millis(10)))
        .spawn()
        .await
        .unwrap();
    registry
        .register(
            OperationSpec::new("later", "hello", OperationKind::Query),
            Handler::unary(|_input, _ctx| async move { Ok(json!("hello again")) }),
        )
        .unwrap();
    eventually("the new operation is served", || {
        periodic.operations().contains(&"later.hello".to_owned())
    })
    .await;
    assert_eq!(
        map.call("later.hello", json!({}), &ctx())
            .await
            .unwrap()
            .data,
        json!("hello again")
    );
}

#[tokio::test(flavor = "current_thread")]
async fn an_abort_that_overtakes_its_request_still_cancels_it() {
    let (_, bus) = bus();
    let probes = Probes::default();
    let handler = CallHandler::new(registry(&probes), bus.clone())
        .spawn()
        .await
        .unwrap();
    let mut replies = bus.subscribe(&reply_topic("tap")).await.unwrap();
    publish(
        &*bus,
        &abort_topic("math.add"),
        &CallEvent::aborted("tap:7"),
    )
    .await;
    // Let the handler take the abort in before the request arrives.
    tokio::time::sleep(Duration::from_millis(20)).await;
    let request = CallRequested::new("tap:7", "math.add", json!({"a": 1, "b": 1}));
    publish(
        &*bus,
        &request_topic("math.add"),
        &CallEvent::Requested(request),
    )
    .await;
    // A later request is answered, so the first one has been seen.
    let request = CallRequested::new("tap:8", "math.add", json!({"a": 2, "b": 2}));
    publish(
        &*bus,
        &request_topic("math.add"),
        &CallEvent::Requested(request),
    )
    .await;
    match next_event(&mut replies).await {
        CallEvent::Responded(responded) => assert_eq!(responded.request_id, "tap:8"),
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(probes.calls.get(), 1, "the aborted request never ran");
    assert_eq!(handler.in_flight(), 0);
}

#[tokio::test]
async fn a_duplicate_request_id_runs_once() {
    let (_, bus) = bus();
    let probes = Probes::default();
    let handler = CallHandler::new(registry(&probes), bus.clone())
        .spawn()
        .await
        .unwrap();
    let request = CallEvent::Requested(CallRequested::new("tap:9", "test.forever", json!({})));
    publish(&*bus, &request_topic("test.forever"), &request).await;
    publish(&*bus, &request_topic("test.forever"), &request).await;
    eventually("the handler started", || probes.started.get() >= 1).await;
    // A later request proves both copies were taken in.
    let map = PendingRequestMap::connect(bus.clone()).await.unwrap();
    map.call("math.add", json!({"a": 1, "b": 1}), &ctx())
        .await
        .unwrap();
    assert_eq!(handler.in_flight(), 1);
    assert_eq!(probes.started.get(), 1);
    publish(
        &*bus,
        &abort_topic("test.forever"),
        &CallEvent::aborted("tap:9"),
    )
    .await;
    eventually("the request is gone", || handler.in_flight() == 0).await;
}

#[tokio::test]
async fn a_handler_runs_at_most_its_limit_at_once_and_the_rest_wait_on_the_bus() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let (_, bus) = bus();
    // `gate` holds every call until the test lets one through; `running` and `most` count.
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let running = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let registry = opkit::OperationRegistry::new();
    let (held, now, peak) = (gate.clone(), running.clone(), most.clone());
    registry
        .register(
            OperationSpec::new("slow", "work", OperationKind::Mutation),
            Handler::unary(move |input, _ctx| {
                let (held, now, peak) = (held.clone(), now.clone(), peak.clone());
                async move {
                    let at_once = now.fetch_add(1, Ordering::SeqCst) + 1;
                    peak.fetch_max(at_once, Ordering::SeqCst);
                    held.acquire().await.unwrap().forget();
                    now.fetch_sub(1, Ordering::SeqCst);
                    Ok(input)
                }
            }),
        )
        .unwrap();
    let handler = CallHandler::new(registry, bus.clone())
        .with_max_in_flight(3)
        .spawn()
        .await
        .unwrap();
    let map = PendingRequestMap::connect(bus).await.unwrap();
    let calls: Vec<_> = (0..10)
        .map(|n| {
            let map = map.clone();
            tokio::spawn(async move { map.call("slow.work", json!({"n": n}), &ctx()).await })
        })
        .collect();
    eventually("three calls run", || running.load(Ordering::SeqCst) == 3).await;
    eventually("all ten were published", || map.pending_count() == 10).await;
    assert_eq!(handler.in_flight(), 3, "the other seven wait on the bus");
    // One at a time: each call that ends lets exactly one more in.
    for released in 1..=10 {
        gate.add_permits(1);
        eventually("a call ended", || map.pending_count() == 10 - released).await;
        assert!(handler.in_flight() <= 3);
    }
    for call in calls {
        call.await.unwrap().unwrap();
    }
    assert_eq!(
        most.load(Ordering::SeqCst),
        3,
        "never more than three at once"
    );
}

#[tokio::test]
async fn a_subscriber_that_stops_polling_is_ended_at_its_buffer_and_the_stream_aborted() {
    let (_, bus) = bus();
    let probes = Probes::default();
    let _handler = CallHandler::new(registry(&probes), bus.clone())
        .spawn()
        .await
        .unwrap();
    let options = opkit::protocol::PendingOptions::default().with_max_stream_buffer(2048);
    let map = PendingRequestMap::connect_with(bus, options).await.unwrap();
    let mut stream = map
        .subscribe("clock.endless", json!({}), &ctx())
        .await
        .unwrap();
    // Never polled: once 2 KiB of items wait, the subscription is aborted on the bus (the
    // handler's stream is dropped) and nothing more is kept.
    eventually("the handler's stream was aborted", || {
        probes.dropped.get() == 1
    })
    .await;
    let mut items = 0;
    let error = loop {
        match within("the next item", futures::StreamExt::next(&mut stream)).await {
            Some(Ok(_)) => items += 1,
            Some(Err(error)) => break error,
            None => panic!("the stream ended without naming the limit"),
        }
    };
    assert!(items >= 1 && items * 256 <= 2048, "{items} items were kept");
    assert_eq!(error.code, ErrorCode::TransportError, "{error}");
    assert_eq!(
        error.details,
        Some(json!({"limit": "maxStreamBuffer", "max": 2048}))
    );
    assert!(
        within("the end", futures::StreamExt::next(&mut stream))
            .await
            .is_none()
    );
    assert_eq!(map.pending_count(), 0);
}
