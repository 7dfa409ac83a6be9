//! Access rules are checked for every call that arrives through the protocol, before the
//! handler runs; `execute` stays the trusted path.

mod protocol_support;

use futures::StreamExt;
use opkit::protocol::topics::{reply_topic, request_topic};
use opkit::protocol::{CallEvent, CallHandler, CallRequested, PendingRequestMap};
use opkit::{
    AccessRule, ErrorCode, Handler, Identity, OperationContext, OperationKind, OperationRegistry,
    OperationSpec,
};
use protocol_support::{Counter, bus, next_event, publish, within};
use serde_json::json;
use std::time::Duration;

/// `users.delete` needs scope `users:write`; `admin.reset` needs role `admin` or `ops`;
/// `feed.watch` (a subscription) needs scope `feed:read`. Each counts its runs.
fn guarded_registry(calls: &Counter) -> OperationRegistry {
    let registry = OperationRegistry::new();
    let counter = calls.clone();
    registry
        .register(
            OperationSpec::new("users", "delete", OperationKind::Mutation)
                .access(AccessRule::scopes(["users:write"])),
            Handler::unary(move |_input, _ctx| {
                counter.bump();
                async move { Ok(json!("deleted")) }
            }),
        )
        .unwrap();
    let counter = calls.clone();
    registry
        .register(
            OperationSpec::new("admin", "reset", OperationKind::Mutation)
                .access(AccessRule::roles(["admin", "ops"])),
            Handler::unary(move |_input, _ctx| {
                counter.bump();
                async move { Ok(json!("reset")) }
            }),
        )
        .unwrap();
    let counter = calls.clone();
    registry
        .register(
            OperationSpec::new("feed", "watch", OperationKind::Subscription)
                .access(AccessRule::scopes(["feed:read"])),
            Handler::stream(move |_input, _ctx| {
                counter.bump();
                futures::stream::iter([Ok(json!("news"))])
            }),
        )
        .unwrap();
    registry
}

fn ctx() -> OperationContext {
    OperationContext::default().with_timeout(Duration::from_secs(20))
}

#[tokio::test]
async fn an_identity_without_the_scope_never_reaches_the_handler() {
    let (_, bus) = bus();
    let calls = Counter::default();
    let _handler = CallHandler::new(guarded_registry(&calls), bus.clone())
        .spawn()
        .await
        .unwrap();
    let map = PendingRequestMap::connect(bus).await.unwrap();

    let reader = ctx().with_identity(Identity::new("bob").with_scopes(["users:read"]));
    let denied = map
        .call("users.delete", json!({}), &reader)
        .await
        .unwrap_err();
    assert_eq!(denied.code, ErrorCode::AccessDenied);
    assert_eq!(denied.message, "identity `bob` lacks scope(s): users:write");

    let anonymous = map
        .call("users.delete", json!({}), &ctx())
        .await
        .unwrap_err();
    assert_eq!(anonymous.code, ErrorCode::AccessDenied);
    assert_eq!(calls.get(), 0, "the handler never ran");

    let writer = ctx().with_identity(Identity::new("ann").with_scopes(["users:write"]));
    let envelope = map.call("users.delete", json!({}), &writer).await.unwrap();
    assert_eq!(envelope.data, json!("deleted"));
    assert_eq!(calls.get(), 1);
}

#[tokio::test]
async fn roles_are_checked_too() {
    let (_, bus) = bus();
    let calls = Counter::default();
    let _handler = CallHandler::new(guarded_registry(&calls), bus.clone())
        .spawn()
        .await
        .unwrap();
    let map = PendingRequestMap::connect(bus).await.unwrap();
    let guest = ctx().with_identity(Identity::new("gus").with_roles(["guest"]));
    let denied = map
        .call("admin.reset", json!({}), &guest)
        .await
        .unwrap_err();
    assert_eq!(denied.code, ErrorCode::AccessDenied);
    assert!(
        denied.message.contains("holds none of the roles"),
        "{denied}"
    );
    assert_eq!(calls.get(), 0);
    let ops = ctx().with_identity(Identity::new("olga").with_roles(["ops"]));
    assert_eq!(
        map.call("admin.reset", json!({}), &ops).await.unwrap().data,
        json!("reset")
    );
    assert_eq!(calls.get(), 1);
}

#[tokio::test]
async fn subscriptions_are_checked_before_they_start() {
    let (_, bus) = bus();
    let calls = Counter::default();
    let _handler = CallHandler::new(guarded_registry(&calls), bus.clone())
        .spawn()
        .await
        .unwrap();
    let map = PendingRequestMap::connect(bus).await.unwrap();
    let stream = map
        .subscribe("feed.watch", json!({}), &ctx())
        .await
        .unwrap();
    let items: Vec<_> = within("the stream", stream.collect::<Vec<_>>()).await;
    assert_eq!(items.len(), 1);
    assert_eq!(items[0].as_ref().unwrap_err().code, ErrorCode::AccessDenied);
    assert_eq!(calls.get(), 0, "the stream handler never started");

    let reader = ctx().with_identity(Identity::new("ann").with_scopes(["feed:read"]));
    let stream = map
        .subscribe("feed.watch", json!({}), &reader)
        .await
        .unwrap();
    let items: Vec<_> = within("the stream", stream.collect::<Vec<_>>()).await;
    assert_eq!(items[0].as_ref().unwrap().data, json!("news"));
    assert_eq!(calls.get(), 1);
}

#[tokio::test]
async fn the_denial_travels_as_call_error_access_denied() {
    let (_, bus) = bus();
    let calls = Counter::default();
    let _handler = CallHandler::new(guarded_registry(&calls), bus.clone())
        .spawn()
        .await
        .unwrap();
    let mut replies = bus.subscribe(&reply_topic("tap")).await.unwrap();
    let mut request = CallRequested::new("tap:1", "users.delete", json!({}));
    request.identity = Some(Identity::new("eve"));
    publish(
        &*bus,
        &request_topic("users.delete"),
        &CallEvent::Requested(request),
    )
    .await;
    match next_event(&mut replies).await {
        CallEvent::Error(failed) => {
            assert_eq!(failed.request_id, "tap:1");
            assert_eq!(failed.code, ErrorCode::AccessDenied);
        }
        other => panic!("expected call.error, got {other:?}"),
    }
    assert_eq!(calls.get(), 0);
}

#[tokio::test]
async fn access_is_checked_before_input_validation() {
    let (_, bus) = bus();
    let calls = Counter::default();
    let registry = OperationRegistry::new();
    let counter = calls.clone();
    registry
        .register(
            OperationSpec::new("users", "rename", OperationKind::Mutation)
                .input_schema(json!({"type": "object", "required": ["name"]}))
                .access(AccessRule::scopes(["users:write"])),
            Handler::unary(move |_input, _ctx| {
                counter.bump();
                async move { Ok(json!("renamed")) }
            }),
        )
        .unwrap();
    let _handler = CallHandler::new(registry, bus.clone())
        .spawn()
        .await
        .unwrap();
    let map = PendingRequestMap::connect(bus).await.unwrap();
    // An outsider learns nothing about the input schema.
    let denied = map
        .call("users.rename", json!({}), &ctx())
        .await
        .unwrap_err();
    assert_eq!(denied.code, ErrorCode::AccessDenied);
    let writer = ctx().with_identity(Identity::new("ann").with_scopes(["users:write"]));
    let invalid = map
        .call("users.rename", json!({}), &writer)
        .await
        .unwrap_err();
    assert_eq!(invalid.code, ErrorCode::ValidationError);
    assert_eq!(calls.get(), 0);
}

#[tokio::test]
async fn execute_stays_the_trusted_path() {
    let calls = Counter::default();
    let registry = guarded_registry(&calls);
    let envelope = registry
        .execute("users.delete", json!({}), &OperationContext::default())
        .await
        .unwrap();
    assert_eq!(envelope.data, json!("deleted"));
    assert_eq!(calls.get(), 1);
}

/// A request whose bytes repeat a key (at the top or nested) never runs, whichever key it
/// repeats: a parser that keeps the last occurrence would read `root` with role `admin` in
/// each of them. One whose top level reads cleanly is answered with `VALIDATION_ERROR`
/// naming the key.
#[tokio::test]
async fn requests_that_repeat_a_key_never_run() {
    let (_, bus) = bus();
    let calls = Counter::default();
    let _handler = CallHandler::new(guarded_registry(&calls), bus.clone())
        .spawn()
        .await
        .unwrap();
    let mut replies = bus.subscribe(&reply_topic("x")).await.unwrap();
    let admin = r#"{"id":"root","roles":["admin"]}"#;
    let head = r#""type":"call.requested","operationId":"admin.reset","input":{}"#;
    let variants = [
        format!(r#"{{"type":"call.aborted",{head},"requestId":"x:1","identity":{admin}}}"#),
        format!(r#"{{{head},"requestId":"x:0","requestId":"x:2","identity":{admin}}}"#),
        format!(r#"{{{head},"requestId":"x:3","deadline":1,"deadline":null,"identity":{admin}}}"#),
        format!(
            r#"{{{head},"requestId":"x:4","subscription":"no","subscription":false,"identity":{admin}}}"#
        ),
        format!(r#"{{{head},"requestId":"x:5","identity":{{"id":"kiosk"}},"identity":{admin}}}"#),
        format!(
            r#"{{"type":"call.requested","requestId":"x:6","operationId":"users.delete","operationId":"admin.reset","input":{{}},"identity":{admin}}}"#
        ),
        format!(
            r#"{{{head},"requestId":"x:7","identity":{{"id":"kiosk","roles":[],"roles":["admin"]}}}}"#
        ),
    ];
    for variant in &variants {
        bus.publish(&request_topic("admin.reset"), variant.clone().into())
            .await
            .unwrap();
    }
    // The one whose top level is clean is refused, naming the key.
    let CallEvent::Error(refused) = next_event(&mut replies).await else {
        panic!("expected call.error");
    };
    assert_eq!(refused.request_id, "x:7");
    assert_eq!(refused.code, ErrorCode::ValidationError);
    assert!(
        refused.message.contains("`roles` appears twice"),
        "{refused:?}"
    );
    // An honest request after them runs: every variant before it was dealt with.
    let honest = CallRequested {
        identity: Some(Identity::new("root").with_roles(["admin"])),
        ..CallRequested::new("x:8", "admin.reset", json!({}))
    };
    publish(
        &*bus,
        &request_topic("admin.reset"),
        &CallEvent::Requested(honest),
    )
    .await;
    let CallEvent::Responded(answered) = next_event(&mut replies).await else {
        panic!("expected call.responded");
    };
    assert_eq!(answered.request_id, "x:8");
    assert_eq!(calls.get(), 1, "no request that repeats a key ran");
}

/// What runs is the operation of the topic the request came on: a request naming another
/// operation is refused (a bus that lets a publisher reach one operation's topic does not
/// let it reach another operation through it).
#[tokio::test]
async fn a_request_naming_another_operation_than_its_topic_never_runs() {
    let (_, bus) = bus();
    let calls = Counter::default();
    let _handler = CallHandler::new(guarded_registry(&calls), bus.clone())
        .spawn()
        .await
        .unwrap();
    let mut replies = bus.subscribe(&reply_topic("x")).await.unwrap();
    let smuggled = CallRequested {
        identity: Some(Identity::new("root").with_roles(["admin"])),
        ..CallRequested::new("x:1", "admin.reset", json!({}))
    };
    publish(
        &*bus,
        &request_topic("users.delete"),
        &CallEvent::Requested(smuggled),
    )
    .await;
    let CallEvent::Error(refused) = next_event(&mut replies).await else {
        panic!("expected call.error");
    };
    assert_eq!(refused.code, ErrorCode::ValidationError);
    assert!(
        refused.message.contains("topic of `users.delete`"),
        "{refused:?}"
    );
    assert_eq!(calls.get(), 0, "the smuggled operation never ran");
}
