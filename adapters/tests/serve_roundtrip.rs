//! Round trips: what the servers serve, imported back with opkit's own OpenAPI and MCP
//! import adapters, gives the same operations and the same data.
//!
//! Through OpenAPI the shapes change in documented ways: the operation names are the
//! sanitized ids (`math.add` → `remote.math_add`), a query or subscription also imports its
//! `POST` twin (`<name>_post`, marked `x-opkit-alias` in the document), a `POST` input sits
//! under `body`, and the data of an imported call is the served `ResponseEnvelope` (so the
//! served data is `data.data`); an imported subscription also yields the final `complete`
//! event as an item. Through MCP (2026-07-28, as rmcp negotiates with rmcp) the tools keep
//! their input and output schemas and the data is the same; a subscription becomes a query
//! returning `{items, truncated}`.
#![cfg(all(
    feature = "http-server",
    feature = "mcp-server",
    feature = "openapi",
    feature = "mcp"
))]

#[path = "../../examples/serve_fixtures.rs"]
mod serve_fixtures;
mod serve_support;

use futures::StreamExt;
use opkit::prelude::*;
use opkit_adapters::http_server::HttpServer;
use opkit_adapters::mcp::{McpConnection, McpLifecycle, McpOptions};
use opkit_adapters::mcp_server::McpServer;
use opkit_adapters::openapi::{OpenApiAuth, OpenApiImporter, OpenApiOptions};
use serde_json::{Value, json};
use serve_fixtures::{fixture_registry, fixture_tokens};
use serve_support::serve;

/// An input per fixture operation (the ones `fixture_registry(false)` holds).
fn inputs() -> Vec<(&'static str, Value)> {
    vec![
        ("math.add", json!({"a": 5, "b": -7})),
        ("math.double", json!({"n": 8})),
        ("users.create", json!({"name": "Grace"})),
        ("admin.stats", json!({})),
        ("web.health", json!({})),
        (
            "text.search",
            json!({"filter": {"prefix": "a"}, "tags": ["t"], "limit": 2}),
        ),
        ("clock.ticks", json!({"count": 3})),
    ]
}

fn admin_ctx() -> OperationContext {
    OperationContext::new().with_identity(fixture_tokens().get("admin-token").cloned().unwrap())
}

async fn local_data(registry: &OperationRegistry, id: &str, input: Value) -> Value {
    let ctx = admin_ctx();
    if registry.spec(id).unwrap().kind.is_stream() {
        let items: Vec<Value> = registry
            .subscribe(id, input, &ctx)
            .await
            .unwrap()
            .map(|item| item.unwrap().data)
            .collect()
            .await;
        json!(items)
    } else {
        registry.execute(id, input, &ctx).await.unwrap().data
    }
}

fn property_names(schema: &Value) -> Vec<String> {
    let mut names: Vec<String> = schema["properties"]
        .as_object()
        .map(|properties| properties.keys().cloned().collect())
        .unwrap_or_default();
    names.sort();
    names
}

#[tokio::test]
async fn importing_the_openapi_document_gives_the_same_operations_and_data() {
    let served_registry = fixture_registry(false);
    let served = serve(
        HttpServer::new(served_registry.clone())
            .identity_resolver(fixture_tokens())
            .router(),
    )
    .await;
    let doc: Value = reqwest::get(served.url("/openapi.json"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let options = OpenApiOptions::new("remote")
        .base_url(served.url(""))
        .auth(OpenApiAuth::new().bearer("admin-token"));
    let import = OpenApiImporter::new(options).import_value(doc).unwrap();
    assert!(import.skipped.is_empty(), "{:?}", import.skipped);
    let imported = OperationRegistry::new();
    import.register_into(&imported).unwrap();

    // Same operations: the canonical import of each served operation, plus the POST twins.
    for spec in served_registry.specs() {
        let name = spec.id().replace('.', "_");
        let twin = imported.spec(&format!("remote.{name}_post"));
        let remote = imported
            .spec(&format!("remote.{name}"))
            .unwrap_or_else(|| panic!("{} is imported", spec.id()));
        assert_eq!(remote.kind, spec.kind, "{}", spec.id());
        assert_eq!(twin.is_some(), spec.kind != OperationKind::Mutation);
        if spec.kind == OperationKind::Mutation {
            assert_eq!(remote.input_schema["required"], json!(["body"]));
            assert_eq!(
                property_names(&remote.input_schema["properties"]["body"]),
                property_names(&spec.input_schema)
            );
        } else {
            assert_eq!(
                property_names(&remote.input_schema),
                property_names(&spec.input_schema),
                "{}",
                spec.id()
            );
        }
        if !spec.kind.is_stream() && !spec.has_unknown_output() {
            // The import shares definitions through `$defs`: follow the `$ref`.
            let data = &remote.output_schema["properties"]["data"];
            let data = match data["$ref"].as_str() {
                Some(reference) => remote
                    .output_schema
                    .pointer(reference.trim_start_matches('#'))
                    .unwrap_or_else(|| panic!("{reference} resolves in {}", remote.output_schema)),
                None => data,
            };
            assert_eq!(data, &spec.output_schema, "{}", spec.id());
        }
    }
    assert_eq!(imported.len(), served_registry.len() * 2 - 1);

    // Same data.
    let ctx = OperationContext::default();
    for (id, input) in inputs() {
        let local = local_data(&served_registry, id, input.clone()).await;
        let spec = served_registry.spec(id).unwrap();
        let remote_id = format!("remote.{}", id.replace('.', "_"));
        let remote_input = if spec.kind == OperationKind::Mutation {
            json!({"body": input})
        } else {
            input.clone()
        };
        if spec.kind.is_stream() {
            let items: Vec<ResponseEnvelope> = imported
                .subscribe(&remote_id, remote_input, &ctx)
                .await
                .unwrap()
                .map(|item| item.unwrap())
                .collect()
                .await;
            let local = local.as_array().unwrap();
            // One envelope per served item, then the `complete` event.
            assert_eq!(items.len(), local.len() + 1, "{id}: {items:?}");
            for (item, expected) in items.iter().zip(local) {
                assert_eq!(item.meta.source(), "http");
                assert_eq!(&item.data["data"], expected, "{id}");
            }
            assert!(items.last().unwrap().data.get("requestId").is_some());
        } else {
            let envelope = imported
                .execute(&remote_id, remote_input, &ctx)
                .await
                .unwrap_or_else(|error| panic!("{id}: {error}"));
            assert_eq!(envelope.meta.source(), "http");
            assert_eq!(envelope.data["data"], local, "{id}");
            // The POST twin of a query answers the same.
            if spec.kind == OperationKind::Query {
                let twin = imported
                    .execute(&format!("{remote_id}_post"), json!({"body": input}), &ctx)
                    .await
                    .unwrap();
                assert_eq!(twin.data["data"], local, "{id} (POST)");
            }
        }
    }
    // Errors come back as errors: the served 400 is an EXECUTION_ERROR with the status.
    let error = imported
        .execute("remote.math_add", json!({"a": 1, "b": "x"}), &ctx)
        .await
        .unwrap_err();
    assert!(
        error.to_string().contains("400") || error.details.is_some(),
        "{error}"
    );
}

async fn check_mcp_import(connection: &McpConnection, served_registry: &OperationRegistry) {
    let imported = OperationRegistry::new();
    connection.register_into(&imported).unwrap();
    assert_eq!(imported.len(), served_registry.len());
    for spec in served_registry.specs() {
        let remote_id = connection
            .operation_id(&spec.id())
            .unwrap_or_else(|| panic!("tool {} is imported", spec.id()));
        assert_eq!(remote_id, format!("remote.{}", spec.id().replace('.', "_")));
        let remote = imported.spec(&remote_id).unwrap();
        let expected_kind = match spec.kind {
            OperationKind::Mutation => OperationKind::Mutation,
            _ => OperationKind::Query,
        };
        assert_eq!(remote.kind, expected_kind, "{}", spec.id());
        assert_eq!(remote.input_schema, spec.input_schema, "{}", spec.id());
        if spec.kind != OperationKind::Subscription {
            assert_eq!(
                remote.has_unknown_output(),
                spec.has_unknown_output(),
                "{}",
                spec.id()
            );
            if !spec.has_unknown_output() {
                assert_eq!(remote.output_schema, spec.output_schema, "{}", spec.id());
            }
        }
    }
    let ctx = OperationContext::default();
    for (id, input) in inputs() {
        let local = local_data(served_registry, id, input.clone()).await;
        let remote_id = connection.operation_id(id).unwrap();
        let envelope = imported
            .execute(&remote_id, input, &ctx)
            .await
            .unwrap_or_else(|error| panic!("{id}: {error}"));
        assert_eq!(envelope.meta.source(), "mcp");
        assert!(!envelope.is_error(), "{id}: {envelope:?}");
        if served_registry.spec(id).unwrap().kind.is_stream() {
            assert_eq!(envelope.data, json!({"items": local, "truncated": false}));
        } else {
            assert_eq!(envelope.data, local, "{id}");
        }
    }
}

#[tokio::test]
async fn importing_the_mcp_tools_gives_the_same_operations_and_data() {
    let served_registry = fixture_registry(false);
    let served = serve(
        axum::Router::new().nest(
            "/mcp",
            McpServer::new(served_registry.clone())
                .identity_resolver(fixture_tokens())
                .router(),
        ),
    )
    .await;
    let connection = McpConnection::connect_http(
        &served.url("/mcp"),
        McpOptions::new("remote")
            .bearer_token("admin-token")
            .lifecycle(McpLifecycle::Modern),
    )
    .await
    .unwrap();
    check_mcp_import(&connection, &served_registry).await;

    let stdio = McpConnection::connect_stdio(
        serve_support::example_binary("serve_stdio"),
        ["--as", "admin-token"],
        std::iter::empty::<(&str, &str)>(),
        McpOptions::new("remote").lifecycle(McpLifecycle::Modern),
    )
    .await
    .unwrap();
    // The stdio example also serves the failing fixtures.
    let registry = fixture_registry(true);
    let imported = OperationRegistry::new();
    stdio.register_into(&imported).unwrap();
    assert_eq!(imported.len(), registry.len());
    let envelope = imported
        .execute("remote.jobs_fail", json!({}), &OperationContext::default())
        .await
        .unwrap();
    assert!(
        envelope.is_error(),
        "a tool error is an envelope with isError"
    );
    assert_eq!(envelope.data["code"], "EXECUTION_ERROR");
    let envelope = imported
        .execute(
            "remote.math_add",
            json!({"a": 2, "b": 40}),
            &OperationContext::default(),
        )
        .await
        .unwrap();
    assert_eq!(envelope.data, json!({"sum": 42}));
}
