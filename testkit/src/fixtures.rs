//! The fixture operations of the serving tests and of the `serve_stdio` example, and the
//! identities of their tokens. Registered by hand with `OperationSpec` and `Handler`.

use futures::StreamExt;
use opkit::envelope::http_envelope;
use opkit::prelude::*;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::time::Duration;

fn object_schema(properties: Value, required: &[&str]) -> Value {
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false
    })
}

fn bounded_integer() -> Value {
    json!({"type": "integer", "minimum": -1_000_000_000, "maximum": 1_000_000_000})
}

/// Well-behaved operations: valid input never makes them fail (the set fuzzed by
/// schemathesis). Ids: `math.add`, `math.double`, `users.create` (needs scope
/// `users:write`), `admin.stats` (needs role `admin`), `clock.ticks` (subscription),
/// `web.health` (returns its own HTTP envelope, Unknown output), `text.search` (object and
/// array parameters).
pub fn register_core(registry: &OperationRegistry) -> Result<(), opkit::RegistryError> {
    registry.register(
        OperationSpec::new("math", "add", OperationKind::Query)
            .description("Adds two integers.")
            .input_schema(object_schema(
                json!({"a": bounded_integer(), "b": bounded_integer()}),
                &["a", "b"],
            ))
            .output_schema(object_schema(json!({"sum": {"type": "integer"}}), &["sum"])),
        Handler::unary(|input, _ctx| async move {
            let sum = input["a"].as_i64().unwrap_or(0) + input["b"].as_i64().unwrap_or(0);
            Ok(json!({"sum": sum}))
        }),
    )?;
    registry.register(
        OperationSpec::new("math", "double", OperationKind::Query)
            .description("Doubles an integer (a non-object output).")
            .input_schema(object_schema(json!({"n": bounded_integer()}), &["n"]))
            .output_schema(json!({"type": "integer"})),
        Handler::unary(
            |input, _ctx| async move { Ok(json!(input["n"].as_i64().unwrap_or(0) * 2)) },
        ),
    )?;
    registry.register(
        OperationSpec::new("users", "create", OperationKind::Mutation)
            .description("Creates a user (needs the `users:write` scope).")
            .input_schema(object_schema(
                json!({"name": {"type": "string", "minLength": 1, "maxLength": 100}}),
                &["name"],
            ))
            .output_schema(object_schema(
                json!({"id": {"type": "integer"}, "name": {"type": "string"}, "createdBy": {"type": ["string", "null"]}}),
                &["id", "name", "createdBy"],
            ))
            .access(AccessRule::scopes(["users:write"])),
        Handler::unary(|input, ctx| async move {
            let name = input["name"].as_str().unwrap_or_default().to_owned();
            let id = name.chars().count();
            let by = ctx.identity().map(|identity| identity.id.clone());
            Ok(json!({"id": id, "name": name, "createdBy": by}))
        }),
    )?;
    registry.register(
        OperationSpec::new("admin", "stats", OperationKind::Query)
            .description("Reports server statistics (needs the `admin` role).")
            .output_schema(object_schema(
                json!({"operations": {"type": "integer"}}),
                &["operations"],
            ))
            .access(AccessRule::roles(["admin"])),
        Handler::unary(|_input, _ctx| async move { Ok(json!({"operations": 7})) }),
    )?;
    registry.register(
        OperationSpec::new("clock", "ticks", OperationKind::Subscription)
            .description("Counts from 0 up to `count` (at most 20).")
            .input_schema(object_schema(
                json!({"count": {"type": "integer", "minimum": 0, "maximum": 20}}),
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
    registry.register(
        OperationSpec::new("web", "health", OperationKind::Query)
            .description("Reports health as an HTTP response would (its own envelope)."),
        Handler::unary(|_input, _ctx| async move {
            let headers =
                BTreeMap::from([("content-type".to_owned(), "application/json".to_owned())]);
            let envelope = http_envelope(json!({"status": "ok"}), 200, headers, "application/json");
            serde_json::to_value(envelope).map_err(|error| CallError::execution(error.to_string()))
        }),
    )?;
    registry.register(
        OperationSpec::new("text", "search", OperationKind::Query)
            .description("Filters a fixed word list by prefix and tags.")
            .input_schema(json!({
                "type": "object",
                "properties": {
                    "filter": {"$ref": "#/$defs/Filter"},
                    "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 5},
                    "limit": {"type": ["integer", "null"], "minimum": 0, "maximum": 10}
                },
                "required": ["filter"],
                "additionalProperties": false,
                "$defs": {
                    "Filter": {
                        "type": "object",
                        "properties": {"prefix": {"type": "string", "maxLength": 10}},
                        "required": ["prefix"]
                    }
                }
            }))
            .output_schema(json!({"type": "array", "items": {"type": "string"}})),
        Handler::unary(|input, _ctx| async move {
            let words = ["alpha", "beta", "gamma", "alphabet", "delta"];
            let prefix = input["filter"]["prefix"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            let limit = input["limit"].as_u64().unwrap_or(10) as usize;
            let found: Vec<&str> = words
                .iter()
                .copied()
                .filter(|word| word.starts_with(&prefix))
                .take(limit)
                .collect();
            Ok(json!(found))
        }),
    )?;
    Ok(())
}

/// Operations that fail on purpose or take their time: `jobs.fail` (always
/// `EXECUTION_ERROR`), `jobs.panic` (panics), `jobs.slow` (sleeps `ms` milliseconds),
/// `jobs.broken` (a subscription that fails after one item).
pub fn register_failing(registry: &OperationRegistry) -> Result<(), opkit::RegistryError> {
    registry.register(
        OperationSpec::new("jobs", "fail", OperationKind::Mutation)
            .description("Always fails.")
            .input_schema(object_schema(json!({}), &[])),
        Handler::unary(|_input, _ctx| async move { Err(CallError::execution("the job failed")) }),
    )?;
    registry.register(
        OperationSpec::new("jobs", "panic", OperationKind::Query).description("Panics."),
        Handler::unary(|_input, _ctx| async move {
            if true {
                panic!("boom");
            }
            Ok(Value::Null)
        }),
    )?;
    registry.register(
        OperationSpec::new("jobs", "slow", OperationKind::Query)
            .description("Sleeps `ms` milliseconds, then answers.")
            .input_schema(object_schema(
                json!({"ms": {"type": "integer", "minimum": 0, "maximum": 600000}}),
                &["ms"],
            ))
            .output_schema(json!({"type": "string"})),
        Handler::unary(|input, _ctx| async move {
            tokio::time::sleep(Duration::from_millis(input["ms"].as_u64().unwrap_or(0))).await;
            Ok(json!("done"))
        }),
    )?;
    registry.register(
        OperationSpec::new("jobs", "broken", OperationKind::Subscription)
            .description("Yields one item, then fails."),
        Handler::stream(|_input, _ctx| {
            futures::stream::iter([
                Ok(json!({"step": 1})),
                Err(CallError::execution("the stream broke")),
            ])
        }),
    )?;
    Ok(())
}

/// A registry with [`register_core`] and, when `failing`, [`register_failing`].
pub fn fixture_registry(failing: bool) -> OperationRegistry {
    let registry = OperationRegistry::new();
    register_core(&registry).expect("core fixtures register");
    if failing {
        register_failing(&registry).expect("failing fixtures register");
    }
    registry
}

/// The tokens of the fixtures and the identity each stands for: `writer-token` (scope
/// `users:write`), `admin-token` (scope `users:write`, role `admin`), `reader-token`
/// (nothing). The adapters' tests turn them into `StaticTokens`.
pub fn fixture_identities() -> Vec<(&'static str, Identity)> {
    vec![
        (
            "writer-token",
            Identity::new("writer").with_scopes(["users:write"]),
        ),
        (
            "admin-token",
            Identity::new("admin")
                .with_scopes(["users:write"])
                .with_roles(["admin"]),
        ),
        ("reader-token", Identity::new("reader")),
    ]
}

/// The identity of the fixture token `token`, if it is one.
pub fn fixture_identity(token: &str) -> Option<Identity> {
    fixture_identities()
        .into_iter()
        .find_map(|(known, identity)| (known == token).then_some(identity))
}
