//! The OpenAPI import's bounds. The response body limit of a query (declared too long, and
//! endless without a length: cut off, the connection closed). The SSE event limit against hand-written event streams on
//! 127.0.0.1: an event past the limit ends the subscription with an error naming the limit and
//! closes the connection, even when the server never stops sending. And documents: circular
//! reference chains, recursive schemas, schemas nested past the walk limit, and documents
//! nested past the parsers' limits.

#![cfg(feature = "openapi")]

use futures::StreamExt;
use opkit::{ErrorCode, OperationContext, OperationRegistry};
use opkit_adapters::openapi::{
    DEFAULT_MAX_SSE_EVENT_BYTES, OpenApiError, OpenApiImporter, OpenApiOptions,
};
use serde_json::{Value, json};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;

/// The longest any wait of a test may take before it fails (never reached when the code works).
const PATIENCE: Duration = Duration::from_secs(20);

const HEAD: &[u8] =
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";

/// The operations of `document` imported with `options`.
fn imported(document: Value, options: OpenApiOptions) -> OperationRegistry {
    let registry = OperationRegistry::new();
    OpenApiImporter::new(options)
        .import_value(document)
        .unwrap()
        .register_into(&registry)
        .unwrap();
    registry
}

fn registry(base: &str, max_event_bytes: usize) -> OperationRegistry {
    let document = json!({
        "openapi": "3.1.0",
        "paths": {"/events": {"get": {"operationId": "events", "responses": {"200": {
            "description": "ok", "content": {"text/event-stream": {}}}}}}}
    });
    let options = OpenApiOptions::new("sse")
        .base_url(base)
        .max_sse_event_bytes(max_event_bytes);
    imported(document, options)
}

/// Accepts one connection on a fresh loopback port and hands it to `respond`.
async fn serve_once<F, Fut>(respond: F) -> String
where
    F: FnOnce(TcpStream) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        if let Ok((mut socket, _)) = listener.accept().await {
            let mut buffer = vec![0u8; 8192];
            let _ = socket.read(&mut buffer).await;
            respond(socket).await;
        }
    });
    base
}

fn assert_too_large(error: &opkit::CallError, limit: usize) {
    assert_eq!(error.code, ErrorCode::ExecutionError, "{error}");
    assert!(
        error.message.contains(&format!("limit of {limit} bytes"))
            && error.message.contains("max_sse_event_bytes"),
        "{error}"
    );
    assert_eq!(
        error.details,
        Some(json!({"limit": "maxSseEventBytes", "max": limit}))
    );
}

#[tokio::test]
async fn an_event_past_the_limit_ends_the_subscription_with_an_error_naming_it() {
    let base = serve_once(|mut socket| async move {
        let mut body = HEAD.to_vec();
        body.extend_from_slice(b"data: {\"n\":1}\n\n");
        body.extend_from_slice(format!("data: {}\n\n", "x".repeat(2000)).as_bytes());
        body.extend_from_slice(b"data: {\"n\":3}\n\n");
        let _ = socket.write_all(&body).await;
        let _ = socket.shutdown().await;
    })
    .await;
    let registry = registry(&base, 1024);
    let stream = registry
        .subscribe("sse.events", json!({}), &OperationContext::default())
        .await
        .unwrap();
    let items: Vec<_> = tokio::time::timeout(PATIENCE, stream.collect::<Vec<_>>())
        .await
        .expect("the subscription ended");
    assert_eq!(items.len(), 2, "{items:?}");
    let first: Result<Value, _> = items[0].clone().map(|envelope| envelope.data);
    assert_eq!(first, Ok(json!({"n": 1})));
    assert_too_large(items[1].as_ref().unwrap_err(), 1024);
}

#[tokio::test]
async fn an_endless_event_is_cut_off_and_the_connection_closed() {
    // The server sends one `data` line that never ends; it stops only when a write fails
    // because the client closed the connection.
    let (closed_tx, closed_rx) = oneshot::channel();
    let base = serve_once(|mut socket| async move {
        let _ = socket.write_all(HEAD).await;
        let _ = socket.write_all(b"data: ").await;
        let chunk = vec![b'x'; 64 * 1024];
        while socket.write_all(&chunk).await.is_ok() {}
        let _ = closed_tx.send(());
    })
    .await;
    let limit = 256 * 1024;
    let registry = registry(&base, limit);
    let mut stream = registry
        .subscribe("sse.events", json!({}), &OperationContext::default())
        .await
        .unwrap();
    let item = tokio::time::timeout(PATIENCE, stream.next())
        .await
        .expect("an item")
        .expect("the error item");
    assert_too_large(&item.unwrap_err(), limit);
    let end = tokio::time::timeout(PATIENCE, stream.next()).await;
    assert!(matches!(end, Ok(None)), "the stream ends after the error");
    tokio::time::timeout(PATIENCE, closed_rx)
        .await
        .expect("the server saw the connection close")
        .unwrap();
}

/// A registry importing one query, `GET /blob`, from `base`.
fn blob_registry(base: &str, max_response_bytes: usize) -> OperationRegistry {
    let document = json!({
        "openapi": "3.1.0",
        "paths": {"/blob": {"get": {"operationId": "blob", "responses": {"200": {
            "description": "ok", "content": {"application/json": {}}}}}}}
    });
    let options = OpenApiOptions::new("api")
        .base_url(base)
        .max_response_bytes(max_response_bytes);
    imported(document, options)
}

fn assert_response_too_large(error: &opkit::CallError, limit: usize) {
    assert_eq!(error.code, ErrorCode::ExecutionError, "{error}");
    assert!(error.message.contains("max_response_bytes"), "{error}");
    assert_eq!(
        error.details,
        Some(json!({"limit": "maxResponseBytes", "max": limit}))
    );
}

#[tokio::test]
async fn a_response_declared_past_the_limit_is_refused_unread() {
    let base = serve_once(|mut socket| async move {
        let head =
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 10000000\r\n\r\n";
        let _ = socket.write_all(head.as_bytes()).await;
        let _ = socket.write_all(b"[").await;
        tokio::time::sleep(PATIENCE).await;
    })
    .await;
    let limit = 64 * 1024;
    let error = tokio::time::timeout(
        PATIENCE,
        blob_registry(&base, limit).execute("api.blob", json!({}), &OperationContext::default()),
    )
    .await
    .expect("refused at once")
    .unwrap_err();
    assert_response_too_large(&error, limit);
}

#[tokio::test]
async fn an_endless_response_is_cut_off_and_the_connection_closed() {
    // Chunked, no length: the server writes until the client closes the connection.
    let (closed_tx, closed_rx) = oneshot::channel();
    let base = serve_once(|mut socket| async move {
        let head = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n";
        let _ = socket.write_all(head).await;
        let chunk = format!("10000\r\n{}\r\n", "x".repeat(0x10000));
        while socket.write_all(chunk.as_bytes()).await.is_ok() {}
        let _ = closed_tx.send(());
    })
    .await;
    let limit = 1 << 20;
    let registry = blob_registry(&base, limit);
    let error = tokio::time::timeout(
        PATIENCE,
        registry.execute("api.blob", json!({}), &OperationContext::default()),
    )
    .await
    .expect("cut off")
    .unwrap_err();
    assert_response_too_large(&error, limit);
    tokio::time::timeout(PATIENCE, closed_rx)
        .await
        .expect("the server saw the connection close")
        .unwrap();
}

#[test]
fn the_default_limit_is_the_documented_one() {
    assert_eq!(DEFAULT_MAX_SSE_EVENT_BYTES, 16 * 1024 * 1024);
    assert_eq!(
        OpenApiOptions::new("x").max_sse_event_bytes,
        DEFAULT_MAX_SSE_EVENT_BYTES
    );
}

// ----- documents -----------------------------------------------------------------------------

fn importer() -> OpenApiImporter {
    OpenApiImporter::new(OpenApiOptions::new("doc").base_url("http://127.0.0.1:9"))
}

/// A document with one `POST /op` whose request body schema is `schema`.
fn document_with_body(schema: Value, components: Value) -> Value {
    json!({
        "openapi": "3.1.0",
        "components": components,
        "paths": {"/op": {"post": {"operationId": "op",
            "requestBody": {"content": {"application/json": {"schema": schema}}},
            "responses": {"200": {"description": "ok"}}}}}
    })
}

#[test]
fn a_circular_reference_chain_skips_its_operation_naming_the_cycle() {
    let document = json!({
        "openapi": "3.1.0",
        "components": {"parameters": {
            "A": {"$ref": "#/components/parameters/B"},
            "B": {"$ref": "#/components/parameters/A"}
        }},
        "paths": {"/op": {"get": {"operationId": "op",
            "parameters": [{"$ref": "#/components/parameters/A"}],
            "responses": {"200": {"description": "ok"}}}}}
    });
    let import = importer().import_value(document).unwrap();
    assert!(import.operations.is_empty());
    assert_eq!(import.skipped.len(), 1);
    let skipped = &import.skipped[0];
    assert!(skipped.reason.contains("circular"), "{skipped}");
    assert_eq!(skipped.pointer, "/paths/~1op/get/parameters/0");
}

#[test]
fn long_reference_chains_that_end_resolve() {
    // 300 parameters and 300 schemas, each a `$ref` to the next: long, but not circular.
    let mut parameters = serde_json::Map::new();
    let mut schemas = serde_json::Map::new();
    for i in 0..300 {
        parameters.insert(
            format!("P{i}"),
            json!({"$ref": format!("#/components/parameters/P{}", i + 1)}),
        );
        schemas.insert(
            format!("S{i}"),
            json!({"$ref": format!("#/components/schemas/S{}", i + 1), "description": format!("hop {i}")}),
        );
    }
    parameters.insert(
        "P300".into(),
        json!({"name": "q", "in": "query", "schema": {"$ref": "#/components/schemas/S0"}}),
    );
    schemas.insert("S300".into(), json!({"type": "integer"}));
    let document = json!({
        "openapi": "3.1.0",
        "components": {"parameters": parameters, "schemas": schemas},
        "paths": {"/op": {"get": {"operationId": "op",
            "parameters": [{"$ref": "#/components/parameters/P0"}],
            "responses": {"200": {"description": "ok"}}}}}
    });
    let import = importer().import_value(document).unwrap();
    assert!(import.skipped.is_empty(), "{:?}", import.skipped);
    let registry = OperationRegistry::new();
    import.register_into(&registry).unwrap();
    registry.validate_input("doc.op", &json!({"q": 5})).unwrap();
    assert!(
        registry
            .validate_input("doc.op", &json!({"q": "x"}))
            .is_err()
    );
}

/// Ten operations over components where each level refers to the next twice: copying each
/// reference in place would build 2^40 nodes per operation.
fn shared_components_document() -> Value {
    let mut schemas = serde_json::Map::new();
    for i in 0..40 {
        schemas.insert(
            format!("L{i}"),
            json!({"type": "object", "properties": {
                "a": {"$ref": format!("#/components/schemas/L{}", i + 1)},
                "b": {"$ref": format!("#/components/schemas/L{}", i + 1)}}}),
        );
    }
    schemas.insert("L40".into(), json!({"type": "string"}));
    let mut paths = serde_json::Map::new();
    for i in 0..10 {
        paths.insert(
            format!("/op{i}"),
            json!({"get": {"operationId": format!("op{i}"), "responses": {"200": {"description": "ok",
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/L0"}}}}}}}),
        );
    }
    json!({"openapi": "3.0.3", "components": {"schemas": schemas}, "paths": paths})
}

#[test]
fn shared_components_are_referenced_not_copied() {
    let document = shared_components_document();
    let document_size = serde_json::to_string(&document).unwrap().len();
    let import = importer().import_value(document).unwrap();
    assert_eq!(import.operations.len(), 10);
    // One copy of the definitions, shared by every operation schema of the import.
    let shared = import.operations[0]
        .spec
        .output_schema
        .definitions()
        .unwrap();
    for op in &import.operations {
        let defs = op.spec.output_schema.definitions().unwrap();
        assert!(std::sync::Arc::ptr_eq(defs, shared), "{}", op.spec.name);
    }
    for op in &import.operations {
        let size = serde_json::to_string(&op.spec.output_schema).unwrap().len();
        assert!(size < document_size, "{} is {size} bytes", op.spec.name);
        assert_eq!(
            op.spec.output_schema["$defs"].as_object().unwrap().len(),
            40
        );
    }
    let registry = OperationRegistry::new();
    import.register_into(&registry).unwrap();
}

#[test]
fn a_document_past_the_schema_budget_is_a_typed_error() {
    let error = OpenApiImporter::new(
        OpenApiOptions::new("doc")
            .base_url("http://127.0.0.1:9")
            .max_schema_nodes(500),
    )
    .import_value(shared_components_document())
    .unwrap_err();
    match &error {
        OpenApiError::SchemaBudget { limit, operations } => {
            assert_eq!(*limit, 500);
            assert!(*operations < 10, "{error}");
        }
        other => panic!("{other}"),
    }
    assert!(error.to_string().contains("max_schema_nodes"), "{error}");
}

#[test]
fn recursive_schemas_are_bundled_once_not_expanded() {
    let node = json!({"type": "object", "properties": {
        "left": {"$ref": "#/components/schemas/Node"},
        "right": {"$ref": "#/components/schemas/Node"}}});
    let document = document_with_body(
        json!({"$ref": "#/components/schemas/Node"}),
        json!({"schemas": {"Node": node}}),
    );
    let import = importer().import_value(document).unwrap();
    assert!(import.skipped.is_empty(), "{:?}", import.skipped);
    let registry = OperationRegistry::new();
    import.register_into(&registry).unwrap();
    let tree = (0..50).fold(
        json!({}),
        |inner, _| json!({"left": inner.clone(), "right": {}}),
    );
    registry
        .validate_input("doc.op", &json!({"body": tree}))
        .unwrap();
}

#[test]
fn a_schema_nested_past_the_walk_limit_skips_its_operation() {
    // 300 levels of `properties`: past the 256 levels one schema walk follows.
    let mut schema = json!({"type": "string"});
    for _ in 0..300 {
        schema = json!({"type": "object", "properties": {"a": schema}});
    }
    let import = importer()
        .import_value(document_with_body(schema, json!({})))
        .unwrap();
    assert!(import.operations.is_empty());
    assert!(
        import.skipped[0].reason.contains("nested too deeply"),
        "{}",
        import.skipped[0]
    );
}

#[test]
fn documents_nested_past_the_parsers_limits_are_parse_errors() {
    let deep_json = format!(
        r#"{{"openapi": "3.1.0", "paths": {{}}, "x-deep": {}0{}}}"#,
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    let error = importer().import_str(&deep_json).unwrap_err();
    assert!(error.to_string().contains("recursion limit"), "{error}");
    // The YAML parser would read the whole document before checking nesting, in time that
    // grows with the square of the nesting; a linear pre-check refuses it first.
    let deep_yaml = format!(
        "openapi: 3.1.0\npaths: {{}}\nx-deep: {}0{}\n",
        "[".repeat(1_000_000),
        "]".repeat(1_000_000)
    );
    let error = importer().import_str(&deep_yaml).unwrap_err();
    let message = error.to_string();
    assert!(
        message.contains("YAML") && message.contains("deeper than 128 levels"),
        "{message}"
    );
}
