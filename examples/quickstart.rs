//! Quickstart: declare operations with `#[operation]`, collect them with `from_inventory()`,
//! execute and subscribe, and print the envelopes.
//!
//! Run with `cargo run --example quickstart`. Needs no server.

use opkit::envelope::http_envelope;
use opkit::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::collections::BTreeMap;

/// Adds two integers.
#[operation(namespace = "math")]
async fn add(a: i64, b: i64) -> i64 {
    a + b
}

/// What `users.create` takes.
#[derive(Deserialize, Serialize, schemars::JsonSchema)]
struct NewUser {
    /// The user's display name.
    name: String,
}

/// A created user.
#[derive(Deserialize, Serialize, schemars::JsonSchema)]
struct User {
    id: u64,
    name: String,
}

/// Creates a user.
#[operation(namespace = "users", mutation, access(scopes = ["users:write"]))]
async fn create(Input(user): Input<NewUser>) -> Result<User, CallError> {
    if user.name.trim().is_empty() {
        return Err(CallError::new(
            ErrorCode::ValidationError,
            "a name is required",
        ));
    }
    Ok(User {
        id: 1,
        name: user.name,
    })
}

/// One tick of the clock.
#[derive(Serialize, schemars::JsonSchema)]
struct Tick {
    tick: u32,
}

/// Counts up to `count`.
#[operation(namespace = "clock", subscription)]
fn ticks(count: u32) -> impl Stream<Item = Tick> + Send + 'static {
    futures::stream::iter((0..count).map(|tick| Tick { tick }))
}

/// Reports health as an HTTP response would: the operation returns its own envelope.
#[operation(namespace = "web")]
async fn health() -> ResponseEnvelope<serde_json::Value> {
    let headers = BTreeMap::from([("content-type".to_owned(), "application/json".to_owned())]);
    http_envelope(json!({"status": "ok"}), 200, headers, "application/json")
}

fn print(label: &str, value: &impl Serialize) {
    let text = serde_json::to_string_pretty(value).unwrap_or_else(|error| error.to_string());
    println!("# {label}\n{text}\n");
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Every `#[operation]` linked into this program.
    let registry = OperationRegistry::from_inventory();
    let ctx = OperationContext::default();
    let ids: Vec<String> = registry.specs().iter().map(|spec| spec.id()).collect();
    println!("# operations\n{}\n", ids.join(", "));
    print("math.add spec", &add::spec());

    // Dynamic calls: JSON in, validated against the input schema, an envelope out.
    let sum = registry
        .execute("math.add", json!({"a": 2, "b": 40}), &ctx)
        .await?;
    print("math.add", &sum);
    let user = registry
        .execute("users.create", json!({"name": "Ada"}), &ctx)
        .await?;
    print("users.create", &user);
    print(
        "web.health",
        &registry.execute("web.health", json!({}), &ctx).await?,
    );

    let mut items = registry
        .subscribe("clock.ticks", json!({"count": 3}), &ctx)
        .await?;
    while let Some(item) = items.next().await {
        print("clock.ticks item", &item?);
    }

    let error = registry
        .execute("math.add", json!({"a": "two"}), &ctx)
        .await
        .unwrap_err();
    print("math.add with bad input", &error);

    // Typed calls: the fn runs directly, no JSON round trip, and the data keeps its type.
    let typed = add::call(&ctx, 2, 40).await?;
    println!("# add::call(&ctx, 2, 40).data\n{}\n", typed.data);
    Ok(())
}
