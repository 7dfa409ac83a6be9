//! Quickstart: register a few operations, execute and subscribe, print the envelopes.
//!
//! Run with `cargo run --example quickstart`. Needs no server.

use futures::StreamExt;
use opkit::envelope::http_envelope;
use opkit::prelude::*;
use serde_json::{Value, json};
use std::collections::BTreeMap;

fn object_schema(properties: Value, required: &[&str]) -> Value {
    json!({"type": "object", "properties": properties, "required": required})
}

fn register_all(registry: &OperationRegistry) -> Result<(), opkit::RegistryError> {
    // A query.
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
    // A mutation.
    registry.register(
        OperationSpec::new("users", "create", OperationKind::Mutation)
            .description("Creates a user.")
            .input_schema(object_schema(
                json!({"name": {"type": "string"}}),
                &["name"],
            ))
            .output_schema(object_schema(
                json!({"id": {"type": "integer"}, "name": {"type": "string"}}),
                &["id", "name"],
            )),
        Handler::unary(|input, _ctx| async move { Ok(json!({"id": 1, "name": input["name"]})) }),
    )?;
    // A subscription.
    registry.register(
        OperationSpec::new("clock", "ticks", OperationKind::Subscription)
            .description("Counts up to `count`.")
            .input_schema(object_schema(
                json!({"count": {"type": "integer", "minimum": 0}}),
                &["count"],
            ))
            .output_schema(object_schema(
                json!({"tick": {"type": "integer"}}),
                &["tick"],
            )),
        Handler::stream(|input, _ctx| {
            let count = input["count"].as_u64().unwrap_or(0);
            futures::stream::iter(0..count).map(|tick| Ok(json!({"tick": tick})))
        }),
    )?;
    // An operation that returns its own envelope.
    registry.register(
        OperationSpec::new("web", "health", OperationKind::Query)
            .description("Reports health as an HTTP response would."),
        Handler::unary(|_input, _ctx| async move {
            let headers =
                BTreeMap::from([("content-type".to_owned(), "application/json".to_owned())]);
            let envelope = http_envelope(json!({"status": "ok"}), 200, headers, "application/json");
            serde_json::to_value(envelope).map_err(|error| CallError::execution(error.to_string()))
        }),
    )?;
    Ok(())
}

fn print(label: &str, value: &impl serde::Serialize) {
    let text = serde_json::to_string_pretty(value).unwrap_or_else(|error| error.to_string());
    println!("# {label}\n{text}\n");
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let registry = OperationRegistry::new();
    register_all(&registry)?;
    let ctx = OperationContext::default();

    print(
        "math.add",
        &registry
            .execute("math.add", json!({"a": 2, "b": 40}), &ctx)
            .await?,
    );
    print(
        "users.create",
        &registry
            .execute("users.create", json!({"name": "Ada"}), &ctx)
            .await?,
    );
    print(
        "web.health",
        &registry.execute("web.health", json!({}), &ctx).await?,
    );

    let mut ticks = registry
        .subscribe("clock.ticks", json!({"count": 3}), &ctx)
        .await?;
    while let Some(item) = ticks.next().await {
        print("clock.ticks item", &item?);
    }

    let error = registry
        .execute("math.add", json!({"a": "two"}), &ctx)
        .await
        .unwrap_err();
    print("math.add with bad input", &error);
    Ok(())
}
