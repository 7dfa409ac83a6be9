//! Application state reaches operations the same way on every path: `execute`, `subscribe`,
//! typed calls, nested calls through the env, and the call handler (each replica with its
//! own state); a missing state is found at startup and named.

use futures::StreamExt;
use opkit::prelude::*;
use opkit::protocol::{CallHandler, MemoryPubSub, PendingRequestMap};
use opkit::{RegistryError, State};
use serde_json::json;
use std::collections::BTreeSet;
use std::sync::Arc;

/// Which replica (registry) served a call.
#[derive(Clone)]
struct Replica(&'static str);

/// A multiplier the operations read.
#[derive(Clone)]
struct Factor(i64);

#[operation(namespace = "state")]
async fn scale(State(factor): State<Factor>, n: i64) -> i64 {
    n * factor.0
}

#[operation(namespace = "state")]
async fn who(State(replica): State<Replica>, ctx: &OperationContext) -> String {
    // The context and the parameter see the same value.
    assert_eq!(ctx.state::<Replica>().map(|r| r.0).ok(), Some(replica.0));
    replica.0.to_owned()
}

#[operation(namespace = "state", subscription)]
fn multiples(State(factor): State<Factor>, count: i64) -> impl Stream<Item = i64> + Send + 'static {
    futures::stream::iter((1..=count).map(move |n| n * factor.0))
}

/// Calls `state.scale` through the env: the nested call sees the state too.
#[operation(namespace = "state")]
async fn scale_twice(ctx: &OperationContext, n: i64) -> Result<i64, CallError> {
    let once = ctx.env().call_typed::<scale>(scale::input(n)).await?.data;
    Ok(ctx
        .env()
        .call_typed::<scale>(scale::input(once))
        .await?
        .data)
}

fn registry(factor: i64, replica: &'static str) -> OperationRegistry {
    let registry = OperationRegistry::new()
        .with_state(Factor(factor))
        .with_state(Replica(replica));
    for op in [
        OperationRegistry::register_typed::<scale>,
        OperationRegistry::register_typed::<who>,
        OperationRegistry::register_typed::<multiples>,
        OperationRegistry::register_typed::<scale_twice>,
    ] {
        op(&registry).unwrap();
    }
    registry.check_states().unwrap();
    registry
}

#[tokio::test]
async fn execute_subscribe_and_nested_calls_see_the_registrys_state() {
    let registry = registry(3, "a");
    let ctx = OperationContext::new();
    let scaled = registry
        .execute("state.scale", json!({"n": 2}), &ctx)
        .await
        .unwrap();
    assert_eq!(scaled.data, json!(6));
    let items: Vec<_> = registry
        .subscribe("state.multiples", json!({"count": 3}), &ctx)
        .await
        .unwrap()
        .map(|item| item.unwrap().data)
        .collect()
        .await;
    assert_eq!(items, [json!(3), json!(6), json!(9)]);
    let nested = registry
        .execute("state.scale_twice", json!({"n": 2}), &ctx)
        .await
        .unwrap();
    assert_eq!(nested.data, json!(18));
    // The state is not part of the input schema.
    assert_eq!(scale::spec().input_schema["required"], json!(["n"]));
    assert_eq!(scale::spec().states.len(), 1);
}

#[tokio::test]
async fn typed_calls_read_the_state_from_the_context() {
    let registry = registry(5, "a");
    assert_eq!(scale::call(&registry.context(), 2).await.unwrap().data, 10);
    let by_hand = OperationContext::new().with_state(Factor(7));
    assert_eq!(scale::call(&by_hand, 2).await.unwrap().data, 14);
    let items: Vec<i64> = multiples::subscribe(&by_hand, 2)
        .map(|item| item.unwrap().data)
        .collect()
        .await;
    assert_eq!(items, [7, 14]);

    let error = scale::call(&OperationContext::new(), 2).await.unwrap_err();
    assert_eq!(error.code, ErrorCode::ExecutionError);
    assert!(
        error
            .message
            .contains("operation `state.scale` needs the state `state::Factor`"),
        "{}",
        error.message
    );
    let failed: Vec<_> = multiples::subscribe(&OperationContext::new(), 2)
        .collect()
        .await;
    assert_eq!(failed.len(), 1);
    assert!(
        failed[0]
            .as_ref()
            .unwrap_err()
            .message
            .contains("state::Factor")
    );
}

#[tokio::test]
async fn the_registrys_state_wins_and_the_context_fills_in() {
    let registry = OperationRegistry::new().with_state(Factor(2));
    registry.register_typed::<scale>().unwrap();
    registry.register_typed::<who>().unwrap();
    // The context's Factor is overridden by the registry's; its Replica fills the gap.
    let ctx = OperationContext::new()
        .with_state(Factor(100))
        .with_state(Replica("from the caller"));
    let scaled = registry
        .execute("state.scale", json!({"n": 1}), &ctx)
        .await
        .unwrap();
    assert_eq!(scaled.data, json!(2));
    let who = registry
        .execute("state.who", json!({}), &ctx)
        .await
        .unwrap();
    assert_eq!(who.data, json!("from the caller"));
    // A state set later is seen by calls that start afterwards.
    registry.set_state(Factor(4));
    let scaled = registry
        .execute("state.scale", json!({"n": 1}), &ctx)
        .await
        .unwrap();
    assert_eq!(scaled.data, json!(4));
}

#[tokio::test]
async fn each_replica_serves_with_its_own_state() {
    let bus = Arc::new(MemoryPubSub::new());
    let _a = CallHandler::new(registry(1, "a"), bus.clone())
        .spawn()
        .await
        .unwrap();
    let _b = CallHandler::new(registry(1, "b"), bus.clone())
        .spawn()
        .await
        .unwrap();
    let env = OperationEnv::remote(PendingRequestMap::connect(bus).await.unwrap());
    let mut seen = BTreeSet::new();
    for _ in 0..200 {
        let who = env.call("state.who", json!({})).await.unwrap();
        seen.insert(who.data.as_str().unwrap().to_owned());
        if seen.len() == 2 {
            break;
        }
    }
    assert_eq!(seen, BTreeSet::from(["a".to_owned(), "b".to_owned()]));
    // A nested call inside a served handler goes to that replica's registry and state.
    let nested = env
        .call("state.scale_twice", json!({"n": 3}))
        .await
        .unwrap();
    assert_eq!(nested.data, json!(3));
}

#[tokio::test]
async fn a_missing_state_is_found_at_startup_and_named() {
    let registry = OperationRegistry::new().with_state(Replica("a"));
    registry.register_typed::<scale>().unwrap();
    registry.register_typed::<who>().unwrap();
    registry
        .register(
            OperationSpec::new("state", "dynamic", OperationKind::Query).requires_state::<Factor>(),
            Handler::unary(|_input, ctx| async move { Ok(json!(ctx.state::<Factor>()?.0)) }),
        )
        .unwrap();
    let error = registry.check_states().unwrap_err();
    let RegistryError::MissingState { missing } = &error else {
        panic!("MissingState, got {error}")
    };
    assert_eq!(
        missing,
        &[
            ("state.dynamic".to_owned(), "state::Factor"),
            ("state.scale".to_owned(), "state::Factor"),
        ]
    );
    let text = error.to_string();
    assert!(
        text.contains("operation `state.scale` needs the state `state::Factor`"),
        "{text}"
    );
    assert!(text.contains("OperationRegistry::with_state"), "{text}");

    let bus = Arc::new(MemoryPubSub::new());
    let refused = CallHandler::new(registry.clone(), bus).spawn().await;
    assert!(
        refused.is_err(),
        "a replica without its state does not start"
    );

    // The dynamic handler's lookup names the type.
    let error = registry
        .execute("state.dynamic", json!({}), &OperationContext::new())
        .await
        .unwrap_err();
    assert!(error.message.contains("state::Factor"), "{}", error.message);
    registry.set_state(Factor(9));
    registry.check_states().unwrap();
    let found = registry
        .execute("state.dynamic", json!({}), &OperationContext::new())
        .await
        .unwrap();
    assert_eq!(found.data, json!(9));
}
