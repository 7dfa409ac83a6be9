//! `OperationEnv` over a local registry and over the call protocol: the same interface, and
//! nested calls carry the parent request id, the identity and the remaining deadline.

mod protocol_support;

use futures::StreamExt;
use opkit::protocol::{CallHandler, PendingRequestMap};
use opkit::{
    AccessRule, CallError, Handler, Identity, OperationContext, OperationEnv, OperationKind,
    OperationRegistry, OperationSpec,
};
use protocol_support::{Probes, bus, registry, within};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What the same code sees through either env.
async fn exercise(env: &OperationEnv) -> Vec<Value> {
    let sum = env
        .call("math.add", json!({"a": 20, "b": 22}))
        .await
        .unwrap();
    let invalid = env.call("math.add", json!({"a": "x"})).await.unwrap_err();
    let count: Vec<Value> = within(
        "a subscription",
        env.subscribe("clock.count", json!({"to": 3}))
            .await
            .unwrap()
            .map(|item| item.unwrap().data)
            .collect::<Vec<_>>(),
    )
    .await;
    vec![
        sum.data,
        json!(invalid.code),
        Value::Array(count),
        json!(sum.meta.source()),
    ]
}

#[tokio::test]
async fn local_and_remote_envs_offer_the_same_interface() {
    let registry = registry(&Probes::default());
    let local = exercise(&OperationEnv::local(registry.clone())).await;

    let (_, bus) = bus();
    let _handler = CallHandler::new(registry, bus.clone())
        .spawn()
        .await
        .unwrap();
    let remote = OperationEnv::remote(PendingRequestMap::connect(bus).await.unwrap());
    assert_eq!(exercise(&remote).await, local);
    assert_eq!(
        local,
        [
            json!({"sum": 42}),
            json!("VALIDATION_ERROR"),
            json!([1, 2, 3]),
            json!("local")
        ]
    );
}

/// What the inner operation saw of its call.
#[derive(Debug, Clone, PartialEq)]
struct Seen {
    request_id: String,
    parent_request_id: Option<String>,
    identity: Option<Identity>,
    deadline: Option<u64>,
}

impl Seen {
    fn of(ctx: &OperationContext) -> Self {
        Self {
            request_id: ctx.request_id().to_owned(),
            parent_request_id: ctx.parent_request_id().map(str::to_owned),
            identity: ctx.identity().cloned(),
            deadline: ctx.deadline().map(|deadline| deadline.epoch_millis()),
        }
    }
}

/// `nest.outer` calls `nest.inner` through `ctx.env()`; both record what they saw. The inner
/// operation needs a scope, so a remote nested call is access-checked with the identity.
fn nesting_registry(log: &Arc<Mutex<Vec<(&'static str, Seen)>>>) -> OperationRegistry {
    let registry = OperationRegistry::new();
    let outer_log = log.clone();
    registry
        .register(
            OperationSpec::new("nest", "outer", OperationKind::Query),
            Handler::unary(move |_input, ctx: OperationContext| {
                outer_log.lock().unwrap().push(("outer", Seen::of(&ctx)));
                async move {
                    let inner = ctx.env().call("nest.inner", json!({})).await?;
                    Ok::<_, CallError>(inner.data)
                }
            }),
        )
        .unwrap();
    let inner_log = log.clone();
    registry
        .register(
            OperationSpec::new("nest", "inner", OperationKind::Query)
                .access(AccessRule::scopes(["nest:inner"])),
            Handler::unary(move |_input, ctx: OperationContext| {
                inner_log.lock().unwrap().push(("inner", Seen::of(&ctx)));
                async move { Ok(json!("inner result")) }
            }),
        )
        .unwrap();
    registry
}

fn caller_context() -> OperationContext {
    OperationContext::default()
        .with_identity(Identity::new("ann").with_scopes(["nest:inner"]))
        .with_timeout(Duration::from_secs(20))
}

fn check_nesting(log: &[(&'static str, Seen)], ctx: &OperationContext) {
    assert_eq!(log.len(), 2, "{log:?}");
    let (outer, inner) = (&log[0], &log[1]);
    assert_eq!((outer.0, inner.0), ("outer", "inner"));
    assert_eq!(
        inner.1.parent_request_id.as_deref(),
        Some(outer.1.request_id.as_str()),
        "the nested call's parent is the outer call"
    );
    assert_ne!(inner.1.request_id, outer.1.request_id);
    assert_eq!(outer.1.identity, ctx.identity().cloned());
    assert_eq!(
        inner.1.identity,
        ctx.identity().cloned(),
        "the identity travels"
    );
    let deadline = ctx.deadline().map(|deadline| deadline.epoch_millis());
    assert_eq!(outer.1.deadline, deadline);
    assert_eq!(inner.1.deadline, deadline, "the remaining deadline travels");
}

#[tokio::test]
async fn nested_calls_through_a_local_env() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let ctx = caller_context();
    let env = OperationEnv::local(nesting_registry(&log)).with_context(ctx.clone());
    assert_eq!(
        env.call("nest.outer", json!({})).await.unwrap().data,
        json!("inner result")
    );
    check_nesting(&log.lock().unwrap(), &ctx);
}

#[tokio::test]
async fn nested_calls_served_by_a_call_handler_go_to_the_local_registry() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let (_, bus) = bus();
    let _handler = CallHandler::new(nesting_registry(&log), bus.clone())
        .spawn()
        .await
        .unwrap();
    let map = PendingRequestMap::connect(bus).await.unwrap();
    let ctx = caller_context();
    let env = OperationEnv::remote(map.clone()).with_context(ctx.clone());
    assert_eq!(
        env.call("nest.outer", json!({})).await.unwrap().data,
        json!("inner result")
    );
    let log = log.lock().unwrap();
    check_nesting(&log, &ctx);
    // The outer call came over the wire: its request id is the protocol's.
    assert!(
        log[0]
            .1
            .request_id
            .starts_with(&format!("{}:", map.caller_id()))
    );
    assert_eq!(
        log[0].1.parent_request_id, None,
        "a top-level call has no parent"
    );
}

#[tokio::test]
async fn nested_calls_through_the_protocol() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let (_, bus) = bus();
    // The handler's nested calls go out over the bus through their own map.
    let nested = PendingRequestMap::connect(bus.clone()).await.unwrap();
    let _handler = CallHandler::new(nesting_registry(&log), bus.clone())
        .with_env(Arc::new(nested.clone()))
        .spawn()
        .await
        .unwrap();
    let map = PendingRequestMap::connect(bus).await.unwrap();
    let ctx = caller_context();
    let env = OperationEnv::remote(map.clone()).with_context(ctx.clone());
    assert_eq!(
        env.call("nest.outer", json!({})).await.unwrap().data,
        json!("inner result")
    );
    let log = log.lock().unwrap().clone();
    check_nesting(&log, &ctx);
    assert!(
        log[0]
            .1
            .request_id
            .starts_with(&format!("{}:", map.caller_id()))
    );
    assert!(
        log[1]
            .1
            .request_id
            .starts_with(&format!("{}:", nested.caller_id())),
        "the inner call went through the nested map"
    );

    // Over the protocol the nested call is access-checked with the caller's identity.
    let outsider = OperationContext::default()
        .with_identity(Identity::new("eve"))
        .with_timeout(Duration::from_secs(20));
    let denied = OperationEnv::remote(map)
        .with_context(outsider)
        .call("nest.outer", json!({}))
        .await
        .unwrap_err();
    assert_eq!(denied.code, opkit::ErrorCode::AccessDenied);
    assert!(denied.message.contains("nest:inner"), "{denied}");
}
