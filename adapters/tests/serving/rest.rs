//! REST routes (`#[operation(http(..))]`): axum's `todos` example ported to opkit operations
//! keeps its API — the same paths, methods, statuses (`201`, `204`, `404`, `400`, `422`,
//! `408`) and bodies — checked by a curl-level client written for the original
//! (`adapters/peers/rest/todos_client.py`); the RPC routes still serve the same operations;
//! a route whose path variable names no input field, or two routes on one method and path,
//! are refused when the router is built; the OpenAPI document describes the routes and
//! passes openapi-spec-validator.
#![cfg(feature = "http-server")]

use crate::serve_support;

use http::StatusCode;
use opkit::prelude::*;
use opkit::{OperationKind, OperationSpec};
use opkit_adapters::http_server::{HttpRoute, HttpSpec};
use opkit_adapters::http_server::{HttpServer, HttpServerError, RouteError};
use opkit_testkit::dir::TempDir;
use parking_lot::RwLock;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use serve_support::{Finished, crate_dir, peer_python, run, serve, serve_with};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// The todos, by id.
#[derive(Clone, Default)]
struct Db(Arc<RwLock<BTreeMap<String, Todo>>>);

/// One todo, as the original serializes it.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
struct Todo {
    id: String,
    text: String,
    completed: bool,
}

/// Lists the todos, `limit` of them after the first `offset`.
#[operation(namespace = "todos", http(method = "GET", path = "/todos"))]
async fn index(db: State<Db>, offset: Option<usize>, limit: Option<usize>) -> Vec<Todo> {
    let todos = db.0.0.read();
    todos
        .values()
        .skip(offset.unwrap_or(0))
        .take(limit.unwrap_or(usize::MAX))
        .cloned()
        .collect()
}

/// Creates a todo.
#[operation(
    namespace = "todos",
    mutation,
    http(
        method = "POST",
        path = "/todos",
        status = 201,
        location = "/todos/{id}"
    )
)]
async fn create(db: State<Db>, text: String) -> Todo {
    let todo = Todo {
        id: opkit::new_request_id(),
        text,
        completed: false,
    };
    db.0.0.write().insert(todo.id.clone(), todo.clone());
    todo
}

/// Changes a todo's text or completion.
#[operation(
    namespace = "todos",
    mutation,
    errors(not_found),
    http(method = "PATCH", path = "/todos/{id}")
)]
async fn update(
    db: State<Db>,
    id: String,
    text: Option<String>,
    completed: Option<bool>,
) -> Result<Todo, CallError> {
    let mut todos = db.0.0.write();
    let todo = todos
        .get_mut(&id)
        .ok_or_else(|| CallError::not_found(format!("no todo {id}")))?;
    if let Some(text) = text {
        todo.text = text;
    }
    if let Some(completed) = completed {
        todo.completed = completed;
    }
    Ok(todo.clone())
}

/// Deletes a todo.
#[operation(
    namespace = "todos",
    mutation,
    errors(not_found),
    http(method = "DELETE", path = "/todos/{id}", status = 204)
)]
async fn delete(db: State<Db>, id: String) -> Result<(), CallError> {
    match db.0.0.write().remove(&id) {
        Some(_) => Ok(()),
        None => Err(CallError::not_found(format!("no todo {id}"))),
    }
}

fn todos_registry() -> OperationRegistry {
    let registry = OperationRegistry::new().with_state(Db::default());
    registry.register_operation(index).unwrap();
    registry.register_operation(create).unwrap();
    registry.register_operation(update).unwrap();
    registry.register_operation(delete).unwrap();
    registry
}

/// The port, as the original is configured: `422` for a body that fails its schema, and a
/// short request timeout so the `408` check is quick.
fn todos_server() -> HttpServer {
    HttpServer::new(todos_registry())
        .invalid_input_status(StatusCode::UNPROCESSABLE_ENTITY)
        .request_timeout(Duration::from_secs(2))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_todos_port_passes_the_original_client_unchanged() {
    let served = serve(todos_server().router()).await;
    let mut command = tokio::process::Command::new("python3");
    command
        .arg(crate_dir().join("peers/rest/todos_client.py"))
        .arg(served.url(""));
    let Finished {
        success,
        stdout,
        stderr,
    } = run(command, Duration::from_secs(120)).await;
    assert!(
        success && stdout.trim() == "ok",
        "the todos client failed:\n{stdout}\n{stderr}"
    );
}

#[tokio::test]
async fn a_rest_route_and_the_rpc_route_serve_one_operation() {
    let served = serve(todos_server().router()).await;
    let http = reqwest::Client::new();
    let created = http
        .post(served.url("/todos"))
        .json(&json!({"text": "one"}))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 201);
    let id = created.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let location = http
        .post(served.url("/todos"))
        .json(&json!({"text": "two"}))
        .send()
        .await
        .unwrap();
    let headers = location.headers().clone();
    let body: Value = location.json().await.unwrap();
    assert_eq!(
        headers["location"],
        format!("/todos/{}", body["id"].as_str().unwrap())
    );
    assert_eq!(headers["x-opkit-operation"], "todos.create");
    assert!(headers.contains_key("x-request-id"));
    // The RPC route answers the same operation with its envelope.
    let rpc: Value = http
        .post(served.url("/ops/todos.update"))
        .json(&json!({"id": id, "completed": true}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(rpc["data"]["completed"], true, "{rpc}");
    assert_eq!(rpc["meta"]["operationId"], "todos.update");
    // A path variable wins over a body field of the same name.
    let patched = http
        .patch(served.url(&format!("/todos/{id}")))
        .json(&json!({"id": "someone-else", "text": "uno"}))
        .send()
        .await
        .unwrap();
    assert_eq!(patched.status(), 200);
    assert_eq!(patched.json::<Value>().await.unwrap()["id"], id.as_str());
    // The error body is the CallError, with its status.
    let missing = http.delete(served.url("/todos/nope")).send().await.unwrap();
    assert_eq!(missing.status(), 404);
    assert_eq!(missing.json::<Value>().await.unwrap()["kind"], "NOT_FOUND");
    // A method the path does not serve is 405, naming the ones it does.
    let put = http
        .put(served.url(&format!("/todos/{id}")))
        .json(&json!({"text": "tres"}))
        .send()
        .await
        .unwrap();
    assert_eq!(put.status(), 405);
    let mut allowed: Vec<String> = put.headers()["allow"]
        .to_str()
        .unwrap()
        .split(',')
        .map(|method| method.trim().to_owned())
        .collect();
    allowed.sort();
    assert_eq!(allowed, ["DELETE", "PATCH"]);
    // A path variable that is not UTF-8 once decoded is refused before the call.
    let garbled = http.delete(served.url("/todos/%FF")).send().await.unwrap();
    assert_eq!(garbled.status(), 400);
}

fn route_error(registry: OperationRegistry) -> RouteError {
    match HttpServer::new(registry).try_router() {
        Err(HttpServerError::Route(error)) => error,
        Err(other) => panic!("not a route error: {other}"),
        Ok(_) => panic!("the routes were accepted"),
    }
}

fn dynamic(name: &str, route: HttpRoute) -> (OperationSpec, Handler) {
    let spec = OperationSpec::new("rest", name, OperationKind::Mutation)
        .input_schema(json!({"type": "object", "properties": {"id": {"type": "string"}}}))
        .http(route);
    (spec, Handler::unary(|_, _| async { Ok(json!(null)) }))
}

#[test]
fn bad_routes_are_refused_when_the_router_is_built() {
    let registry = OperationRegistry::new();
    let (spec, handler) = dynamic("a", HttpRoute::new("PUT", "/things/{key}"));
    registry.register(spec, handler).unwrap();
    let error = route_error(registry);
    assert!(
        matches!(&error, RouteError::UnknownVariable { variable, .. } if variable == "key"),
        "{error}"
    );
    assert!(error.to_string().contains("its fields: id"), "{error}");

    let registry = OperationRegistry::new();
    for name in ["a", "b"] {
        let (spec, handler) = dynamic(name, HttpRoute::new("put", "/things/{id}"));
        registry.register(spec, handler).unwrap();
    }
    let error = route_error(registry);
    assert!(
        matches!(&error, RouteError::Collision { first, second, .. } if first == "rest.a" && second == "rest.b"),
        "{error}"
    );

    let registry = OperationRegistry::new();
    let (spec, handler) = dynamic("a", HttpRoute::new("GET", "/ops/{id}"));
    registry.register(spec, handler).unwrap();
    assert!(route_error(registry).to_string().contains("RPC routes"));
}

/// What the macro cannot see is checked when the router is built, never a panic: a path in
/// another framework's spelling, a `Location` naming a field the output lacks, `http(..)`
/// options that are not a route.
#[test]
fn misspelt_routes_and_unknown_location_fields_are_route_errors() {
    let registry = OperationRegistry::new();
    let (spec, handler) = dynamic("a", HttpRoute::new("GET", "/things/:id"));
    registry.register(spec, handler).unwrap();
    let error = route_error(registry).to_string();
    assert!(error.contains("written `{id}`, not `:id`"), "{error}");

    let registry = OperationRegistry::new();
    let (spec, handler) = dynamic(
        "a",
        HttpRoute::new("POST", "/things").location("/things/{idd}"),
    );
    let spec = spec.output_schema(json!({
        "type": "object",
        "properties": {"id": {"type": "string"}, "name": {"type": "string"}}
    }));
    registry.register(spec, handler).unwrap();
    let error = route_error(registry).to_string();
    assert!(
        error.contains("`{idd}`, which is not a field of its output (its fields: id, name)"),
        "{error}"
    );

    let registry = OperationRegistry::new();
    let spec = OperationSpec::new("rest", "a", OperationKind::Query).with_edge_options(
        opkit_adapters::http_server::HTTP_EDGE,
        json!({"method": "GET", "path": "/things", "cache_for": 60}),
    );
    registry
        .register(spec, Handler::unary(|_, _| async { Ok(json!(null)) }))
        .unwrap();
    let error = route_error(registry);
    assert!(matches!(error, RouteError::Options(_)), "{error}");
    assert!(
        error.to_string().contains("unknown field `cache_for`"),
        "{error}"
    );
}

/// A greeting as plain text: an HTTP envelope with its own content type.
#[operation(namespace = "texts", http(method = "GET", path = "/hello/{name}"))]
async fn hello(name: String) -> ResponseEnvelope<Value> {
    opkit::envelope::http_envelope(
        json!(format!("hello, {name}")),
        200,
        BTreeMap::new(),
        "text/plain; charset=utf-8",
    )
}

/// A problem report, in its own JSON type.
#[operation(namespace = "texts", http(method = "GET", path = "/problem"))]
async fn problem() -> ResponseEnvelope<Value> {
    opkit::envelope::http_envelope(
        json!({"title": "out of coffee"}),
        200,
        BTreeMap::new(),
        "application/problem+json",
    )
}

#[tokio::test]
async fn a_returned_http_envelopes_content_type_is_honoured_on_rest_routes() {
    let registry = OperationRegistry::new();
    registry.register_operation(hello).unwrap();
    registry.register_operation(problem).unwrap();
    let served = serve(HttpServer::new(registry).router()).await;
    let http = reqwest::Client::new();
    let response = http.get(served.url("/hello/ada")).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let content_type = response.headers()["content-type"]
        .to_str()
        .unwrap()
        .to_owned();
    assert_eq!(content_type, "text/plain; charset=utf-8");
    assert_eq!(
        response.text().await.unwrap(),
        "hello, ada",
        "not a JSON string"
    );
    let response = http.get(served.url("/problem")).send().await.unwrap();
    assert_eq!(
        response.headers()["content-type"],
        "application/problem+json"
    );
    let body: Value = response.json().await.unwrap();
    assert_eq!(body, json!({"title": "out of coffee"}));
    // The RPC route still answers the envelope as JSON.
    let rpc: Value = http
        .get(served.url("/ops/texts.hello?name=ada"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(rpc["data"], "hello, ada");
    assert_eq!(rpc["meta"]["contentType"], "text/plain; charset=utf-8");
}

/// A counter at `/counters/{n}`: its path variable is a number.
#[operation(
    namespace = "counters",
    mutation,
    http(method = "PUT", path = "/counters/{n}")
)]
async fn set_counter(n: u32, value: i64) -> i64 {
    i64::from(n) + value
}

/// Path and query values that fail the schema take the parameters' status, bodies the
/// input's; a failure in both takes the body's.
#[tokio::test]
async fn parameters_and_bodies_have_their_own_invalid_statuses() {
    let registry = todos_registry();
    registry.register_operation(set_counter).unwrap();
    let status_of = |server: HttpServer| async move {
        let served = serve(server.router()).await;
        let http = reqwest::Client::new();
        let mut statuses = Vec::new();
        for (method, path, body) in [
            ("GET", "/todos?offset=abc", None),
            ("GET", "/ops/todos.index?limit=-1", None),
            ("PUT", "/counters/abc", Some(json!({"value": 1}))),
            ("PUT", "/counters/7", Some(json!({"value": "one"}))),
            ("PUT", "/counters/abc", Some(json!({"value": "one"}))),
            ("PUT", "/counters/7", Some(json!({"value": 1}))),
        ] {
            let mut request = http.request(method.parse().unwrap(), served.url(path));
            if let Some(body) = body {
                request = request.json(&body);
            }
            statuses.push(request.send().await.unwrap().status().as_u16());
        }
        statuses
    };
    let base = || HttpServer::new(registry.clone());
    assert_eq!(status_of(base()).await, [400, 400, 400, 400, 400, 200]);
    let unprocessable_bodies = base().invalid_input_status(StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        status_of(unprocessable_bodies).await,
        [400, 400, 400, 422, 422, 200]
    );
    let both = base()
        .invalid_input_status(StatusCode::UNPROCESSABLE_ENTITY)
        .invalid_parameter_status(StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(status_of(both).await, [422, 422, 422, 422, 422, 200]);
    // The document says which: a GET's parameters, a PUT's body and path variable.
    let document = base()
        .invalid_parameter_status(StatusCode::UNPROCESSABLE_ENTITY)
        .openapi();
    let responses = |path: &str, method: &str| {
        document["paths"][path][method]["responses"]
            .as_object()
            .unwrap()
            .contains_key("422")
    };
    assert!(responses("/todos", "get"));
    assert!(responses("/counters/{n}", "put"));
    assert!(!responses("/todos", "post"));
}

#[tokio::test]
async fn the_openapi_document_describes_the_rest_routes_and_validates() {
    let document = todos_server().openapi();
    let paths = &document["paths"];
    let create = &paths["/todos"]["post"];
    assert_eq!(create["x-opkit-rest"], true);
    assert_eq!(create["x-opkit-alias"], true);
    assert!(create["responses"]["201"].is_object(), "{create}");
    assert!(create["responses"]["422"].is_object(), "{create}");
    let delete = &paths["/todos/{id}"]["delete"];
    assert!(
        delete["responses"]["204"].get("content").is_none(),
        "{delete}"
    );
    assert_eq!(delete["parameters"][0]["in"], "path");
    let update = &paths["/todos/{id}"]["patch"];
    let body_ref = update["requestBody"]["content"]["application/json"]["schema"]["$ref"]
        .as_str()
        .unwrap();
    let body = &document["components"]["schemas"][body_ref.rsplit('/').next().unwrap()];
    assert!(
        body["properties"].get("id").is_none(),
        "the path gives the id: {body}"
    );
    let index = &paths["/todos"]["get"];
    let names: Vec<&str> = index["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    assert_eq!(names, ["limit", "offset"]);
    // The RPC routes are still documented.
    assert!(paths["/ops/todos.create"]["post"].is_object());

    let dir = TempDir::new("rest-openapi");
    let path = dir.join("todos.json");
    std::fs::write(&path, serde_json::to_vec_pretty(&document).unwrap()).unwrap();
    let mut command = tokio::process::Command::new(peer_python());
    command.args(["-m", "openapi_spec_validator"]).arg(&path);
    let finished = run(command, Duration::from_secs(120)).await;
    assert!(
        finished.success,
        "openapi-spec-validator rejects the document:\n{}\n{}",
        finished.stdout, finished.stderr
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schemathesis_finds_nothing_on_the_rest_routes() {
    let served = serve(todos_server().router()).await;
    let examples = std::env::var("OPKIT_SCHEMATHESIS_EXAMPLES").unwrap_or_else(|_| "30".into());
    let dir = TempDir::new("schemathesis-rest");
    let mut command = tokio::process::Command::new(peer_python().with_file_name("schemathesis"));
    command
        .current_dir(dir.path())
        .arg("run")
        .arg(served.url("/openapi.json"))
        .args(["--checks", "all"])
        .args(["--max-examples", &examples])
        .args(["--seed", "1"])
        .args(["--request-timeout", "20"])
        .args(["--workers", "1"])
        .env("NO_COLOR", "1");
    let finished = run(command, Duration::from_secs(600)).await;
    assert!(
        finished.success,
        "schemathesis found failures on the REST routes:\n{}\n{}",
        finished.stdout, finished.stderr
    );
    // Five RPC operations (a query's GET and POST, three mutations) and four REST routes.
    assert!(
        finished.stdout.contains("Tested: 9"),
        "every route was tested:\n{}",
        finished.stdout
    );
}

/// The values, by key.
#[derive(Clone, Default)]
struct Store(Arc<RwLock<BTreeMap<String, opkit::binary::Binary>>>);

/// The value of `key`, as raw bytes.
#[operation(
    namespace = "kv",
    errors(not_found),
    http(method = "GET", path = "/kv/{key}")
)]
async fn get_value(store: State<Store>, key: String) -> Result<opkit::binary::Binary, CallError> {
    store
        .0
        .0
        .read()
        .get(&key)
        .cloned()
        .ok_or_else(|| CallError::not_found(format!("no key {key}")))
}

/// Stores the request body, whatever its content type, as the value of `key`.
#[operation(
    namespace = "kv",
    mutation,
    http(method = "POST", path = "/kv/{key}", body_limit = "5MB")
)]
async fn set_value(store: State<Store>, key: String, value: opkit::binary::Binary) {
    store.0.0.write().insert(key, value);
}

/// The keys.
#[operation(namespace = "kv", http(method = "GET", path = "/keys"))]
async fn list_keys(store: State<Store>) -> Vec<String> {
    store.0.0.read().keys().cloned().collect()
}

#[tokio::test]
async fn the_key_value_store_keeps_raw_bytes_under_a_5_mb_route_limit() {
    let registry = OperationRegistry::new().with_state(Store::default());
    registry.register_operation(get_value).unwrap();
    registry.register_operation(set_value).unwrap();
    registry.register_operation(list_keys).unwrap();
    // The server-wide limit stays 1 MiB: the route's own is 5 MB.
    let server = HttpServer::new(registry);
    let document = server.openapi();
    let served = serve(server.router()).await;
    let http = reqwest::Client::new();
    let png: Vec<u8> = (0..=255u8).cycle().take(3_000_000).collect();
    let stored = http
        .post(served.url("/kv/picture"))
        .header("content-type", "image/png")
        .body(png.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(stored.status(), 200);
    assert_eq!(
        stored.bytes().await.unwrap().len(),
        0,
        "a unit output has no body"
    );
    let fetched = http.get(served.url("/kv/picture")).send().await.unwrap();
    assert_eq!(fetched.status(), 200);
    assert_eq!(
        fetched.headers()["content-type"],
        "application/octet-stream"
    );
    assert_eq!(fetched.bytes().await.unwrap().as_ref(), png.as_slice());
    let text = http
        .post(served.url("/kv/greeting"))
        .header("content-type", "text/plain")
        .body("hello")
        .send()
        .await
        .unwrap();
    assert_eq!(text.status(), 200);
    let keys: Value = http
        .get(served.url("/keys"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(keys, json!(["greeting", "picture"]));
    // Past the route's 5 MB: 413, and nothing is stored.
    let too_big = http
        .post(served.url("/kv/huge"))
        .body(vec![0u8; 5_000_001])
        .send()
        .await
        .unwrap();
    assert_eq!(too_big.status(), 413);
    assert_eq!(
        http.get(served.url("/kv/huge"))
            .send()
            .await
            .unwrap()
            .status(),
        404
    );
    // Over the RPC route the same value travels as base64.
    let rpc: Value = http
        .post(served.url("/ops/kv.get_value"))
        .json(&json!({"key": "greeting"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(rpc["data"], "aGVsbG8=");
    // The document says so.
    let set = &document["paths"]["/kv/{key}"]["post"];
    assert!(set["requestBody"]["content"]["*/*"].is_object(), "{set}");
    let get = &document["paths"]["/kv/{key}"]["get"];
    assert!(
        get["responses"]["200"]["content"]["application/octet-stream"].is_object(),
        "{get}"
    );
}

#[cfg(feature = "openapi")]
#[tokio::test]
async fn importing_the_document_gives_back_the_operations_in_their_rpc_form() {
    use opkit_adapters::openapi::{OpenApiImporter, OpenApiOptions};
    let server = todos_server();
    let served = serve(server.router()).await;
    let document = server.openapi();
    let options = OpenApiOptions::new("remote").base_url(served.url(""));
    let import = OpenApiImporter::new(options)
        .import_value(document)
        .unwrap();
    assert!(import.skipped.is_empty(), "{:?}", import.skipped);
    let imported = OperationRegistry::new();
    import.register_into(&imported).unwrap();
    let mut ids: Vec<String> = imported.specs().iter().map(|spec| spec.id()).collect();
    ids.sort();
    assert_eq!(
        ids,
        [
            "remote.todos_create",
            "remote.todos_delete",
            "remote.todos_index",
            "remote.todos_update"
        ]
    );
    let ctx = OperationContext::default();
    let created = imported
        .execute("remote.todos_create", json!({"text": "imported"}), &ctx)
        .await
        .unwrap();
    assert_eq!(created.data["text"], "imported");
    let listed = imported
        .execute("remote.todos_index", json!({}), &ctx)
        .await
        .unwrap();
    assert_eq!(
        listed.data.as_array().map(Vec::len),
        Some(1),
        "{}",
        listed.data
    );
}

/// The todos again, at a route that is never compressed.
#[operation(
    namespace = "todos",
    name = "index_plain",
    http(method = "GET", path = "/plain/todos", compress = false)
)]
async fn index_plain(db: State<Db>) -> Vec<Todo> {
    db.0.0.read().values().cloned().collect()
}

#[tokio::test]
async fn responses_are_compressed_for_clients_that_accept_it() {
    let registry = todos_registry();
    registry.register_operation(index_plain).unwrap();
    // `router()` has the compression in every route; `serve` puts it around the router once.
    let routed = serve(HttpServer::new(registry.clone()).router()).await;
    assert_compressed_for_clients_that_accept_it(routed).await;
    let served = serve_with(|listener| HttpServer::new(registry).serve(listener)).await;
    assert_compressed_for_clients_that_accept_it(served).await;
}

/// Adds `count` todos through `served`, the `n`th with text `text(n)`.
async fn add_todos(
    http: &reqwest::Client,
    served: &serve_support::Served,
    count: usize,
    text: impl Fn(usize) -> String,
) {
    for n in 0..count {
        http.post(served.url("/todos"))
            .json(&json!({"text": text(n)}))
            .send()
            .await
            .unwrap();
    }
}

/// `GET path` of `served`, saying `Accept-Encoding: gzip`.
async fn get_gzipped(
    http: &reqwest::Client,
    served: &serve_support::Served,
    path: &str,
) -> reqwest::Response {
    http.get(served.url(path))
        .header("accept-encoding", "gzip")
        .send()
        .await
        .unwrap()
}

async fn assert_compressed_for_clients_that_accept_it(served: serve_support::Served) {
    let http = reqwest::Client::new();
    add_todos(&http, &served, 20, |n| {
        format!("a todo long enough to be worth compressing, number {n}")
    })
    .await;
    let plain = http.get(served.url("/todos")).send().await.unwrap();
    assert!(plain.headers().get("content-encoding").is_none());
    // A request without `Accept-Encoding` skips the compression layer, yet its response
    // varies on that header as the compressed one does, so a cache keeps them apart.
    assert_eq!(plain.headers()["vary"], "accept-encoding");
    let plain = plain.bytes().await.unwrap();
    assert!(
        plain.len() >= 1400,
        "over the default minimum: {}",
        plain.len()
    );
    let gzipped = get_gzipped(&http, &served, "/todos").await;
    assert_eq!(gzipped.headers()["content-encoding"], "gzip");
    assert_eq!(gzipped.headers()["vary"], "accept-encoding");
    // An answer held in memory is gzipped whole: it says its length (a streaming
    // compressor's answer is chunked).
    let length = gzipped.headers().get("content-length").cloned();
    let gzipped = gzipped.bytes().await.unwrap();
    assert_eq!(
        length.and_then(|length| length.to_str().ok()?.parse().ok()),
        Some(gzipped.len())
    );
    assert!(
        gzipped.len() < plain.len() / 2,
        "{} vs {}",
        gzipped.len(),
        plain.len()
    );
    // So is the OpenAPI document.
    let document = get_gzipped(&http, &served, "/openapi.json").await;
    assert_eq!(document.headers()["content-encoding"], "gzip");
    // A route with `compress = false` is not, and does not vary on the header.
    let uncompressed = get_gzipped(&http, &served, "/plain/todos").await;
    assert_eq!(uncompressed.status(), 200);
    assert!(uncompressed.headers().get("content-encoding").is_none());
    assert!(uncompressed.headers().get("vary").is_none());
    assert_eq!(uncompressed.bytes().await.unwrap().len(), plain.len());
}

#[tokio::test]
async fn the_compression_level_is_the_servers() {
    use opkit_adapters::http_server::CompressionLevel;
    let registry = todos_registry();
    let serve_at = |level: CompressionLevel| {
        let server = HttpServer::new(registry.clone()).compression_level(level);
        serve_with(move |listener| server.serve(listener))
    };
    let fastest = serve_at(CompressionLevel::Fastest).await;
    let best = serve_at(CompressionLevel::Best).await;
    let http = reqwest::Client::new();
    // ~20 KB of todos.
    add_todos(&http, &fastest, 200, |n| {
        format!("todo number {n}, with some words that repeat across the todos")
    })
    .await;
    let plain = http.get(best.url("/todos")).send().await.unwrap();
    let plain: Value = plain.json().await.unwrap();
    // The gzip header's `XFL` byte says which the compressor used: 4 the fastest, 2 the best.
    for (served, xfl) in [(&fastest, 4), (&best, 2)] {
        let gzipped = get_gzipped(&http, served, "/todos").await;
        assert_eq!(gzipped.headers()["content-encoding"], "gzip");
        let body = gzipped.bytes().await.unwrap();
        let mut json = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&body[..]), &mut json)
            .unwrap();
        assert_eq!(serde_json::from_slice::<Value>(&json).unwrap(), plain);
        assert_eq!(body[8], xfl, "{:?}", &body[..10]);
    }
}

#[tokio::test]
async fn answers_under_the_minimum_size_are_sent_as_they_are() {
    // One todo: an answer of ~100 bytes, under the default minimum (1,400 bytes) and over
    // tower-http's (32).
    for (min_size, compressed) in [(None, false), (Some(32), true)] {
        let registry = todos_registry();
        let server = || {
            let server = HttpServer::new(registry.clone());
            match min_size {
                Some(bytes) => server.compression_min_size(bytes),
                None => server,
            }
        };
        let routed = serve(server().router()).await;
        let server = server();
        let served = serve_with(|listener| server.serve(listener)).await;
        for served in [routed, served] {
            let http = reqwest::Client::new();
            http.post(served.url("/todos"))
                .json(&json!({"text": "short"}))
                .send()
                .await
                .unwrap();
            let answer = |gzip: bool| {
                let request = http.get(served.url("/todos"));
                let request = if gzip {
                    request.header("accept-encoding", "gzip")
                } else {
                    request
                };
                async move { request.send().await.unwrap() }
            };
            let plain = answer(false).await;
            let vary = plain.headers().get("vary").cloned();
            let plain = plain.bytes().await.unwrap();
            assert!(
                (32..1400).contains(&plain.len()),
                "between the minimums: {}",
                plain.len()
            );
            let asked = answer(true).await;
            let context = format!("minimum {min_size:?}: {:?}", asked.headers());
            assert_eq!(
                asked.headers().contains_key("content-encoding"),
                compressed,
                "{context}"
            );
            // An answer that is never compressed does not vary on the header; one that is,
            // does, asked or not.
            let expected = compressed.then(|| http::HeaderValue::from_static("accept-encoding"));
            assert_eq!(asked.headers().get("vary").cloned(), expected, "{context}");
            assert_eq!(vary, expected, "{context}");
            if !compressed {
                assert_eq!(asked.bytes().await.unwrap(), plain, "{context}");
            }
        }
    }
}

/// An upload: a file and its caption.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
struct Upload {
    name: String,
    caption: String,
    size: usize,
    rating: u8,
}

/// Stores a picture with its caption and rating.
#[operation(
    namespace = "files",
    mutation,
    http(method = "POST", path = "/albums/{album}/pictures", status = 201)
)]
async fn upload(album: String, file: opkit::binary::Binary, caption: String, rating: u8) -> Upload {
    Upload {
        name: album,
        caption,
        size: file.as_ref().len(),
        rating,
    }
}

#[tokio::test]
async fn a_multipart_body_gives_a_file_and_its_fields() {
    let registry = OperationRegistry::new();
    registry.register_operation(upload).unwrap();
    let served = serve(HttpServer::new(registry).router()).await;
    let form = reqwest::multipart::Form::new()
        .part(
            "file",
            reqwest::multipart::Part::bytes(vec![7u8; 10_000]).file_name("cat.png"),
        )
        .text("caption", "a cat")
        .text("rating", "5");
    let response = reqwest::Client::new()
        .post(served.url("/albums/pets/pictures"))
        .multipart(form)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 201);
    let body: Value = response.json().await.unwrap();
    assert_eq!(
        body,
        json!({"name": "pets", "caption": "a cat", "size": 10_000, "rating": 5})
    );
    // A field that fails its schema is a validation error naming it.
    let form = reqwest::multipart::Form::new()
        .part("file", reqwest::multipart::Part::bytes(vec![1u8]))
        .text("caption", "x")
        .text("rating", "lots");
    let response = reqwest::Client::new()
        .post(served.url("/albums/pets/pictures"))
        .multipart(form)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    let error: Value = response.json().await.unwrap();
    assert!(
        error["message"].as_str().unwrap().contains("rating"),
        "{error}"
    );
}

#[cfg(feature = "mcp-server")]
#[tokio::test]
async fn over_mcp_a_binary_output_is_a_blob_resource() {
    let registry = OperationRegistry::new().with_state(Store::default());
    registry.register_operation(get_value).unwrap();
    registry.register_operation(set_value).unwrap();
    let served = serve(axum::Router::new().nest(
        "/mcp",
        opkit_adapters::mcp_server::McpServer::new(registry).router(),
    ))
    .await;
    let calls = json!([
        {"name": "kv.set_value", "arguments": {"key": "k", "value": "aGVsbG8="}},
        {"name": "kv.get_value", "arguments": {"key": "k"}},
    ]);
    let report = serve_support::ts_client(&served.url("/mcp"), "", &calls).await;
    let result = &report["calls"][1]["result"];
    assert_eq!(
        result["structuredContent"]["result"], "aGVsbG8=",
        "{report}"
    );
    let blob = result["content"]
        .as_array()
        .unwrap()
        .iter()
        .find(|block| block["type"] == "resource")
        .unwrap_or_else(|| panic!("a resource block in {result}"));
    assert_eq!(blob["resource"]["blob"], "aGVsbG8=");
    assert_eq!(blob["resource"]["mimeType"], "application/octet-stream");
}
