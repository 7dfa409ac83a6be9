//! Property tests: OpenAPI import answers truncated and arbitrary documents with a value or a
//! typed error, never a panic.
#![cfg(feature = "openapi")]

use opkit_adapters::openapi::{OpenApiImporter, OpenApiOptions};
use proptest::prelude::*;
use serde_json::{Map, Value};
use std::path::PathBuf;

fn example(relative: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("peers/openapi/node_modules/@readme/oas-examples")
        .join(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|error| {
        panic!(
            "{} is missing ({error}): run `bash scripts/install-peers.sh`",
            path.display()
        )
    })
}

fn importer() -> OpenApiImporter {
    OpenApiImporter::new(OpenApiOptions::new("hostile"))
}

/// Cuts `text` at `at` (moved back to a character boundary).
fn truncate(text: &str, at: usize) -> &str {
    let mut end = at % (text.len() + 1);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

fn arb_document() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i32>().prop_map(Value::from),
        prop_oneof![
            Just("3.0.3"),
            Just("3.1.0"),
            Just("3.2.0"),
            Just("2.0"),
            Just("#/components/schemas/A"),
            Just("#/components/parameters/p"),
            Just("#/nope"),
            Just("get"),
            Just("query"),
            Just("path"),
            Just("object"),
            Just("application/json"),
            Just("text/event-stream"),
            Just("/pets/{id}"),
        ]
        .prop_map(Value::from),
    ];
    leaf.prop_recursive(5, 64, 5, |inner| {
        let key = prop_oneof![
            Just("openapi"),
            Just("paths"),
            Just("components"),
            Just("schemas"),
            Just("A"),
            Just("/pets/{id}"),
            Just("get"),
            Just("post"),
            Just("parameters"),
            Just("responses"),
            Just("200"),
            Just("content"),
            Just("application/json"),
            Just("schema"),
            Just("$ref"),
            Just("type"),
            Just("properties"),
            Just("items"),
            Just("name"),
            Just("in"),
            Just("requestBody"),
            Just("servers"),
            Just("url"),
            Just("operationId"),
            Just("security"),
            Just("nullable"),
            Just("itemSchema"),
        ];
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
            prop::collection::btree_map(key, inner, 0..5).prop_map(|map| {
                Value::Object(
                    map.into_iter()
                        .map(|(k, v)| (k.to_owned(), v))
                        .collect::<Map<_, _>>(),
                )
            }),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn truncated_documents_never_panic(at in any::<usize>()) {
        for document in [example("3.0/json/petstore.json"), example("3.1/yaml/petstore.yaml")] {
            let _ = importer().import_str(truncate(&document, at));
        }
    }

    #[test]
    fn arbitrary_documents_never_panic(document in arb_document()) {
        let _ = importer().import_value(document.clone());
        let _ = importer().import_str(&document.to_string());
    }
}

#[test]
fn an_empty_document_is_a_clear_error() {
    let Err(error) = importer().import_str("") else {
        panic!("an empty document has nothing to import")
    };
    assert!(!error.to_string().is_empty());
}
