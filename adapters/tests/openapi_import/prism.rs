//! The OpenAPI import against Prism (a mock server on 127.0.0.1) serving the Petstore 3.0
//! and 3.1 documents of `@readme/oas-examples`: every imported operation is called and its
//! envelope (or, for operations the document gives no 2xx response, its error) is checked.

#![cfg(feature = "openapi")]

use crate::openapi_support;

use opkit::envelope::ResponseMeta;
use opkit::schema::CompiledSchema;
use opkit::{ErrorCode, OperationContext, OperationKind, OperationRegistry};
use opkit_adapters::openapi::{OpenApiAuth, OpenApiImporter, OpenApiOptions, SpecVersion};
use serde_json::{Value, json};
use std::time::Duration;

async fn petstore(version: &str, expected: SpecVersion) {
    let document = openapi_support::oas_example(version, "petstore");
    let raw: Value = serde_json::from_str(&std::fs::read_to_string(&document).unwrap()).unwrap();
    let peer = openapi_support::start_prism(&document).await;
    let options = OpenApiOptions::new("petstore")
        .base_url(peer.base_url())
        .auth(OpenApiAuth::new().api_key("special-key").bearer("token"))
        .timeout(Duration::from_secs(20));
    let import = OpenApiImporter::new(options)
        .import_file(&document)
        .expect("import petstore");
    assert_eq!(import.version, expected);
    assert!(import.skipped.is_empty(), "skipped: {:?}", import.skipped);
    assert_eq!(import.operations.len(), 20);
    let registry = OperationRegistry::new();
    import.register_into(&registry).unwrap();

    let get_pet = registry.spec("petstore.getPetById").expect("getPetById");
    assert_eq!(get_pet.kind, OperationKind::Query);
    assert_eq!(
        get_pet.output_schema["required"],
        json!(["name", "photoUrls"])
    );
    assert_eq!(
        registry.spec("petstore.addPet").unwrap().kind,
        OperationKind::Mutation
    );

    let ctx = OperationContext::default().with_timeout(Duration::from_secs(60));
    let mut called = 0;
    let mut envelopes = 0;
    for spec in registry.specs() {
        let input = openapi_support::example_for(&spec.input_schema, &spec.input_schema, 0);
        let method = spec.extensions["openapi"]["method"]
            .as_str()
            .unwrap()
            .to_ascii_lowercase();
        let path = spec.extensions["openapi"]["path"]
            .as_str()
            .unwrap()
            .to_owned();
        let responses = &raw["paths"][path.as_str()][method.as_str()]["responses"];
        let documented_2xx = responses
            .as_object()
            .unwrap()
            .keys()
            .any(|code| code.starts_with('2'));
        let result = registry.execute(&spec.id(), input.clone(), &ctx).await;
        called += 1;
        match result {
            Ok(envelope) => {
                envelopes += 1;
                let ResponseMeta::Http(meta) = &envelope.meta else {
                    panic!("{}: not an http envelope", spec.id());
                };
                assert!(
                    (200..300).contains(&meta.status_code),
                    "{}: {meta:?}",
                    spec.id()
                );
                if !spec.has_unknown_output() {
                    let compiled = CompiledSchema::compile(&spec.output_schema).unwrap();
                    assert!(
                        compiled.validate(&envelope.data).is_ok(),
                        "{}: {} does not match {}",
                        spec.id(),
                        envelope.data,
                        spec.output_schema
                    );
                    assert!(
                        meta.content_type.starts_with("application/json"),
                        "{}: {meta:?}",
                        spec.id()
                    );
                }
            }
            Err(error) => {
                // Prism answers with a documented status; without a 2xx in the document,
                // that is an error status, reported as EXECUTION_ERROR with the status.
                assert!(
                    !documented_2xx,
                    "{} with {input} failed: {error:?}",
                    spec.id()
                );
                assert_eq!(
                    error.code,
                    ErrorCode::ExecutionError,
                    "{}: {error:?}",
                    spec.id()
                );
                let status = error.details.as_ref().unwrap()["status"].as_u64().unwrap();
                assert!(
                    responses.get(status.to_string()).is_some()
                        || responses.get("default").is_some(),
                    "{}: status {status} is not documented",
                    spec.id()
                );
            }
        }
    }
    assert_eq!(called, 20);
    eprintln!(
        "petstore {version}: {called} operations called, {envelopes} envelopes, {} documented error statuses",
        called - envelopes
    );

    // A typed look at one call: the mocked pet, with Prism's headers.
    let envelope = registry
        .execute("petstore.getPetById", json!({"petId": 1}), &ctx)
        .await
        .unwrap();
    let ResponseMeta::Http(meta) = &envelope.meta else {
        panic!()
    };
    assert_eq!(meta.status_code, 200);
    assert!(envelope.data["name"].is_string());
    assert!(meta.headers.contains_key("content-type"));
    // Without the API key Prism refuses: 401 as EXECUTION_ERROR.
    let anonymous = OpenApiImporter::new(OpenApiOptions::new("anon").base_url(peer.base_url()))
        .import_file(&document)
        .unwrap();
    let registry = OperationRegistry::new();
    anonymous.register_into(&registry).unwrap();
    let error = registry
        .execute("anon.getPetById", json!({"petId": 1}), &ctx)
        .await
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::ExecutionError);
    assert_eq!(error.details.unwrap()["status"], 401);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn petstore_3_0_against_prism() {
    petstore("3.0", SpecVersion::V3_0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn petstore_3_1_against_prism() {
    petstore("3.1", SpecVersion::V3_1).await;
}

/// Every 3.0 (JSON and YAML) and 3.1 document of `@readme/oas-examples` imports without a
/// panic, an error or a skipped operation (they include circular schemas, every parameter
/// style, callbacks, webhooks, polymorphism, draft-04 bounds and ECMA-only regexes).
#[test]
fn every_readme_example_document_imports() {
    let root = openapi_support::peers_dir().join("node_modules/@readme/oas-examples");
    let mut documents = 0;
    let mut operations = 0;
    for dir in ["3.0/json", "3.0/yaml", "3.1/json"] {
        let mut paths: Vec<_> = std::fs::read_dir(root.join(dir))
            .unwrap_or_else(|error| {
                panic!("{dir}: {error}: run `bash scripts/install-peers.sh` first")
            })
            .map(|entry| entry.unwrap().path())
            .filter(|path| path.is_file())
            .collect();
        paths.sort();
        for path in paths {
            let import =
                OpenApiImporter::new(OpenApiOptions::new("ex").base_url("http://127.0.0.1:9"))
                    .import_file(&path)
                    .unwrap_or_else(|error| panic!("{}: {error}", path.display()));
            assert!(
                import.skipped.is_empty(),
                "{}: {:?}",
                path.display(),
                import.skipped
            );
            let registry = OperationRegistry::new();
            operations += import.operations.len();
            import
                .register_into(&registry)
                .unwrap_or_else(|error| panic!("{}: {error}", path.display()));
            documents += 1;
        }
    }
    assert!(documents >= 90, "only {documents} documents");
    assert!(operations >= 1000, "only {operations} operations");
}
