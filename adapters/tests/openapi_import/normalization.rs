//! What happens to an imported API's replies: cast with a warning naming the changed JSON
//! pointers (the default), validated only, or left alone — against a loopback server that
//! answers a reply which does not fit the documented schema.

#![cfg(feature = "openapi")]

use opkit::{OperationContext, OperationRegistry};
use opkit_adapters::openapi::{Normalization, OpenApiImporter, OpenApiOptions};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// Answers every connection with `body` as JSON (bounded: at most `count` connections).
async fn serve(body: Value, count: usize) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let body = body.to_string();
    tokio::spawn(async move {
        for _ in 0..count {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            let mut buffer = vec![0u8; 8192];
            let _ = socket.read(&mut buffer).await;
            let reply = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = socket.write_all(reply.as_bytes()).await;
        }
    });
    base
}

fn document() -> Value {
    json!({
        "openapi": "3.0.3",
        "components": {"schemas": {"User": {"type": "object", "required": ["id", "login"],
            "properties": {"id": {"type": "integer"}, "login": {"type": "string"}, "name": {"type": "string"}}}}},
        "paths": {"/user": {"get": {"operationId": "getUser", "responses": {"200": {"description": "ok",
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/User"}}}}}}}}
    })
}

/// WARN events, each as its message and fields.
#[derive(Clone, Default)]
struct Warnings(Arc<Mutex<Vec<String>>>);

struct Capture(Warnings);

struct Fields(String);

impl tracing::field::Visit for Fields {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        self.0.push_str(&format!("{}={value:?} ", field.name()));
    }
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Capture {
    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        if *event.metadata().level() == tracing::Level::WARN {
            let mut fields = Fields(String::new());
            event.record(&mut fields);
            self.0.0.lock().unwrap().push(fields.0);
        }
    }
}

/// Imports with `mode`, calls `getUser` twice; the data of the first call, the spec's output
/// schema and extension, and the warnings.
fn call(mode: Normalization) -> (Value, opkit::OperationSpec, Vec<String>) {
    use tracing_subscriber::layer::SubscriberExt;
    let warnings = Warnings::default();
    let subscriber = tracing_subscriber::registry().with(Capture(warnings.clone()));
    let _guard = tracing::subscriber::set_default(subscriber);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (data, spec) = runtime.block_on(async {
        let base = serve(json!({"id": "12", "name": "Ada", "plan": "pro"}), 2).await;
        let registry = OperationRegistry::new();
        OpenApiImporter::new(
            OpenApiOptions::new("api")
                .base_url(base)
                .normalization(mode),
        )
        .import_value(document())
        .unwrap()
        .register_into(&registry)
        .unwrap();
        let ctx = OperationContext::default();
        let first = registry
            .execute("api.getUser", json!({}), &ctx)
            .await
            .unwrap();
        registry
            .execute("api.getUser", json!({}), &ctx)
            .await
            .unwrap();
        (first.data, (*registry.spec("api.getUser").unwrap()).clone())
    });
    let warnings = warnings.0.lock().unwrap().clone();
    (data, spec, warnings)
}

#[test]
fn by_default_the_cast_is_applied_and_named_in_a_warning() {
    let (data, spec, warnings) = call(Normalization::On);
    assert_eq!(data, json!({"id": 0, "name": "Ada", "login": ""}));
    assert_eq!(spec.output_schema["required"], json!(["id", "login"]));
    // One warning for two calls (rate-limited), naming the operation and the pointers.
    let changed: Vec<&String> = warnings.iter().filter(|w| w.contains("changed")).collect();
    assert_eq!(changed.len(), 1, "{warnings:#?}");
    let warning = changed[0];
    for expected in [
        "operation=api.getUser",
        "dropped=[\"/plan\"]",
        "replaced=[\"/id\"]",
        "invented=[\"/login\"]",
    ] {
        assert!(warning.contains(expected), "{expected} not in {warning}");
    }
}

#[test]
fn validate_only_leaves_the_reply_and_warns_about_violations() {
    let (data, spec, warnings) = call(Normalization::ValidateOnly);
    assert_eq!(data, json!({"id": "12", "name": "Ada", "plan": "pro"}));
    assert!(spec.has_unknown_output());
    assert_eq!(
        spec.extensions["openapi"]["outputSchema"]["required"],
        json!(["id", "login"])
    );
    let violations: Vec<&String> = warnings
        .iter()
        .filter(|w| w.contains("does not match"))
        .collect();
    assert_eq!(violations.len(), 1, "{warnings:#?}");
    assert!(
        violations[0].contains("operation=api.getUser"),
        "{}",
        violations[0]
    );
    assert!(violations[0].contains("/id"), "{}", violations[0]);
}

#[test]
fn off_leaves_the_reply_alone_without_a_word() {
    let (data, spec, warnings) = call(Normalization::Off);
    assert_eq!(data, json!({"id": "12", "name": "Ada", "plan": "pro"}));
    assert!(spec.has_unknown_output());
    assert!(spec.extensions["openapi"]["outputSchema"].is_object());
    assert!(warnings.is_empty(), "{warnings:#?}");
}
