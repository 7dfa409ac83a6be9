//! Unit tests of the importer on small documents: what becomes what, names, limits.

use super::*;
use opkit::OperationKind;
use serde_json::{Value, json};

fn import(doc: Value) -> OpenApiImport {
    OpenApiImporter::new(OpenApiOptions::new("api").base_url("http://127.0.0.1:9"))
        .import_value(doc)
        .unwrap()
}

fn op<'a>(import: &'a OpenApiImport, name: &str) -> &'a OperationSpec {
    &import
        .operations
        .iter()
        .find(|op| op.spec.name == name)
        .unwrap_or_else(|| {
            panic!(
                "{name} not in {:?} (skipped {:?})",
                import.ids(),
                import.skipped
            )
        })
        .spec
}

#[test]
fn names_kinds_and_collisions() {
    let import = import(json!({
        "openapi": "3.1.0",
        "paths": {
            "/pets": {
                "get": {"operationId": "pets.list", "responses": {"200": {"description": "ok"}}},
                "post": {"operationId": "pets-list", "responses": {"201": {"description": "ok"}}}
            },
            "/pets/{id}": {
                "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "integer"}}],
                "get": {"summary": "One pet", "description": "Reads it.", "responses": {"200": {"description": "ok", "content": {"text/event-stream": {"schema": {"type": "string"}}}}}},
                "delete": {"responses": {"204": {"description": "gone"}}}
            }
        }
    }));
    assert!(import.skipped.is_empty(), "{:?}", import.skipped);
    // Collisions: `pets.list` and `pets-list` both sanitize to `pets_list`.
    assert_eq!(
        import.ids(),
        [
            "api.pets_list",
            "api.pets_list_2",
            "api.get_pets_by_id",
            "api.delete_pets_by_id"
        ]
    );
    assert_eq!(op(&import, "pets_list").kind, OperationKind::Query);
    assert_eq!(op(&import, "pets_list_2").kind, OperationKind::Mutation);
    let stream = op(&import, "get_pets_by_id");
    assert_eq!(stream.kind, OperationKind::Subscription);
    assert_eq!(stream.description.as_deref(), Some("One pet\n\nReads it."));
    assert_eq!(stream.input_schema["required"], json!(["id"]));
    assert!(stream.has_unknown_output());
}

#[test]
fn json_or_sse_responses_give_a_call_and_its_stream_twin() {
    let both = json!({"200": {"description": "ok", "content": {
        "application/json": {"schema": {"type": "object", "properties": {"id": {"type": "string"}}}},
        "text/event-stream": {"schema": {"type": "object", "properties": {"delta": {"type": "string"}}}}
    }}});
    let import = import(json!({
        "openapi": "3.1.0",
        "paths": {
            "/chat": {"post": {"operationId": "chat", "responses": both}},
            "/other": {"get": {"operationId": "chat_stream", "responses": {"200": {"description": "ok"}}}},
            "/feed": {"get": {"operationId": "feed", "responses": {"200": {"description": "ok",
                "content": {"text/event-stream": {}}}}}}
        }
    }));
    assert!(import.skipped.is_empty(), "{:?}", import.skipped);
    // The twin takes part in collisions like any name: it comes first (`/chat` sorts
    // before `/other`), so the other `chat_stream` becomes `chat_stream_2`.
    assert_eq!(
        import.ids(),
        [
            "api.chat",
            "api.chat_stream",
            "api.feed",
            "api.chat_stream_2"
        ]
    );
    let call = op(&import, "chat");
    assert_eq!(call.kind, OperationKind::Mutation);
    assert_eq!(call.output_schema["properties"]["id"]["type"], "string");
    assert_eq!(call.extensions["openapi"]["stream"], "api.chat_stream");
    let stream = &import
        .operations
        .iter()
        .find(|op| op.spec.extensions["openapi"]["unary"] == "api.chat")
        .unwrap()
        .spec;
    assert_eq!(stream.kind, OperationKind::Subscription);
    assert_eq!(
        stream.output_schema["properties"]["delta"]["type"],
        "string"
    );
    // An SSE-only response stays one subscription, under its own name.
    assert_eq!(op(&import, "feed").kind, OperationKind::Subscription);
    assert!(
        op(&import, "feed").extensions["openapi"]
            .get("unary")
            .is_none()
    );
}

#[test]
fn unmappable_operations_are_skipped_with_the_pointer() {
    let import = import(json!({
        "openapi": "3.0.3",
        "paths": {
            "/a/{missing}": {"get": {"responses": {}}},
            "/b": {"get": {"parameters": [{"name": "x", "in": "query", "style": "matrix", "schema": {"type": "string"}}], "responses": {}}},
            "/c": {"get": {"responses": {"200": {"description": "ok", "content": {"application/json": {"schema": {"$ref": "other.yaml#/Pet"}}}}}}},
            "/d": {"get": {"parameters": [{"$ref": "#/components/parameters/Nope"}], "responses": {}}},
            "/e": {"get": {"parameters": [{"name": "x", "in": "body"}], "responses": {}}},
            "/ok": {"get": {"responses": {"200": {"description": "ok"}}}}
        }
    }));
    assert_eq!(import.ids(), ["api.get_ok"]);
    let skipped: Vec<(String, String)> = import
        .skipped
        .iter()
        .map(|s| (s.path.clone(), s.pointer.clone()))
        .collect();
    assert_eq!(
        skipped,
        [
            (
                "/a/{missing}".to_owned(),
                "/paths/~1a~1{missing}/get".to_owned()
            ),
            (
                "/b".to_owned(),
                "/paths/~1b/get/parameters/0/style".to_owned()
            ),
            (
                "/c".to_owned(),
                "/paths/~1c/get/responses/200/content/application~1json/schema/$ref".to_owned()
            ),
            (
                "/d".to_owned(),
                "/paths/~1d/get/parameters/0/$ref".to_owned()
            ),
            ("/e".to_owned(), "/paths/~1e/get/parameters/0/in".to_owned()),
        ]
    );
    for skip in &import.skipped {
        assert!(skip.to_string().contains("skipped"), "{skip}");
    }
}

#[test]
fn parameters_body_and_ignored_headers() {
    let import = import(json!({
        "openapi": "3.0.3",
        "components": {
            "schemas": {"Pet": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}, "age": {"type": "integer", "nullable": true, "minimum": 0, "exclusiveMinimum": true}}}},
            "requestBodies": {"Pet": {"required": true, "content": {"application/xml": {}, "application/json": {"schema": {"$ref": "#/components/schemas/Pet"}}}}}
        },
        "paths": {"/pets/{id}": {"put": {
            "parameters": [
                {"name": "id", "in": "path", "required": true, "schema": {"type": "string"}},
                {"name": "id", "in": "query", "schema": {"type": "string"}},
                {"name": "body", "in": "header", "schema": {"type": "string"}},
                {"name": "Accept", "in": "header", "schema": {"type": "string"}},
                {"name": "authorization", "in": "header", "schema": {"type": "string"}},
                {"name": "filter", "in": "query", "content": {"application/json": {"schema": {"type": "object"}}}}
            ],
            "requestBody": {"$ref": "#/components/requestBodies/Pet"},
            "responses": {"200": {"description": "ok", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Pet"}}}}}
        }}}
    }));
    let spec = op(&import, "put_pets_by_id");
    let properties = spec.input_schema["properties"].as_object().unwrap();
    let names: Vec<&str> = properties.keys().map(String::as_str).collect();
    for expected in ["id", "query_id", "header_body", "filter", "body"] {
        assert!(names.contains(&expected), "{expected} not in {names:?}");
    }
    assert!(!names.contains(&"Accept") && !names.contains(&"authorization"));
    assert_eq!(spec.input_schema["required"], json!(["id", "body"]));
    assert_eq!(spec.input_schema["additionalProperties"], false);
    // The 3.0 schema is converted to 2020-12 and inlined.
    assert_eq!(
        properties["body"]["properties"]["age"],
        json!({"type": ["integer", "null"], "exclusiveMinimum": 0})
    );
    assert_eq!(spec.output_schema["required"], json!(["name"]));
}

#[test]
fn openapi_3_2_item_schema_query_method_and_querystring() {
    let import = import(json!({
        "openapi": "3.2.0",
        "paths": {
            "/events": {"get": {"operationId": "events", "responses": {"200": {"description": "ok", "content": {"text/event-stream": {"itemSchema": {
                "type": "object", "required": ["data"],
                "properties": {"data": {"type": "string", "contentMediaType": "application/json", "contentSchema": {"type": "object", "properties": {"n": {"type": "integer"}}}}, "event": {"type": "string"}}
            }}}}}}},
            "/search": {
                "query": {"operationId": "search", "requestBody": {"content": {"application/json": {"schema": {"type": "object"}}}}, "responses": {"200": {"description": "ok"}}},
                "additionalOperations": {"PURGE": {"operationId": "purge", "responses": {"204": {"description": "gone"}}}}
            },
            "/raw": {"get": {"operationId": "raw", "parameters": [{"name": "q", "in": "querystring", "content": {"application/x-www-form-urlencoded": {"schema": {"type": "object"}}}}], "responses": {"200": {"description": "ok"}}}}
        }
    }));
    assert!(import.skipped.is_empty(), "{:?}", import.skipped);
    let events = op(&import, "events");
    assert_eq!(events.kind, OperationKind::Subscription);
    assert_eq!(events.output_schema["properties"]["n"]["type"], "integer");
    assert_eq!(op(&import, "search").kind, OperationKind::Query);
    assert!(
        op(&import, "search").input_schema["properties"]
            .get("body")
            .is_some()
    );
    assert_eq!(op(&import, "purge").kind, OperationKind::Mutation);
    assert_eq!(
        op(&import, "purge").extensions["openapi"]["method"],
        "PURGE"
    );
    assert!(
        op(&import, "raw").input_schema["properties"]
            .get("q")
            .is_some()
    );
}

#[test]
fn bad_options_and_documents_are_errors() {
    let error = OpenApiImporter::new(OpenApiOptions::new("bad-namespace"))
        .import_value(json!({"openapi": "3.1.0"}))
        .unwrap_err();
    assert!(matches!(error, OpenApiError::Options(_)), "{error}");
    let error = OpenApiImporter::new(OpenApiOptions::new("ok").base_url("ftp://x"))
        .import_value(json!({"openapi": "3.1.0"}))
        .unwrap_err();
    assert!(matches!(error, OpenApiError::Options(_)), "{error}");
    let error = OpenApiImporter::new(OpenApiOptions::new("ok"))
        .import_str("openapi: 3.0.0\ninfo: {title: x}\n")
        .unwrap_err();
    assert_eq!(error.pointer(), Some("/paths"));
    assert!(error.to_string().contains("/paths"), "{error}");
    let error = OpenApiImporter::new(OpenApiOptions::new("ok"))
        .import_file("/nonexistent/openapi.yaml")
        .unwrap_err();
    assert!(matches!(error, OpenApiError::Io { .. }), "{error}");
}

/// `register_into` compiles nothing: a schema the validator refuses is found at the first
/// use of that side, which then counts as Unknown (and `compile_validators` reports it).
#[test]
fn an_uncompilable_schema_is_unknown_from_its_first_use() {
    let import = import(json!({
        "openapi": "3.1.0",
        "paths": {"/odd": {"get": {"operationId": "odd",
            "parameters": [{"name": "q", "in": "query", "schema": {"type": "no-such-type"}}],
            "responses": {"200": {"description": "ok", "content": {"application/json": {"schema": {"type": "integer"}}}}}}}}
    }));
    let registry = OperationRegistry::new();
    assert_eq!(import.register_into(&registry).unwrap(), ["api.odd"]);
    // The broken input side accepts anything; the output side compiles.
    registry
        .validate_input("api.odd", &json!({"q": [1, 2]}))
        .unwrap();
    let error = registry.compile_validators("api.odd").unwrap_err();
    assert!(
        matches!(error, RegistryError::InvalidSchema { which: "input", .. }),
        "{error}"
    );
}

#[test]
fn recursive_schemas_compile_and_register() {
    let import = import(json!({
        "openapi": "3.1.0",
        "components": {"schemas": {"Node": {"type": "object", "properties": {"children": {"type": "array", "items": {"$ref": "#/components/schemas/Node"}}}}}},
        "paths": {"/tree": {"post": {"operationId": "tree",
            "requestBody": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Node"}}}},
            "responses": {"200": {"description": "ok", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Node"}}}}}}}}
    }));
    let spec = op(&import, "tree");
    assert_eq!(
        spec.output_schema["properties"]["children"]["items"],
        json!({"$ref": "#/$defs/Node"})
    );
    assert!(spec.input_schema["$defs"]["Node"].is_object());
    let registry = OperationRegistry::new();
    import.register_into(&registry).unwrap();
    registry
        .validate_input(
            "api.tree",
            &json!({"body": {"children": [{"children": []}]}}),
        )
        .unwrap();
    assert!(
        registry
            .validate_input(
                "api.tree",
                &json!({"body": {"children": [{"children": 5}]}})
            )
            .is_err()
    );
}
