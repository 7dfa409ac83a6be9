//! The resource bounds of `opkit::limits`: each is exceeded here and gives its documented error.

mod protocol_support;
mod warnings_support;

use bytes::Bytes;
use futures::StreamExt;
use futures::future::BoxFuture;
use opkit::limits::{CAST_MAX_DEPTH, DEFAULT_MAX_PENDING, MAX_INPUT_DEPTH};
use opkit::prelude::*;
use opkit::protocol::{
    CallEvent, CallHandler, PendingOptions, PendingRequestMap, PubSub, Receipt, Subscription,
    TransportError, WireError, topics,
};
use protocol_support::{bus, eventually, next_event, within};
use serde_json::{Value, json};
use std::sync::Arc;
use warnings_support::capture_warnings;

/// `depth` arrays nested around `0` (built without `json!`, which copies its arguments
/// recursively).
fn nested_arrays(depth: usize) -> Value {
    (0..depth).fold(json!(0), |inner, _| Value::Array(vec![inner]))
}

/// The JSON text of `depth` nested arrays, without building a value.
fn nested_text(depth: usize) -> String {
    format!("{}0{}", "[".repeat(depth), "]".repeat(depth))
}

fn echo_registry() -> OperationRegistry {
    let registry = OperationRegistry::new();
    registry
        .register(
            OperationSpec::new("echo", "any", OperationKind::Query).input_schema(json!(true)),
            Handler::unary(|input, _ctx| async move { Ok(input) }),
        )
        .unwrap();
    registry
        .register(
            OperationSpec::new("echo", "items", OperationKind::Subscription)
                .input_schema(json!(true)),
            Handler::stream(|input, _ctx| futures::stream::iter([Ok(input)])),
        )
        .unwrap();
    registry
        .register(
            OperationSpec::new("echo", "deep", OperationKind::Query),
            Handler::unary(|input, _ctx| async move {
                let depth = input["depth"].as_u64().unwrap_or(0);
                Ok(nested_arrays(usize::try_from(depth).unwrap_or(0)))
            }),
        )
        .unwrap();
    registry
}

fn assert_too_deep(error: &CallError) {
    assert_eq!(error.code, ErrorCode::ValidationError, "{error}");
    assert!(
        error.message.contains("MAX_INPUT_DEPTH")
            && error.message.contains(&format!("{MAX_INPUT_DEPTH} levels")),
        "{error}"
    );
    let details = error.details.as_ref().and_then(Value::as_array).unwrap();
    assert_eq!(details.len(), 1, "{error}");
    assert_eq!(details[0]["path"], "/0".repeat(MAX_INPUT_DEPTH));
}

#[tokio::test]
async fn inputs_deeper_than_max_input_depth_are_validation_errors() {
    let registry = echo_registry();
    let ctx = OperationContext::default();
    let at_limit = nested_arrays(MAX_INPUT_DEPTH);
    let envelope = registry
        .execute("echo.any", at_limit.clone(), &ctx)
        .await
        .unwrap();
    assert_eq!(envelope.data, at_limit);
    registry.validate_input("echo.any", &at_limit).unwrap();

    let over = nested_arrays(MAX_INPUT_DEPTH + 1);
    assert_too_deep(&registry.validate_input("echo.any", &over).unwrap_err());
    assert_too_deep(
        &registry
            .execute("echo.any", over.clone(), &ctx)
            .await
            .unwrap_err(),
    );
    let Err(error) = registry.subscribe("echo.items", over, &ctx).await else {
        panic!("a subscription with a too deep input started");
    };
    assert_too_deep(&error);
}

#[tokio::test]
async fn inputs_deep_enough_to_overflow_recursive_code_are_refused_not_crashing() {
    // A million levels: a recursive walk, validation or even dropping it would overflow the
    // stack of this test thread; the registry refuses it and frees it without recursion.
    let registry = echo_registry();
    let ctx = OperationContext::default();
    let error = registry
        .execute("echo.any", nested_arrays(1_000_000), &ctx)
        .await
        .unwrap_err();
    assert_too_deep(&error);
    let error = registry
        .execute("nobody.here", nested_arrays(1_000_000), &ctx)
        .await
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::ValidationError, "{error}");
}

#[tokio::test]
async fn a_remote_call_with_a_too_deep_input_fails_before_anything_is_sent() {
    let (_, bus) = bus();
    let map = PendingRequestMap::connect(bus).await.unwrap();
    let ctx = OperationContext::default();
    // Nobody serves `echo.any`: had the request been published, the answer would be
    // OPERATION_NOT_FOUND.
    let error = map
        .call("echo.any", nested_arrays(MAX_INPUT_DEPTH + 1), &ctx)
        .await
        .unwrap_err();
    assert_too_deep(&error);
    let Err(error) = map
        .subscribe("echo.items", nested_arrays(MAX_INPUT_DEPTH + 1), &ctx)
        .await
    else {
        panic!("a subscription with a too deep input started");
    };
    assert_too_deep(&error);
    assert_eq!(map.pending_count(), 0);
}

#[test]
fn wire_events_nested_deeper_than_the_parser_accepts_are_typed_errors() {
    let text = format!(
        r#"{{"type":"call.requested","requestId":"c:1","operationId":"echo.any","input":{}}}"#,
        nested_text(200)
    );
    let error = CallEvent::from_slice(text.as_bytes()).unwrap_err();
    assert!(
        matches!(&error, WireError::NotJson(message) if message.contains("recursion limit")),
        "{error:?}"
    );
    assert_eq!(CallError::from(error).code, ErrorCode::ValidationError);
}

#[tokio::test]
async fn a_request_too_deep_for_the_parser_is_answered_not_ignored() {
    let (_, bus) = bus();
    let _handler = CallHandler::new(echo_registry(), bus.clone())
        .spawn()
        .await
        .unwrap();
    let mut replies = bus.subscribe(&topics::reply_topic("deep")).await.unwrap();
    let text = format!(
        r#"{{"type":"call.requested","requestId":"deep:1","operationId":"echo.any","input":{}}}"#,
        nested_text(10_000)
    );
    bus.publish(&topics::request_topic("echo.any"), Bytes::from(text))
        .await
        .unwrap();
    match next_event(&mut replies).await {
        CallEvent::Error(event) => {
            assert_eq!(event.request_id, "deep:1");
            let error = event.into_error();
            assert_eq!(error.code, ErrorCode::ValidationError);
            assert!(error.message.contains("recursion limit"), "{error}");
        }
        other => panic!("expected call.error, got {other:?}"),
    }
}

#[tokio::test]
async fn a_reply_too_deep_for_the_parser_fails_its_call_at_once() {
    let (_, bus) = bus();
    let _handler = CallHandler::new(echo_registry(), bus.clone())
        .spawn()
        .await
        .unwrap();
    let map = PendingRequestMap::connect(bus).await.unwrap();
    // The output itself is built in code (no input limit applies to it); `call.responded`
    // wraps it in three more levels, past what the caller's parser accepts.
    let ctx = OperationContext::default();
    let error = within(
        "the call with a too deep reply",
        map.call("echo.deep", json!({"depth": 130}), &ctx),
    )
    .await
    .unwrap_err();
    assert_eq!(error.code, ErrorCode::ValidationError, "{error}");
    assert!(
        error.message.contains("could not be decoded") && error.message.contains("recursion"),
        "{error}"
    );
    assert_eq!(map.pending_count(), 0);
}

// ----- pending requests ----------------------------------------------------------------------

/// A bus that accepts every publish and delivers nothing: calls stay pending until dropped.
struct BlackHole;

impl PubSub for BlackHole {
    fn publish<'a>(
        &'a self,
        _topic: &'a str,
        _payload: Bytes,
    ) -> BoxFuture<'a, Result<Receipt, TransportError>> {
        Box::pin(async { Ok(Receipt::unknown()) })
    }

    fn subscribe<'a>(
        &'a self,
        _topic: &'a str,
    ) -> BoxFuture<'a, Result<Subscription, TransportError>> {
        Box::pin(async { Ok(Subscription::new(futures::stream::pending())) })
    }

    fn subscribe_group<'a>(
        &'a self,
        topic: &'a str,
        _group: &'a str,
    ) -> BoxFuture<'a, Result<Subscription, TransportError>> {
        self.subscribe(topic)
    }
}

fn assert_too_many_pending(error: &CallError, max: usize) {
    assert_eq!(error.code, ErrorCode::TransportError, "{error}");
    assert!(
        error.message.contains("max_pending") && error.message.contains(&max.to_string()),
        "{error}"
    );
    assert_eq!(
        error.details,
        Some(json!({"limit": "maxPending", "max": max}))
    );
}

#[tokio::test]
async fn calls_past_max_pending_fail_at_once_and_pending_ones_are_unaffected() {
    let (_, bus) = bus();
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let registry = OperationRegistry::new();
    let opened = gate.clone();
    registry
        .register(
            OperationSpec::new("gate", "wait", OperationKind::Query),
            Handler::unary(move |_input, _ctx| {
                let gate = opened.clone();
                async move {
                    gate.acquire().await.unwrap().forget();
                    Ok(json!("passed"))
                }
            }),
        )
        .unwrap();
    let _handler = CallHandler::new(registry, bus.clone())
        .spawn()
        .await
        .unwrap();
    let map = PendingRequestMap::connect_with(bus, PendingOptions::default().with_max_pending(2))
        .await
        .unwrap();
    let ctx = OperationContext::default();
    let first = tokio::spawn({
        let (map, ctx) = (map.clone(), ctx.clone());
        async move { map.call("gate.wait", json!({}), &ctx).await }
    });
    let second = tokio::spawn({
        let (map, ctx) = (map.clone(), ctx.clone());
        async move { map.call("gate.wait", json!({}), &ctx).await }
    });
    eventually("two calls pending", || map.pending_count() == 2).await;

    let refused = map.call("gate.wait", json!({}), &ctx).await.unwrap_err();
    assert_too_many_pending(&refused, 2);
    let Err(refused) = map.subscribe("gate.wait", json!({}), &ctx).await else {
        panic!("a subscription past the limit started");
    };
    assert_too_many_pending(&refused, 2);
    assert_eq!(map.pending_count(), 2);

    gate.add_permits(2);
    for call in [first, second] {
        assert_eq!(
            within("a pending call", call).await.unwrap().unwrap().data,
            "passed"
        );
    }
    // Room again once they are done.
    gate.add_permits(1);
    let envelope = map.call("gate.wait", json!({}), &ctx).await.unwrap();
    assert_eq!(envelope.data, "passed");
}

#[tokio::test]
async fn the_default_max_pending_is_the_documented_one() {
    assert_eq!(DEFAULT_MAX_PENDING, 65_536);
    assert_eq!(PendingOptions::default().max_pending(), DEFAULT_MAX_PENDING);
    let map = PendingRequestMap::connect(Arc::new(BlackHole))
        .await
        .unwrap();
    let ctx = OperationContext::default();
    let mut calls = futures::stream::FuturesUnordered::new();
    for _ in 0..DEFAULT_MAX_PENDING {
        calls.push(map.call("void.call", json!(null), &ctx));
    }
    // Poll each call once: it registers, publishes into the void and waits.
    assert!(futures::poll!(calls.next()).is_pending());
    assert_eq!(map.pending_count(), DEFAULT_MAX_PENDING);
    let refused = map.call("void.call", json!(null), &ctx).await.unwrap_err();
    assert_too_many_pending(&refused, DEFAULT_MAX_PENDING);
    drop(calls);
    assert_eq!(map.pending_count(), 0);
}

// ----- normalization depth -------------------------------------------------------------------

#[tokio::test]
async fn outputs_deeper_than_cast_max_depth_terminate_and_the_rest_is_reported() {
    // A recursive output schema that forbids extra properties, and an output that breaks it
    // below the cast depth: cast stops descending at CAST_MAX_DEPTH, keeps the deeper part
    // as it is, and the output validation that follows warns about it.
    let schema = json!({
        "$defs": {"N": {"type": "object", "properties": {"next": {"$ref": "#/$defs/N"}},
            "additionalProperties": false}},
        "$ref": "#/$defs/N"
    });
    let levels = CAST_MAX_DEPTH + 10;
    let output = (0..levels).fold(json!({"extra": 1}), |inner, _| json!({ "next": inner }));
    let registry = OperationRegistry::new();
    let returned = output.clone();
    registry
        .register(
            OperationSpec::new("deep", "tree", OperationKind::Query).output_schema(schema),
            Handler::unary(move |_input, _ctx| {
                let returned = returned.clone();
                async move { Ok(returned) }
            }),
        )
        .unwrap();
    let (envelope, warnings) =
        capture_warnings(registry.execute("deep.tree", json!({}), &OperationContext::default()))
            .await;
    assert_eq!(envelope.unwrap().data, output);
    assert!(
        warnings.contains("deep.tree") && warnings.contains("output schema"),
        "{warnings}"
    );
}
