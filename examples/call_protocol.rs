//! The call protocol in one process: a registry served by two `CallHandler`s on one
//! `MemoryPubSub`, and a caller making calls, a subscription, a nested call and an
//! access-denied call through a `PendingRequestMap`. Prints every envelope and error.
//!
//! Run with `cargo run --example call_protocol`. Needs no server.

use futures::StreamExt;
use opkit::prelude::*;
use opkit::protocol::{CallHandler, MemoryPubSub, PendingRequestMap, PubSub};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

fn object_schema(properties: Value, required: &[&str]) -> Value {
    json!({"type": "object", "properties": properties, "required": required})
}

fn register_all(registry: &OperationRegistry) -> Result<(), opkit::RegistryError> {
    registry.register(
        OperationSpec::new("math", "add", OperationKind::Query)
            .description("Adds two integers.")
            .input_schema(object_schema(
                json!({"a": {"type": "integer"}, "b": {"type": "integer"}}),
                &["a", "b"],
            ))
            .output_schema(object_schema(json!({"sum": {"type": "integer"}}), &["sum"])),
        Handler::unary(|input, _ctx| async move {
            let sum = input["a"].as_i64().unwrap_or(0) + input["b"].as_i64().unwrap_or(0);
            Ok(json!({"sum": sum}))
        }),
    )?;
    // A nested call: `math.sum3` calls `math.add` twice through its context's env.
    registry.register(
        OperationSpec::new("math", "sum3", OperationKind::Query).input_schema(object_schema(
            json!({"a": {"type": "integer"}, "b": {"type": "integer"}, "c": {"type": "integer"}}),
            &["a", "b", "c"],
        )),
        Handler::unary(|input, ctx: OperationContext| async move {
            let env = ctx.env();
            let ab = env
                .call("math.add", json!({"a": input["a"], "b": input["b"]}))
                .await?;
            let abc = env
                .call("math.add", json!({"a": ab.data["sum"], "b": input["c"]}))
                .await?;
            Ok(json!({"sum": abc.data["sum"], "parentOfNestedCalls": ctx.request_id()}))
        }),
    )?;
    registry.register(
        OperationSpec::new("clock", "ticks", OperationKind::Subscription).input_schema(
            object_schema(
                json!({"count": {"type": "integer", "minimum": 0}}),
                &["count"],
            ),
        ),
        Handler::stream(|input, _ctx| {
            let count = input["count"].as_u64().unwrap_or(0);
            futures::stream::iter((1..=count).map(|tick| Ok(json!({"tick": tick}))))
        }),
    )?;
    registry.register(
        OperationSpec::new("users", "delete", OperationKind::Mutation)
            .access(AccessRule::scopes(["users:write"])),
        Handler::unary(|input, _ctx| async move { Ok(json!({"deleted": input["id"]})) }),
    )?;
    Ok(())
}

fn show(label: &str, result: &Result<ResponseEnvelope, CallError>) {
    match result {
        Ok(envelope) => println!(
            "{label}: {}",
            serde_json::to_string(envelope).unwrap_or_default()
        ),
        Err(error) => println!(
            "{label}: error {}",
            serde_json::to_string(error).unwrap_or_default()
        ),
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let registry = OperationRegistry::new();
    register_all(&registry)?;

    // One bus, two replicas serving the same registry: each request runs on one of them.
    let bus: Arc<dyn PubSub> = Arc::new(MemoryPubSub::new());
    let replica_a = CallHandler::new(registry.clone(), bus.clone())
        .spawn()
        .await?;
    let replica_b = CallHandler::new(registry.clone(), bus.clone())
        .spawn()
        .await?;
    println!("replicas serve: {:?}", replica_a.operations());

    // The caller: replies come back on its own topic.
    let map = PendingRequestMap::connect(bus.clone()).await?;
    println!(
        "caller {} listens on {}",
        map.caller_id(),
        map.reply_topic()
    );
    let ctx = OperationContext::default().with_timeout(Duration::from_secs(5));

    show(
        "math.add",
        &map.call("math.add", json!({"a": 2, "b": 3}), &ctx).await,
    );
    show(
        "math.add (bad input)",
        &map.call("math.add", json!({"a": "two"}), &ctx).await,
    );
    show(
        "math.missing",
        &map.call("math.missing", json!({}), &ctx).await,
    );

    // A subscription: one envelope per item, then the stream ends (call.completed).
    let mut ticks = map
        .subscribe("clock.ticks", json!({"count": 3}), &ctx)
        .await?;
    while let Some(item) = ticks.next().await {
        show("clock.ticks", &item);
    }

    // A nested call, through an env on the protocol (the same interface as a local env).
    let env = OperationEnv::remote(map.clone()).with_context(ctx.clone());
    show(
        "math.sum3 (nested)",
        &env.call("math.sum3", json!({"a": 1, "b": 2, "c": 3})).await,
    );

    // Access: checked by the handler against the caller's identity.
    show(
        "users.delete (no identity)",
        &map.call("users.delete", json!({"id": 7}), &ctx).await,
    );
    let admin = ctx
        .clone()
        .with_identity(Identity::new("ann").with_scopes(["users:write"]));
    show(
        "users.delete (ann, users:write)",
        &map.call("users.delete", json!({"id": 7}), &admin).await,
    );

    // Many calls at once, shared by the two replicas.
    let calls = (0..100).map(|i| {
        let map = map.clone();
        let ctx = ctx.clone();
        async move { map.call("math.add", json!({"a": i, "b": 1}), &ctx).await }
    });
    let ok = futures::future::join_all(calls)
        .await
        .iter()
        .filter(|result| result.is_ok())
        .count();
    println!(
        "100 concurrent calls: {ok} answered, {} still pending",
        map.pending_count()
    );

    drop((replica_a, replica_b));
    Ok(())
}
