//! The round trip, table-driven: one registry with every shape of operation, served over
//! HTTP (imported back through its OpenAPI document) and over MCP (imported back in both
//! protocol eras: the 2026-07-28 stateless one and the legacy session one), gives back the
//! same operations, inputs of the same shape, the same data and the same errors as calling
//! the registry directly.
//!
//! Differences that remain by design, each asserted below:
//! - ids: the imported id is `<namespace>.<sanitized served id>` (`rt.add` → `remote.rt_add`).
//! - MCP has no streams: a subscription is a query tool whose data is `{items, truncated}`.
//! - MCP errors are results: a failed call is an envelope with `isError: true` whose
//!   `CallError` comes back with `opkit_adapters::mcp::call_error` (over HTTP it is the
//!   call's `Err`).
//! - meta: an imported envelope's meta is the hop's (`http` or `mcp`), not the served one.
#![cfg(all(
    feature = "http-server",
    feature = "mcp-server",
    feature = "openapi",
    feature = "mcp"
))]

mod serve_support;

use futures::{Stream, StreamExt};
use opkit::envelope::{
    EmbeddedResource, McpContentBlock, McpMeta, ResponseMeta, http_envelope, mcp_envelope,
};
use opkit::prelude::*;
use opkit::schema::CompiledSchema;
use opkit_adapters::http_server::{HttpServer, StaticTokens};
use opkit_adapters::mcp::{McpConnection, McpLifecycle, McpOptions, call_error};
use opkit_adapters::mcp_server::McpServer;
use opkit_adapters::openapi::{OpenApiAuth, OpenApiImporter, OpenApiOptions};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::BTreeMap;

// --- the served operations: one of every shape ---------------------------------------

/// A search request: renamed fields and defaults.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct Search {
    /// What to look for.
    query_text: String,
    /// At most this many.
    #[serde(default = "default_max")]
    max_results: u32,
    /// Only with these tags.
    #[serde(default, rename = "tag")]
    tags: Vec<String>,
}

fn default_max() -> u32 {
    2
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
struct Item {
    id: i64,
    name: String,
    #[serde(default)]
    note: Option<String>,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
struct NewItem {
    name: String,
    #[serde(default)]
    note: Option<String>,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Shape {
    Point,
    Circle { radius: f64 },
    Square(u32),
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
struct Tick {
    n: u32,
}

/// A query with parameters and a non-object output.
#[operation(namespace = "rt")]
async fn add(a: i64, b: i64) -> i64 {
    a + b
}

/// An `Input<T>` struct with serde renames and defaults.
#[operation(namespace = "rt")]
async fn search(Input(search): Input<Search>) -> Vec<String> {
    ["apple", "avocado", "apricot", "banana"]
        .into_iter()
        .filter(|word| word.starts_with(&search.query_text))
        .map(|word| format!("{word}{}", search.tags.concat()))
        .take(search.max_results as usize)
        .collect()
}

/// A mutation.
#[operation(namespace = "rt", mutation)]
async fn create(Input(item): Input<NewItem>) -> Item {
    Item {
        id: 7,
        name: item.name,
        note: item.note,
    }
}

/// A subscription.
#[operation(namespace = "rt", subscription)]
fn ticks(count: u32) -> impl Stream<Item = Tick> + Send + 'static {
    futures::stream::iter((0..count).map(|n| Tick { n }))
}

/// A unit output.
#[operation(namespace = "rt", mutation)]
async fn reset() {}

/// An optional output.
#[operation(namespace = "rt")]
async fn find(id: i64) -> Option<Item> {
    (id == 1).then(|| Item {
        id,
        name: "one".into(),
        note: None,
    })
}

/// An enum output.
#[operation(namespace = "rt")]
async fn shape(sides: u32) -> Shape {
    match sides {
        0 => Shape::Point,
        1 => Shape::Circle { radius: 1.5 },
        n => Shape::Square(n),
    }
}

/// An operation that returns its own (HTTP) envelope.
#[operation(namespace = "rt")]
async fn stamped(name: String) -> ResponseEnvelope<Item> {
    let headers = BTreeMap::from([("x-stamp".to_owned(), "1".to_owned())]);
    http_envelope(
        Item {
            id: 1,
            name,
            note: Some("stamped".into()),
        },
        201,
        headers,
        "application/json",
    )
}

/// An operation that answers content blocks of every type.
#[operation(namespace = "rt")]
async fn blocks() -> ResponseEnvelope {
    mcp_envelope(
        json!({"summary": "five blocks"}),
        McpMeta {
            is_error: false,
            content: every_block(),
            structured_content: Some(json!({"summary": "five blocks"})),
            meta: None,
        },
    )
}

/// A failing operation with a domain error.
#[operation(namespace = "rt", errors(not_found))]
async fn fetch(id: i64) -> Result<Item, CallError> {
    Err(CallError::not_found(format!("there is no item {id}")))
}

/// An operation only administrators may call.
#[operation(namespace = "rt", access(roles = ["admin"]))]
async fn secret() -> String {
    "s3cret".into()
}

fn every_block() -> Vec<McpContentBlock> {
    let blocks = json!([
        {"type": "text", "text": "hello"},
        {"type": "image", "data": "aGk=", "mimeType": "image/png"},
        {"type": "audio", "data": "aGk=", "mimeType": "audio/wav"},
        {"type": "resource", "resource": {"uri": "file:///a.txt", "mimeType": "text/plain", "text": "a"}},
        {"type": "resource_link", "uri": "file:///b.txt", "name": "b.txt"}
    ]);
    let blocks: Vec<McpContentBlock> = serde_json::from_value(blocks).unwrap();
    assert!(matches!(
        blocks[3],
        McpContentBlock::Resource {
            resource: EmbeddedResource { .. },
            ..
        }
    ));
    blocks
}

fn served_registry() -> OperationRegistry {
    let registry = OperationRegistry::new();
    registry.register_operation(add).unwrap();
    registry.register_operation(search).unwrap();
    registry.register_operation(create).unwrap();
    registry.register_operation(ticks).unwrap();
    registry.register_operation(reset).unwrap();
    registry.register_operation(find).unwrap();
    registry.register_operation(shape).unwrap();
    registry.register_operation(stamped).unwrap();
    registry.register_operation(blocks).unwrap();
    registry.register_operation(fetch).unwrap();
    registry.register_operation(secret).unwrap();
    registry
}

// --- the table ------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq, Debug)]
enum Caller {
    Admin,
    Anonymous,
}

/// One call: the operation, its input and who calls.
struct Case {
    op: &'static str,
    input: Value,
    caller: Caller,
}

fn case(op: &'static str, input: Value) -> Case {
    Case {
        op,
        input,
        caller: Caller::Admin,
    }
}

fn cases() -> Vec<Case> {
    vec![
        case("rt.add", json!({"a": 5, "b": -7})),
        case("rt.add", json!({"a": 5})),
        case("rt.add", json!({"a": 5, "b": "seven"})),
        case("rt.search", json!({"queryText": "a"})),
        case(
            "rt.search",
            json!({"queryText": "a", "maxResults": 3, "tag": ["!", "?"]}),
        ),
        case("rt.search", json!({"query_text": "a"})),
        case("rt.create", json!({"name": "pen"})),
        case("rt.create", json!({"name": "pen", "note": "blue"})),
        case("rt.create", json!({})),
        case("rt.ticks", json!({"count": 3})),
        case("rt.ticks", json!({"count": 0})),
        case("rt.reset", json!({})),
        case("rt.find", json!({"id": 1})),
        case("rt.find", json!({"id": 2})),
        case("rt.shape", json!({"sides": 0})),
        case("rt.shape", json!({"sides": 1})),
        case("rt.shape", json!({"sides": 4})),
        case("rt.stamped", json!({"name": "ink"})),
        case("rt.blocks", json!({})),
        case("rt.fetch", json!({"id": 9})),
        case("rt.secret", json!({})),
        Case {
            op: "rt.secret",
            input: json!({}),
            caller: Caller::Anonymous,
        },
    ]
}

/// Inputs each operation's imported input schema must accept or refuse as the served one
/// does (besides the inputs of the table).
fn probes() -> Vec<Value> {
    vec![
        json!({}),
        json!({"a": 1, "b": 2}),
        json!({"a": 1, "b": 2, "c": 3}),
        json!({"a": 1.5, "b": 2}),
        json!({"queryText": "x", "maxResults": -1}),
        json!({"queryText": "x", "extra": true}),
        json!({"name": "n", "note": null}),
        json!({"name": 3}),
        json!({"count": "3"}),
        json!({"id": 1, "sides": 2, "name": "x"}),
        json!(null),
        json!([1]),
    ]
}

fn ctx_for(caller: Caller) -> OperationContext {
    match caller {
        Caller::Admin => OperationContext::new().with_identity(admin()),
        Caller::Anonymous => OperationContext::default(),
    }
}

fn admin() -> Identity {
    Identity::new("ann").with_roles(["admin"])
}

fn tokens() -> StaticTokens {
    StaticTokens::new().with("admin-token", admin())
}

/// What a call gives: the data (a subscription's items as an array), or the error.
#[derive(Debug, PartialEq)]
enum Outcome {
    Data(Value),
    Failed {
        code: String,
        message: String,
        kind: Option<String>,
    },
}

fn failed(error: &CallError) -> Outcome {
    Outcome::Failed {
        code: error.code.to_string(),
        message: error.message.clone(),
        kind: error.kind.map(|kind| format!("{kind:?}")),
    }
}

async fn call(
    registry: &OperationRegistry,
    id: &str,
    input: Value,
) -> (Outcome, Vec<ResponseEnvelope>) {
    let ctx = OperationContext::default();
    call_with(registry, id, input, &ctx).await
}

async fn call_with(
    registry: &OperationRegistry,
    id: &str,
    input: Value,
    ctx: &OperationContext,
) -> (Outcome, Vec<ResponseEnvelope>) {
    if registry.spec(id).unwrap().kind.is_stream() {
        let mut stream = match registry.subscribe(id, input, ctx).await {
            Ok(stream) => stream,
            Err(error) => return (failed(&error), Vec::new()),
        };
        let mut envelopes = Vec::new();
        while let Some(item) = stream.next().await {
            match item {
                Ok(envelope) => envelopes.push(envelope),
                Err(error) => return (failed(&error), envelopes),
            }
        }
        let items = envelopes.iter().map(|e| e.data.clone()).collect();
        (Outcome::Data(Value::Array(items)), envelopes)
    } else {
        match registry.execute(id, input, ctx).await {
            Ok(envelope) => (Outcome::Data(envelope.data.clone()), vec![envelope]),
            Err(error) => (failed(&error), Vec::new()),
        }
    }
}

/// The imported id of a served one.
fn imported_id(served: &str) -> String {
    format!("remote.{}", served.replace('.', "_"))
}

/// Same ids, kinds and input shapes.
fn check_operations(
    served: &OperationRegistry,
    imported: &OperationRegistry,
    transport: &str,
    mcp: bool,
) {
    let mut expected: Vec<String> = served
        .specs()
        .iter()
        .map(|s| imported_id(&s.id()))
        .collect();
    expected.sort();
    let mut got: Vec<String> = imported.specs().iter().map(|s| s.id()).collect();
    got.sort();
    assert_eq!(
        got, expected,
        "{transport}: the same operations, no aliases"
    );
    let mut inputs: Vec<Value> = probes();
    inputs.extend(cases().into_iter().map(|case| case.input));
    for spec in served.specs() {
        let remote = imported.spec(&imported_id(&spec.id())).unwrap();
        let kind = match spec.kind {
            // MCP has no streams: a subscription is a tool whose data is `{items, truncated}`.
            OperationKind::Subscription if mcp => OperationKind::Query,
            kind => kind,
        };
        assert_eq!(remote.kind, kind, "{transport}: {}", spec.id());
        let local = CompiledSchema::compile(&spec.input_schema).unwrap();
        let other = CompiledSchema::compile(&remote.input_schema).unwrap();
        for input in &inputs {
            assert_eq!(
                other.is_valid(input),
                local.is_valid(input),
                "{transport}: {} input schemas disagree on {input}:\nserved {}\nimported {}",
                spec.id(),
                spec.input_schema,
                remote.input_schema
            );
        }
    }
}

/// Runs every case through `imported` and compares with the served registry.
async fn check_calls(
    served: &OperationRegistry,
    imports: &[(Caller, &OperationRegistry)],
    transport: &str,
    mcp: bool,
) {
    for case in cases() {
        let ctx = ctx_for(case.caller);
        // In-process calls are trusted; the servers check access first, as this does.
        let (expected, local) = match served.spec(case.op).unwrap().access.check(ctx.identity()) {
            Ok(()) => call_with(served, case.op, case.input.clone(), &ctx).await,
            Err(error) => (failed(&error), Vec::new()),
        };
        let imported = imports
            .iter()
            .find(|(caller, _)| *caller == case.caller)
            .unwrap()
            .1;
        let id = imported_id(case.op);
        let (got, envelopes) = call(imported, &id, case.input.clone()).await;
        let what = format!(
            "{transport}: {} {} as {:?}",
            case.op, case.input, case.caller
        );
        if !mcp {
            assert_eq!(got, expected, "{what}");
            for envelope in &envelopes {
                assert_eq!(envelope.meta.source(), "http", "{what}");
            }
            continue;
        }
        // MCP: a failure is an `isError` result carrying the `CallError`.
        let got = match (&got, envelopes.first()) {
            (Outcome::Data(_), Some(envelope)) if envelope.is_error() => {
                let error = call_error(envelope)
                    .unwrap_or_else(|| panic!("{what}: an opkit error in {envelope:?}"));
                failed(&error)
            }
            _ => got,
        };
        let expected = match expected {
            Outcome::Data(items) if served.spec(case.op).unwrap().kind.is_stream() => {
                Outcome::Data(json!({"items": items, "truncated": false}))
            }
            other => other,
        };
        assert_eq!(got, expected, "{what}");
        if case.op == "rt.blocks" {
            // Content blocks of every type survive.
            let (ResponseMeta::Mcp(served), Some(ResponseMeta::Mcp(remote))) =
                (&local[0].meta, envelopes.first().map(|e| &e.meta))
            else {
                panic!("{what}: MCP envelopes")
            };
            assert_eq!(remote.content, served.content, "{what}");
        }
    }
}

#[tokio::test]
async fn http_round_trip() {
    let served = served_registry();
    let server = serve_support::serve(
        HttpServer::new(served.clone())
            .identity_resolver(tokens())
            .router(),
    )
    .await;
    let doc: Value = reqwest::get(server.url("/openapi.json"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let import = |auth: Option<&str>| {
        let mut options = OpenApiOptions::new("remote").base_url(server.url(""));
        if let Some(token) = auth {
            options = options.auth(OpenApiAuth::new().bearer(token));
        }
        let import = OpenApiImporter::new(options)
            .import_value(doc.clone())
            .unwrap();
        assert!(import.skipped.is_empty(), "{:?}", import.skipped);
        let registry = OperationRegistry::new();
        import.register_into(&registry).unwrap();
        registry
    };
    let (admin, anonymous) = (import(Some("admin-token")), import(None));
    check_operations(&served, &admin, "HTTP", false);
    check_calls(
        &served,
        &[(Caller::Admin, &admin), (Caller::Anonymous, &anonymous)],
        "HTTP",
        false,
    )
    .await;
}

#[tokio::test]
async fn mcp_round_trip_in_both_eras() {
    let served = served_registry();
    let server = serve_support::serve(
        axum::Router::new().nest(
            "/mcp",
            McpServer::new(served.clone())
                .identity_resolver(tokens())
                .router(),
        ),
    )
    .await;
    for (era, lifecycle) in [
        ("MCP 2026-07-28", McpLifecycle::Modern),
        ("MCP legacy session", McpLifecycle::Legacy),
    ] {
        let mut imports = Vec::new();
        for (caller, token) in [
            (Caller::Admin, Some("admin-token")),
            (Caller::Anonymous, None),
        ] {
            let mut options = McpOptions::new("remote").lifecycle(lifecycle);
            if let Some(token) = token {
                options = options.bearer_token(token);
            }
            let connection = McpConnection::connect_http(&server.url("/mcp"), options)
                .await
                .unwrap_or_else(|error| panic!("{era}: {error}"));
            let registry = OperationRegistry::new();
            connection.register_into(&registry).unwrap();
            imports.push((caller, registry, connection));
        }
        check_operations(&served, &imports[0].1, era, true);
        let by_caller: Vec<(Caller, &OperationRegistry)> = imports
            .iter()
            .map(|(caller, registry, _)| (*caller, registry))
            .collect();
        check_calls(&served, &by_caller, era, true).await;
    }
}
