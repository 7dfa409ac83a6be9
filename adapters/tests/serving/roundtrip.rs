//! Round trips of the fixture registry (hand-written specs and dynamic handlers): what the
//! servers serve, imported back with opkit's own OpenAPI and MCP import adapters, gives the
//! same operations and the same data. `roundtrip.rs` runs the table of every operation shape
//! through both protocol eras; this one adds the dynamic fixtures and the stdio transport.
//!
//! The only changes are the documented ones: the operation names are the sanitized ids
//! (`math.add` → `remote.math_add`); through MCP a subscription becomes a query returning
//! `{items, truncated}`, and a failure is an `isError` envelope whose `CallError` comes back
//! with `call_error`.
#![cfg(all(
    feature = "http-server",
    feature = "mcp-server",
    feature = "openapi",
    feature = "mcp"
))]

use crate::serve_support;
use serve_support::serve_fixtures;

use futures::StreamExt;
use opkit::prelude::*;
use opkit_adapters::http_server::{HttpServer, OpenApiVersion};
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
    import_round_trip(OpenApiVersion::V3_1).await;
}

#[tokio::test]
async fn importing_the_openapi_3_2_document_gives_the_same_operations_and_data() {
    import_round_trip(OpenApiVersion::V3_2).await;
}

/// The served document of `version`, imported: the same operations, data and errors.
async fn import_round_trip(version: OpenApiVersion) {
    let served_registry = fixture_registry(false);
    let served = serve(
        HttpServer::new(served_registry.clone())
            .identity_resolver(fixture_tokens())
            .openapi_version(version)
            .router(),
    )
    .await;
    let doc: Value = reqwest::get(served.url("/openapi.json"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(doc["openapi"], version.as_str());
    let streams: Vec<&Value> = doc["paths"]
        .as_object()
        .unwrap()
        .values()
        .filter_map(|item| item.pointer("/post/responses/200/content/text~1event-stream"))
        .collect();
    assert!(!streams.is_empty(), "the fixtures have subscriptions");
    for stream in streams {
        let key = match version {
            OpenApiVersion::V3_2 => "itemSchema",
            _ => "schema",
        };
        assert!(stream.get(key).is_some(), "{version:?}: {stream}");
    }
    let options = OpenApiOptions::new("remote")
        .base_url(served.url(""))
        .auth(OpenApiAuth::new().bearer("admin-token"));
    let import = OpenApiImporter::new(options).import_value(doc).unwrap();
    assert!(import.skipped.is_empty(), "{:?}", import.skipped);
    let imported = OperationRegistry::new();
    import.register_into(&imported).unwrap();

    // Same operations, kinds, inputs and outputs (the `POST` twins are aliases: skipped).
    for spec in served_registry.specs() {
        let remote = imported
            .spec(&format!("remote.{}", spec.id().replace('.', "_")))
            .unwrap_or_else(|| panic!("{} is imported", spec.id()));
        assert_eq!(remote.kind, spec.kind, "{}", spec.id());
        assert_eq!(
            property_names(&remote.input_schema),
            property_names(&spec.input_schema),
            "{}",
            spec.id()
        );
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
    assert_eq!(imported.len(), served_registry.len());

    // Same data.
    let ctx = OperationContext::default();
    for (id, input) in inputs() {
        let local = local_data(&served_registry, id, input.clone()).await;
        let spec = served_registry.spec(id).unwrap();
        let remote_id = format!("remote.{}", id.replace('.', "_"));
        if spec.kind.is_stream() {
            let items: Vec<ResponseEnvelope> = imported
                .subscribe(&remote_id, input.clone(), &ctx)
                .await
                .unwrap()
                .map(|item| item.unwrap())
                .collect()
                .await;
            // One envelope per served item; the `complete` event ends the stream.
            let data: Vec<Value> = items.iter().map(|item| item.data.clone()).collect();
            assert_eq!(json!(data), local, "{id}");
            for item in &items {
                assert_eq!(item.meta.source(), "http");
            }
        } else {
            let envelope = imported
                .execute(&remote_id, input.clone(), &ctx)
                .await
                .unwrap_or_else(|error| panic!("{id}: {error}"));
            assert_eq!(envelope.meta.source(), "http");
            assert_eq!(envelope.data, local, "{id}");
        }
    }
    // Errors come back as the same errors.
    let error = imported
        .execute("remote.math_add", json!({"a": 1, "b": "x"}), &ctx)
        .await
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::ValidationError, "{error}");
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
    let error = opkit_adapters::mcp::call_error(&envelope).unwrap();
    assert_eq!(error.code, ErrorCode::ExecutionError);
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
