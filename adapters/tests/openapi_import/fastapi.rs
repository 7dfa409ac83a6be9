//! The OpenAPI import against a real FastAPI app (uvicorn on 127.0.0.1), imported from the
//! document FastAPI serves itself: JSON, text, path/query/header/cookie parameters, JSON,
//! form and multipart bodies, binary responses, an error status, and SSE subscriptions.

#![cfg(feature = "openapi")]

use crate::openapi_support;

use futures::StreamExt;
use opkit::envelope::ResponseMeta;
use opkit::{ErrorCode, OperationContext, OperationKind, OperationRegistry};
use opkit_adapters::openapi::{OpenApiImporter, OpenApiOptions, SseReconnect};
use serde_json::{Value, json};
use std::time::Duration;

async fn import(base: &str) -> OperationRegistry {
    let registry = OperationRegistry::new();
    let import = OpenApiImporter::new(OpenApiOptions::new("fast").timeout(Duration::from_secs(20)))
        .import_url(&format!("{base}/openapi.json"))
        .await
        .expect("import the FastAPI document");
    assert!(import.skipped.is_empty(), "skipped: {:?}", import.skipped);
    import.register_into(&registry).expect("register");
    registry
}

fn http(envelope: &opkit::ResponseEnvelope) -> &opkit::envelope::HttpMeta {
    match &envelope.meta {
        ResponseMeta::Http(meta) => meta,
        other => panic!("expected http meta, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn imports_the_document_fastapi_serves() {
    let peer = openapi_support::start_fastapi().await;
    let registry = import(&peer.base_url()).await;
    let ids: Vec<String> = registry.specs().iter().map(|spec| spec.id()).collect();
    for id in [
        "fast.get_item",
        "fast.search",
        "fast.echo_path",
        "fast.hello",
        "fast.create_item",
        "fast.login",
        "fast.upload",
        "fast.blob",
        "fast.teapot",
        "fast.events",
        "fast.forever",
        "fast.streams",
    ] {
        assert!(ids.contains(&id.to_owned()), "{id} missing from {ids:?}");
    }
    let kind = |id: &str| registry.spec(id).unwrap().kind;
    assert_eq!(kind("fast.get_item"), OperationKind::Query);
    assert_eq!(kind("fast.create_item"), OperationKind::Mutation);
    assert_eq!(kind("fast.events"), OperationKind::Subscription);

    let get_item = registry.spec("fast.get_item").unwrap();
    assert_eq!(get_item.description.as_deref(), Some("Reads one item"));
    let input = &get_item.input_schema;
    assert_eq!(input["required"], json!(["item_id"]));
    for property in ["item_id", "q", "verbose", "x-token", "session"] {
        assert!(
            input["properties"].get(property).is_some(),
            "{property} in {input}"
        );
    }
    assert_eq!(get_item.extensions["openapi"]["method"], "GET");
    assert_eq!(get_item.extensions["openapi"]["path"], "/items/{item_id}");

    // The body schema is resolved from components (no $ref into the document left).
    let create = registry.spec("fast.create_item").unwrap();
    assert_eq!(create.input_schema["required"], json!(["body"]));
    assert_eq!(
        create.input_schema["properties"]["body"]["properties"]["name"]["type"],
        "string"
    );
    // Nested components are shared through the schema's own `$defs`.
    let item = &create.output_schema["properties"]["item"];
    assert_eq!(item["$ref"], "#/$defs/Item");
    assert_eq!(
        create.output_schema["$defs"]["Item"]["properties"]["price"]["type"],
        "number"
    );
    assert!(!create.output_schema.to_string().contains("#/components"));
    // SSE: the output schema is the 3.2 itemSchema's data schema.
    let events = registry.spec("fast.events").unwrap();
    assert_eq!(events.output_schema["properties"]["n"]["type"], "integer");
    // Text and binary outputs.
    assert_eq!(
        registry.spec("fast.hello").unwrap().output_schema["type"],
        "string"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_with_parameters_bodies_and_errors() {
    let peer = openapi_support::start_fastapi().await;
    let registry = import(&peer.base_url()).await;
    let ctx = OperationContext::default().with_timeout(Duration::from_secs(30));

    // Path, query, header and cookie parameters; JSON response.
    let envelope = registry
        .execute("fast.get_item", json!({"item_id": 42, "q": "a b&c", "verbose": true, "x-token": "secret", "session": "s1"}), &ctx)
        .await
        .unwrap();
    assert_eq!(
        envelope.data,
        json!({"item_id": 42, "q": "a b&c", "verbose": true, "x_token": "secret", "session": "s1"})
    );
    let meta = http(&envelope);
    assert_eq!(meta.status_code, 200);
    assert_eq!(meta.content_type, "application/json");
    assert_eq!(meta.headers["content-type"], "application/json");
    assert!(meta.headers.contains_key("content-length"));

    // Arrays in the query are repeated keys (form, exploded).
    let envelope = registry
        .execute(
            "fast.search",
            json!({"tags": ["x", "y z"], "limit": 5}),
            &ctx,
        )
        .await
        .unwrap();
    assert_eq!(envelope.data, json!({"tags": ["x", "y z"], "limit": 5}));

    // Path values are percent-encoded, so `?`, `#` and spaces do not change the route. (An
    // encoded `/` is sent as `%2F` too, but ASGI servers decode it before routing, so it is
    // covered by the unit tests of the parameter styles instead.)
    let envelope = registry
        .execute("fast.echo_path", json!({"path_part": "a b?c#d%"}), &ctx)
        .await
        .unwrap();
    assert_eq!(envelope.data, json!({"path_part": "a b?c#d%"}));

    // Text response.
    let envelope = registry
        .execute("fast.hello", json!({"name": "Ada"}), &ctx)
        .await
        .unwrap();
    assert_eq!(envelope.data, json!("Hello, Ada!"));
    assert!(http(&envelope).content_type.starts_with("text/plain"));

    // JSON request body; 201.
    let envelope = registry
        .execute(
            "fast.create_item",
            json!({"body": {"name": "pen", "price": 1.5, "tags": ["a"]}}),
            &ctx,
        )
        .await
        .unwrap();
    assert_eq!(http(&envelope).status_code, 201);
    assert_eq!(
        envelope.data,
        json!({"id": 7, "item": {"name": "pen", "price": 1.5, "tags": ["a"], "note": null}})
    );

    // Form-urlencoded body.
    let envelope = registry
        .execute(
            "fast.login",
            json!({"body": {"username": "ada", "remember": true}}),
            &ctx,
        )
        .await
        .unwrap();
    assert_eq!(envelope.data, json!({"username": "ada", "remember": true}));

    // Multipart body: the binary field takes base64.
    let envelope = registry
        .execute(
            "fast.upload",
            json!({"body": {"file": "aGVsbG8=", "description": "greeting"}}),
            &ctx,
        )
        .await
        .unwrap();
    assert_eq!(
        envelope.data,
        json!({"size": 5, "description": "greeting", "text": "hello"})
    );

    // Binary response: base64.
    let envelope = registry
        .execute("fast.blob", json!({}), &ctx)
        .await
        .unwrap();
    assert_eq!(envelope.data, json!("AAH/"));
    assert_eq!(http(&envelope).content_type, "application/octet-stream");

    // Error status: EXECUTION_ERROR with status and body in details.
    let error = registry
        .execute("fast.teapot", json!({}), &ctx)
        .await
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::ExecutionError);
    assert!(error.message.contains("418"), "{}", error.message);
    let details = error.details.unwrap();
    assert_eq!(details["status"], 418);
    assert_eq!(details["body"], json!({"detail": "I'm a teapot"}));
    // Input validation against the imported schema, before any request: a missing path
    // parameter, a value above the documented `maximum`, an undeclared property.
    for input in [json!({"q": "x"}), json!({"item_id": 1, "unknown": 1})] {
        let error = registry
            .execute("fast.get_item", input, &ctx)
            .await
            .unwrap_err();
        assert_eq!(error.code, ErrorCode::ValidationError);
    }
    let error = registry
        .execute("fast.search", json!({"limit": 1000}), &ctx)
        .await
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::ValidationError);
    assert_eq!(error.details.unwrap()[0]["path"], "/limit");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sse_yields_one_envelope_per_event_and_skips_malformed_frames() {
    let peer = openapi_support::start_fastapi().await;
    let registry = import(&peer.base_url()).await;
    let ctx = OperationContext::default().with_timeout(Duration::from_secs(30));
    let stream = registry
        .subscribe("fast.events", json!({"count": 3}), &ctx)
        .await
        .unwrap();
    let items: Vec<_> = stream.collect().await;
    let envelopes: Vec<_> = items.into_iter().map(|item| item.expect("event")).collect();
    // Three ticks; the non-JSON "noise" frame is skipped with a warning.
    let data: Vec<&Value> = envelopes.iter().map(|e| &e.data).collect();
    assert_eq!(
        data,
        [
            &json!({"n": 0, "label": "tick 0"}),
            &json!({"n": 1, "label": "tick 1"}),
            &json!({"n": 2, "label": "tick 2"})
        ]
    );
    for envelope in &envelopes {
        let meta = http(envelope);
        assert_eq!(meta.content_type, "text/event-stream");
        assert_eq!(meta.status_code, 200);
        assert!(meta.headers["content-type"].starts_with("text/event-stream"));
        // The event's own fields, as an EventSource exposes them.
        let sse = meta.sse.as_ref().expect("the sse meta");
        assert_eq!(sse.event, "message");
        assert_eq!(sse.id, None);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_stream_resumes_with_last_event_id_after_the_retry_delay() {
    let peer = openapi_support::start_fastapi().await;
    let registry = import(&peer.base_url()).await;
    let ctx = OperationContext::default().with_timeout(Duration::from_secs(60));
    let stream = registry
        .subscribe("fast.resumable", json!({}), &ctx)
        .await
        .unwrap();
    let items: Vec<_> = stream.collect().await;
    let envelopes: Vec<_> = items
        .into_iter()
        .map(|item| item.expect("every event, across the dropped connection"))
        .collect();
    let ns: Vec<&Value> = envelopes.iter().map(|e| &e.data["n"]).collect();
    // The server dropped the first connection after tick 2; the second starts after id 2.
    assert_eq!(ns, [0, 1, 2, 3, 4]);
    for (n, envelope) in envelopes.iter().enumerate() {
        let sse = http(envelope).sse.clone().expect("the sse meta");
        assert_eq!(sse.event, "tick");
        assert_eq!(sse.id, Some(n.to_string()));
        assert_eq!(sse.retry, Some(50));
    }
    let resumes = registry
        .execute("fast.resumes", json!({}), &ctx)
        .await
        .unwrap();
    assert_eq!(resumes.data, json!([null, "2"]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resumption_can_be_turned_off() {
    let peer = openapi_support::start_fastapi().await;
    let registry = OperationRegistry::new();
    OpenApiImporter::new(
        OpenApiOptions::new("fast")
            .timeout(Duration::from_secs(20))
            .sse_reconnect(SseReconnect::off()),
    )
    .import_url(&format!("{}/openapi.json", peer.base_url()))
    .await
    .unwrap()
    .register_into(&registry)
    .unwrap();
    let ctx = OperationContext::default().with_timeout(Duration::from_secs(60));
    let items: Vec<_> = registry
        .subscribe("fast.resumable", json!({}), &ctx)
        .await
        .unwrap()
        .collect()
        .await;
    assert_eq!(items.len(), 4, "three ticks, then the error");
    let error = items[3].as_ref().unwrap_err();
    assert_eq!(error.code, ErrorCode::TransportError, "{error}");
    let resumes = registry
        .execute("fast.resumes", json!({}), &ctx)
        .await
        .unwrap();
    assert_eq!(resumes.data, json!([null]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_a_subscription_closes_the_connection() {
    let peer = openapi_support::start_fastapi().await;
    let registry = import(&peer.base_url()).await;
    let ctx = OperationContext::default();
    let mut stream = registry
        .subscribe("fast.forever", json!({}), &ctx)
        .await
        .unwrap();
    for expected in 0..2 {
        let envelope = stream.next().await.unwrap().unwrap();
        assert_eq!(envelope.data["n"], expected);
    }
    let open = registry
        .execute("fast.streams", json!({}), &ctx)
        .await
        .unwrap();
    assert_eq!(open.data["count"], 1);
    drop(stream);
    // The server sees the disconnect and ends its generator (bounded wait).
    let mut count = Value::Null;
    for _ in 0..100 {
        count = registry
            .execute("fast.streams", json!({}), &ctx)
            .await
            .unwrap()
            .data["count"]
            .clone();
        if count == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(count, 0, "the event stream is still open on the server");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_yaml_copy_of_the_document_imports_the_same_operations() {
    let peer = openapi_support::start_fastapi().await;
    let text = reqwest::get(format!("{}/openapi.json", peer.base_url()))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let value: Value = serde_json::from_str(&text).unwrap();
    let yaml = serde_norway::to_string(&value).unwrap();
    let options = OpenApiOptions::new("fast").base_url(peer.base_url());
    let from_yaml = OpenApiImporter::new(options.clone())
        .import_str(&yaml)
        .unwrap();
    let from_json = OpenApiImporter::new(options).import_str(&text).unwrap();
    assert_eq!(from_yaml.ids(), from_json.ids());
    let specs = |import: &opkit_adapters::openapi::OpenApiImport| -> Vec<Value> {
        import
            .operations
            .iter()
            .map(|op| serde_json::to_value(&op.spec).unwrap())
            .collect()
    };
    assert_eq!(specs(&from_yaml), specs(&from_json));
    // Without a base URL a document read from a string has nothing to resolve `/` against.
    let unusable = OpenApiImporter::new(OpenApiOptions::new("fast"))
        .import_str(&text)
        .unwrap();
    assert!(unusable.operations.is_empty());
    assert!(!unusable.skipped.is_empty());
    assert!(
        unusable
            .skipped
            .iter()
            .all(|skip| skip.reason.contains("base_url")),
        "{:?}",
        unusable.skipped
    );

    let registry = OperationRegistry::new();
    from_yaml.register_into(&registry).unwrap();
    let envelope = registry
        .execute(
            "fast.hello",
            json!({"name": "YAML"}),
            &OperationContext::default(),
        )
        .await
        .unwrap();
    assert_eq!(envelope.data, json!("Hello, YAML!"));
}
