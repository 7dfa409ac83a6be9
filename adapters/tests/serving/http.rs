//! The HTTP server (feature `http-server`) against a hand-written reqwest client: routes,
//! methods, statuses, access, limits, SSE subscriptions (including cancellation on
//! disconnect), the OpenAPI document, and a round trip driven by that document.
#![cfg(feature = "http-server")]

use crate::serve_support;
use serve_support::serve_fixtures;

use futures::StreamExt;
use opkit::prelude::*;
use opkit_adapters::http_server::HttpServer;
use serde_json::{Value, json};
use serve_fixtures::{fixture_registry, fixture_tokens};
use serve_support::{Served, parse_sse, serve};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

fn server(registry: OperationRegistry) -> HttpServer {
    HttpServer::new(registry).identity_resolver(fixture_tokens())
}

async fn start(registry: OperationRegistry) -> Served {
    serve(server(registry).router()).await
}

async fn json_of(response: reqwest::Response) -> (u16, Value) {
    let status = response.status().as_u16();
    let body = response.json::<Value>().await.expect("a JSON body");
    (status, body)
}

#[tokio::test]
async fn query_by_get_and_post_give_the_same_envelope() {
    let served = start(fixture_registry(false)).await;
    let client = reqwest::Client::new();
    let (status, by_get) = json_of(
        client
            .get(served.url("/ops/math.add?a=2&b=40"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200, "{by_get}");
    assert_eq!(by_get["data"], json!({"sum": 42}));
    assert_eq!(by_get["meta"]["source"], "local");
    assert_eq!(by_get["meta"]["operationId"], "math.add");
    assert!(by_get["meta"]["timestamp"].is_u64());
    assert!(opkit::envelope::is_response_envelope(&by_get));
    let (status, by_post) = json_of(
        client
            .post(served.url("/ops/math.add"))
            .json(&json!({"a": 2, "b": 40}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(by_post["data"], by_get["data"]);
    // A non-object output travels as is.
    let (status, doubled) = json_of(
        client
            .get(served.url("/ops/math.double?n=21"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!((status, doubled["data"].clone()), (200, json!(42)));
}

#[tokio::test]
async fn mutations_take_post_only_and_check_access() {
    let served = start(fixture_registry(false)).await;
    let client = reqwest::Client::new();
    let url = served.url("/ops/users.create");
    let response = client.get(&url).send().await.unwrap();
    assert_eq!(response.status().as_u16(), 405);
    assert_eq!(response.headers()["allow"], "POST");
    let (_, body) = json_of(response).await;
    assert_eq!(body["code"], "VALIDATION_ERROR");

    let body = json!({"name": "Ada"});
    let anonymous = client.post(&url).json(&body).send().await.unwrap();
    assert_eq!(
        anonymous.status().as_u16(),
        401,
        "anonymous callers are told to authenticate"
    );
    assert_eq!(anonymous.headers()["www-authenticate"], "Bearer");
    let (_, error) = json_of(anonymous).await;
    assert_eq!(error["code"], "ACCESS_DENIED");

    let bad_token = client
        .post(&url)
        .bearer_auth("nope")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(bad_token.status().as_u16(), 401);
    assert!(
        bad_token.headers()["www-authenticate"]
            .to_str()
            .unwrap()
            .starts_with("Bearer")
    );
    let (_, error) = json_of(bad_token).await;
    assert_eq!(error["code"], "ACCESS_DENIED");

    let not_bearer = client
        .post(&url)
        .header("authorization", "Basic dXNlcjpwdw==")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(not_bearer.status().as_u16(), 401);

    let reader = client
        .post(&url)
        .bearer_auth("reader-token")
        .json(&body)
        .send()
        .await
        .unwrap();
    let (status, error) = json_of(reader).await;
    assert_eq!(status, 403);
    assert!(
        error["message"].as_str().unwrap().contains("users:write"),
        "{error}"
    );

    let writer = client
        .post(&url)
        .bearer_auth("writer-token")
        .json(&body)
        .send()
        .await
        .unwrap();
    let (status, envelope) = json_of(writer).await;
    assert_eq!(status, 200, "{envelope}");
    assert_eq!(
        envelope["data"],
        json!({"id": 3, "name": "Ada", "createdBy": "writer"})
    );

    // Roles: admin.stats needs the admin role.
    let stats = served.url("/ops/admin.stats");
    let writer = client
        .get(&stats)
        .bearer_auth("writer-token")
        .send()
        .await
        .unwrap();
    assert_eq!(writer.status().as_u16(), 403);
    let admin = client
        .get(&stats)
        .bearer_auth("admin-token")
        .send()
        .await
        .unwrap();
    assert_eq!(admin.status().as_u16(), 200);
}

#[tokio::test]
async fn an_api_key_authenticator_and_an_identity_from_the_apps_middleware() {
    use opkit_adapters::http_server::ApiKeyAuth;
    let http = HttpServer::new(fixture_registry(false)).authenticator(ApiKeyAuth::header(
        "x-api-key",
        |key: &str| {
            (key == "k-writer").then(|| Identity::new("writer").with_scopes(["users:write"]))
        },
    ));
    let document = http.openapi();
    assert_eq!(
        document["components"]["securitySchemes"]["apiKeyAuth"]["name"],
        "x-api-key"
    );
    assert_eq!(document["servers"][0]["url"], "/");
    let served = serve(http.router()).await;
    let client = reqwest::Client::new();
    let create = |key: Option<&str>| {
        let request = client
            .post(served.url("/ops/users.create"))
            .json(&json!({"name": "x"}));
        match key {
            Some(key) => request.header("x-api-key", key),
            None => request,
        }
    };
    assert_eq!(
        create(Some("k-writer"))
            .send()
            .await
            .unwrap()
            .status()
            .as_u16(),
        200
    );
    let (status, error) = json_of(create(Some("wrong")).send().await.unwrap()).await;
    assert_eq!(
        (status, &error["kind"]),
        (401, &json!("UNAUTHENTICATED")),
        "{error}"
    );
    assert!(error["message"].as_str().unwrap().contains("x-api-key"));
    // Anonymous, with an authenticator configured: 401 so that the caller knows to send a key.
    assert_eq!(create(None).send().await.unwrap().status().as_u16(), 401);

    // An app whose own middleware decided who calls: its Identity in the extensions is used,
    // whatever the authenticator would say.
    let app = HttpServer::new(fixture_registry(false))
        .router()
        .layer(axum::middleware::from_fn(
            |mut request: axum::extract::Request, next: axum::middleware::Next| async move {
                if request.headers().contains_key("x-session") {
                    request
                        .extensions_mut()
                        .insert(Identity::new("session-user").with_scopes(["users:write"]));
                }
                next.run(request).await
            },
        ));
    let served = serve(app).await;
    let response = client
        .post(served.url("/ops/users.create"))
        .header("x-session", "1")
        .json(&json!({"name": "x"}))
        .send()
        .await
        .unwrap();
    let (status, body) = json_of(response).await;
    assert_eq!(status, 200, "{body}");
}

#[tokio::test]
async fn nested_under_a_prefix_the_document_and_hints_name_it() {
    let app =
        axum::Router::new().nest("/api/v1", HttpServer::new(fixture_registry(false)).router());
    let served = serve(app).await;
    let document: Value = reqwest::get(served.url("/api/v1/openapi.json"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(document["servers"][0]["url"], "/api/v1");
    let (status, error) = json_of(reqwest::get(served.url("/api/v1/nope")).await.unwrap()).await;
    assert_eq!(status, 404);
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("served at /api/v1/ops/<id>"),
        "{error}"
    );
    let fixed = HttpServer::new(fixture_registry(false)).base_path("/behind/proxy/");
    assert_eq!(fixed.openapi()["servers"][0]["url"], "/behind/proxy");
}

/// `GET url` with `Accept-Encoding: encoding` and `If-None-Match: tag` when given: the
/// status, headers and body as sent.
async fn get_document(
    client: &reqwest::Client,
    url: String,
    encoding: Option<&str>,
    tag: Option<String>,
) -> (u16, reqwest::header::HeaderMap, bytes::Bytes) {
    let mut request = client.get(url);
    if let Some(encoding) = encoding {
        request = request.header("accept-encoding", encoding);
    }
    if let Some(tag) = tag {
        request = request.header("if-none-match", tag);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    (status, headers, response.bytes().await.unwrap())
}

#[tokio::test]
async fn the_document_is_built_once_per_change_and_revalidated_by_its_etag() {
    let registry = fixture_registry(false);
    let server = HttpServer::new(registry.clone());
    let root = serve(server.router()).await;
    let nested = serve(axum::Router::new().nest("/api", server.router())).await;
    let client = reqwest::Client::new();
    let get = |url: String, tag: Option<String>| {
        let answer = get_document(&client, url, None, tag);
        async move {
            let (status, headers, body) = answer.await;
            let etag = headers["etag"].to_str().unwrap().to_owned();
            assert_eq!(headers["cache-control"], "no-cache");
            (status, etag, body)
        }
    };
    let document = |body: &[u8]| serde_json::from_slice::<Value>(body).unwrap();

    // What `HttpServer::openapi` builds, each mount point with its `servers` entry and tag.
    let (status, tag, body) = get(root.url("/openapi.json"), None).await;
    assert_eq!(status, 200);
    assert_eq!(document(&body), server.openapi());
    let (status, nested_tag, nested_body) = get(nested.url("/api/openapi.json"), None).await;
    assert_eq!(status, 200);
    let mut expected = server.openapi();
    expected["servers"][0]["url"] = json!("/api");
    assert_eq!(document(&nested_body), expected);
    assert_ne!(tag, nested_tag);

    // A client that holds it is told so, whichever way it says it holds it.
    for held in [
        tag.clone(),
        format!("W/{tag}"),
        format!("\"other\", {tag}"),
        "*".into(),
    ] {
        let (status, again, body) = get(root.url("/openapi.json"), Some(held.clone())).await;
        assert_eq!((status, &again, body.len()), (304, &tag, 0), "{held}");
    }
    let (status, _, body) = get(root.url("/openapi.json"), Some(nested_tag.clone())).await;
    assert_eq!((status, document(&body)), (200, server.openapi()));

    // A change of the registry is in the next answer, under a new tag; concurrent requests
    // after it all get the new document.
    registry
        .register(
            OperationSpec::new("late", "added", OperationKind::Query),
            Handler::unary(|_input, _ctx| async { Ok(json!(1)) }),
        )
        .unwrap();
    let answers = futures::future::join_all(
        (0..8).map(|_| get(root.url("/openapi.json"), Some(tag.clone()))),
    )
    .await;
    let current = server.openapi();
    assert!(current["paths"].get("/ops/late.added").is_some());
    for (status, new_tag, body) in answers {
        assert_eq!(status, 200);
        assert_ne!(new_tag, tag);
        assert_eq!(document(&body), current);
    }
}

#[tokio::test]
async fn the_document_is_gzipped_once_for_the_clients_that_accept_it() {
    let registry = fixture_registry(false);
    let server = HttpServer::new(registry.clone());
    let served = serve(server.router()).await;
    let plain = serve(HttpServer::new(registry).compression(false).router()).await;
    let client = reqwest::Client::new();
    let get = |url: String, encoding: &'static str, tag: Option<String>| {
        get_document(&client, url, Some(encoding), tag)
    };
    let gunzip = |body: &[u8]| {
        let mut json = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(body), &mut json).unwrap();
        serde_json::from_slice::<Value>(&json).unwrap()
    };
    let header = |headers: &reqwest::header::HeaderMap, name: &str| {
        headers
            .get(name)
            .map(|value| value.to_str().unwrap().to_owned())
    };

    let (status, identity, body) = get(served.url("/openapi.json"), "identity", None).await;
    assert_eq!(status, 200);
    assert_eq!(header(&identity, "content-encoding"), None);
    assert_eq!(
        header(&identity, "vary").as_deref(),
        Some("accept-encoding")
    );
    assert_eq!(
        serde_json::from_slice::<Value>(&body).unwrap(),
        server.openapi()
    );
    for _ in 0..2 {
        let (status, gzipped, body) = get(served.url("/openapi.json"), "br, gzip", None).await;
        assert_eq!(status, 200);
        assert_eq!(
            header(&gzipped, "content-encoding").as_deref(),
            Some("gzip")
        );
        assert_eq!(header(&gzipped, "vary").as_deref(), Some("accept-encoding"));
        assert_eq!(gunzip(&body), server.openapi());
        // Two representations, two tags; each revalidates only itself.
        assert_ne!(gzipped["etag"], identity["etag"]);
        let tag = header(&gzipped, "etag");
        let (status, _, body) = get(served.url("/openapi.json"), "gzip", tag.clone()).await;
        assert_eq!((status, body.len()), (304, 0));
        let (status, _, _) = get(served.url("/openapi.json"), "identity", tag).await;
        assert_eq!(status, 200);
    }
    // Refused by weight, or a server that does not compress: as it is, not varying.
    let (_, refused, body) = get(served.url("/openapi.json"), "gzip;q=0", None).await;
    assert_eq!(header(&refused, "content-encoding"), None);
    assert_eq!(
        serde_json::from_slice::<Value>(&body).unwrap(),
        server.openapi()
    );
    let (_, uncompressed, body) = get(plain.url("/openapi.json"), "gzip", None).await;
    assert_eq!(header(&uncompressed, "content-encoding"), None);
    assert_eq!(header(&uncompressed, "vary"), None);
    assert_eq!(
        serde_json::from_slice::<Value>(&body).unwrap(),
        server.openapi()
    );
}

#[tokio::test]
async fn without_a_resolver_tokens_are_ignored() {
    let served = serve(HttpServer::new(fixture_registry(false)).router()).await;
    let client = reqwest::Client::new();
    let response = client
        .get(served.url("/ops/math.add?a=1&b=1"))
        .bearer_auth("anything")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let response = client
        .post(served.url("/ops/users.create"))
        .bearer_auth("writer-token")
        .json(&json!({"name": "x"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 403);
}

#[tokio::test]
async fn invalid_requests_are_client_errors() {
    let served = serve(server(fixture_registry(false)).body_limit(256).router()).await;
    let client = reqwest::Client::new();
    let url = served.url("/ops/math.add");

    let (status, error) = json_of(
        client
            .post(&url)
            .json(&json!({"a": "x"}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 400);
    assert_eq!(error["code"], "VALIDATION_ERROR");
    let details = error["details"].as_array().expect("violations");
    assert_eq!(details.len(), 2, "every violation is listed: {error}");
    assert!(details.iter().any(|violation| violation["path"] == "/a"));

    let (status, error) = json_of(
        client
            .get(served.url("/ops/math.add?a=x&b=1"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (status, error["code"].as_str()),
        (400, Some("VALIDATION_ERROR"))
    );

    let (status, error) = json_of(
        client
            .get(served.url("/ops/math.add?a=1&a=2&b=1"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 400, "{error}");

    let (status, error) = json_of(
        client
            .post(&url)
            .header("content-type", "application/json")
            .body("{not json")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (status, error["code"].as_str()),
        (400, Some("VALIDATION_ERROR"))
    );

    let response = client
        .post(&url)
        .header("content-type", "text/plain")
        .body("a=1")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 415);

    let big = json!({"a": 1, "b": 2, "padding": "x".repeat(1000)});
    let (status, error) = json_of(client.post(&url).json(&big).send().await.unwrap()).await;
    assert_eq!(status, 413, "{error}");

    // A streamed (chunked) body over the limit is cut off too.
    let chunks =
        futures::stream::iter((0..8).map(|_| Ok::<_, std::io::Error>(bytes_of(&"y".repeat(100)))));
    let response = client
        .post(&url)
        .header("content-type", "application/json")
        .body(reqwest::Body::wrap_stream(chunks))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 413);

    // An empty body is `{}`: missing required properties.
    let (status, error) = json_of(client.post(&url).send().await.unwrap()).await;
    assert_eq!(status, 400);
    assert_eq!(error["details"].as_array().unwrap().len(), 2);
}

fn bytes_of(text: &str) -> Vec<u8> {
    text.as_bytes().to_vec()
}

#[tokio::test]
async fn unknown_operations_and_routes_are_404() {
    let served = start(fixture_registry(false)).await;
    let client = reqwest::Client::new();
    let (status, error) = json_of(
        client
            .post(served.url("/ops/math.nope"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (status, error["code"].as_str()),
        (404, Some("OPERATION_NOT_FOUND"))
    );
    let (status, error) = json_of(client.get(served.url("/elsewhere")).send().await.unwrap()).await;
    assert_eq!(
        (status, error["code"].as_str()),
        (404, Some("OPERATION_NOT_FOUND"))
    );
}

/// Operations registered before the router was built have routes of their own; the ones
/// registered after are served at `/ops/{id}`: both answer alike, and a replaced or removed
/// operation is served as the registry holds it now.
#[tokio::test]
async fn operations_registered_before_and_after_the_router_are_served_alike() {
    let registry = OperationRegistry::new();
    let constant = |value: i64| Handler::unary(move |_input, _ctx| async move { Ok(json!(value)) });
    let spec = |name: &str| OperationSpec::new("late", name, OperationKind::Query);
    registry.register(spec("early"), constant(1)).unwrap();
    let served = start(registry.clone()).await;
    registry.register(spec("later"), constant(2)).unwrap();
    let client = reqwest::Client::new();
    let data = |path: &'static str| {
        let request = client.post(served.url(path)).json(&json!({}));
        async move {
            let (status, body) = json_of(request.send().await.unwrap()).await;
            (status, body["data"].clone(), body["code"].clone())
        }
    };
    assert_eq!(data("/ops/late.early").await, (200, json!(1), Value::Null));
    assert_eq!(data("/ops/late.later").await, (200, json!(2), Value::Null));
    // A percent-encoded id is not the static path: `/ops/{id}` decodes it.
    assert_eq!(
        data("/ops/late%2Eearly").await,
        (200, json!(1), Value::Null)
    );
    registry.replace(spec("early"), constant(3)).unwrap();
    assert_eq!(data("/ops/late.early").await, (200, json!(3), Value::Null));
    assert!(registry.unregister("late.early"));
    let gone = (404, Value::Null, json!("OPERATION_NOT_FOUND"));
    assert_eq!(data("/ops/late.early").await, gone);
    assert!(registry.unregister("late.later"));
    assert_eq!(data("/ops/late.later").await, gone);
}

#[tokio::test]
async fn call_errors_map_to_statuses() {
    let served = serve(
        server(fixture_registry(true))
            .request_timeout(Duration::from_millis(200))
            .router(),
    )
    .await;
    let client = reqwest::Client::new();
    let (status, error) = json_of(
        client
            .post(served.url("/ops/jobs.fail"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (status, error["code"].as_str()),
        (500, Some("EXECUTION_ERROR"))
    );
    assert_eq!(error["message"], "the job failed");
    let (status, error) = json_of(
        client
            .get(served.url("/ops/jobs.panic"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (status, error["code"].as_str()),
        (500, Some("EXECUTION_ERROR"))
    );
    let (status, error) = json_of(
        client
            .get(served.url("/ops/jobs.slow?ms=600000"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!((status, error["code"].as_str()), (504, Some("TIMEOUT")));
    // The server still answers afterwards.
    let response = client
        .get(served.url("/ops/jobs.slow?ms=0"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
}

#[tokio::test]
async fn envelopes_of_handlers_pass_through() {
    let served = start(fixture_registry(false)).await;
    let (status, envelope) =
        json_of(reqwest::get(served.url("/ops/web.health")).await.unwrap()).await;
    assert_eq!(status, 200);
    assert_eq!(envelope["data"], json!({"status": "ok"}));
    assert_eq!(envelope["meta"]["source"], "http");
    assert_eq!(envelope["meta"]["statusCode"], 200);
}

#[tokio::test]
async fn object_and_array_parameters_by_get_match_post() {
    let served = start(fixture_registry(false)).await;
    let client = reqwest::Client::new();
    let response = client
        .get(served.url("/ops/text.search"))
        .query(&[
            ("filter", r#"{"prefix":"al"}"#),
            ("tags", "x"),
            ("tags", "y"),
            ("limit", "1"),
        ])
        .send()
        .await
        .unwrap();
    let (status, by_get) = json_of(response).await;
    assert_eq!(status, 200, "{by_get}");
    assert_eq!(by_get["data"], json!(["alpha"]));
    let (_, by_post) = json_of(
        client
            .post(served.url("/ops/text.search"))
            .json(&json!({"filter": {"prefix": "al"}, "tags": ["x", "y"], "limit": 1}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(by_post["data"], by_get["data"]);
    let (status, error) = json_of(
        client
            .get(served.url("/ops/text.search?filter=%7Bbroken"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (status, error["details"][0]["path"].as_str()),
        (400, Some("/filter"))
    );
}

#[tokio::test]
async fn request_ids_are_echoed() {
    let served = start(fixture_registry(false)).await;
    let response = reqwest::Client::new()
        .get(served.url("/ops/math.add?a=1&b=2"))
        .header("x-request-id", "req-42")
        .send()
        .await
        .unwrap();
    assert_eq!(response.headers()["x-request-id"], "req-42");
}

#[tokio::test]
async fn subscriptions_stream_one_event_per_envelope_then_complete() {
    let served = start(fixture_registry(false)).await;
    let response = reqwest::get(served.url("/ops/clock.ticks?count=3"))
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let headers = response.headers().clone();
    assert!(
        headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    assert_eq!(headers["x-accel-buffering"], "no");
    let request_id = headers["x-request-id"].to_str().unwrap().to_owned();
    let events = parse_sse(&response.text().await.unwrap());
    assert_eq!(events.len(), 4, "{events:?}");
    for (index, event) in events[..3].iter().enumerate() {
        assert_eq!(event.event, "message");
        assert_eq!(event.id.as_deref(), Some(index.to_string().as_str()));
        let envelope: Value = serde_json::from_str(&event.data).unwrap();
        assert_eq!(envelope["data"], json!({"tick": index}));
        assert_eq!(envelope["meta"]["operationId"], "clock.ticks");
    }
    assert_eq!(events[3].event, "complete");
    let complete: Value = serde_json::from_str(&events[3].data).unwrap();
    assert_eq!(complete, json!({"requestId": request_id}));

    // POST works as well.
    let response = reqwest::Client::new()
        .post(served.url("/ops/clock.ticks"))
        .json(&json!({"count": 2}))
        .send()
        .await
        .unwrap();
    let events = parse_sse(&response.text().await.unwrap());
    assert_eq!(events.len(), 3);
}

#[tokio::test]
async fn the_compact_encoding_sends_each_items_data_alone() {
    let served = start(fixture_registry(true)).await;
    let client = reqwest::Client::new();
    let response = client
        .get(served.url("/ops/clock.ticks?count=3"))
        .header("accept", "text/event-stream; opkit=data")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    assert_eq!(
        response.headers()["content-type"],
        "text/event-stream; opkit=data"
    );
    let request_id = response.headers()["x-request-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let events = parse_sse(&response.text().await.unwrap());
    assert_eq!(events.len(), 4, "{events:?}");
    for (index, event) in events[..3].iter().enumerate() {
        assert_eq!(event.event, "message");
        assert_eq!(event.id, None, "no id in the compact encoding");
        let data: Value = serde_json::from_str(&event.data).unwrap();
        assert_eq!(data, json!({"tick": index}));
    }
    assert_eq!(events[3].event, "complete");
    let complete: Value = serde_json::from_str(&events[3].data).unwrap();
    assert_eq!(complete, json!({"requestId": request_id}));

    // A failure is the same `error` event as in the envelope encoding.
    let response = client
        .post(served.url("/ops/jobs.broken"))
        .header("accept", "text/event-stream; opkit=data")
        .send()
        .await
        .unwrap();
    let events = parse_sse(&response.text().await.unwrap());
    assert_eq!(events.len(), 2, "{events:?}");
    assert_eq!(events[0].id, None);
    assert_eq!(events[1].event, "error");
    let error: Value = serde_json::from_str(&events[1].data).unwrap();
    assert_eq!(error["code"], "EXECUTION_ERROR");
}

#[tokio::test]
async fn a_failing_subscription_ends_with_an_error_event() {
    let served = start(fixture_registry(true)).await;
    let client = reqwest::Client::new();
    let response = client
        .post(served.url("/ops/jobs.broken"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let events = parse_sse(&response.text().await.unwrap());
    assert_eq!(events.len(), 2, "{events:?}");
    assert_eq!(events[0].event, "message");
    assert_eq!(events[1].event, "error");
    let error: Value = serde_json::from_str(&events[1].data).unwrap();
    assert_eq!(error["code"], "EXECUTION_ERROR");
    assert_eq!(error["message"], "the stream broke");

    // Errors before the stream starts are plain JSON errors.
    let (status, error) = json_of(
        client
            .get(served.url("/ops/clock.ticks?count=100"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (status, error["code"].as_str()),
        (400, Some("VALIDATION_ERROR"))
    );
}

#[tokio::test]
async fn subscription_timeouts_end_the_stream_with_an_error_event() {
    let registry = OperationRegistry::new();
    registry
        .register(
            OperationSpec::new("test", "never", OperationKind::Subscription),
            Handler::stream(|_input, _ctx| futures::stream::pending()),
        )
        .unwrap();
    let served = serve(
        server(registry)
            .subscription_timeout(Some(Duration::from_millis(100)))
            .router(),
    )
    .await;
    let response = reqwest::Client::new()
        .post(served.url("/ops/test.never"))
        .send()
        .await
        .unwrap();
    let events = parse_sse(&response.text().await.unwrap());
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0].event, "error");
    assert!(events[0].data.contains("TIMEOUT"));
}

#[tokio::test]
async fn an_idle_subscription_is_kept_alive_with_comments() {
    // One item, then nothing until the test says so, then a last item.
    let (release, released) = tokio::sync::oneshot::channel::<()>();
    let released = Arc::new(std::sync::Mutex::new(Some(released)));
    let registry = OperationRegistry::new();
    registry
        .register(
            OperationSpec::new("test", "pauses", OperationKind::Subscription),
            Handler::stream(move |_input, _ctx| {
                let released = released.lock().unwrap().take().expect("subscribed once");
                futures::stream::once(async { Ok(json!({"n": 0})) }).chain(futures::stream::once(
                    async move {
                        let _ = released.await;
                        Ok(json!({"n": 1}))
                    },
                ))
            }),
        )
        .unwrap();
    let served = serve(
        server(registry)
            .keep_alive(Duration::from_millis(50))
            .router(),
    )
    .await;
    let response = reqwest::Client::new()
        .post(served.url("/ops/test.pauses"))
        .send()
        .await
        .unwrap();
    let mut body = response.bytes_stream();
    let mut text = String::new();
    // The first item, then two keep-alive comments while the stream waits (each between one
    // and two intervals after the last thing sent).
    let comments =
        |text: &str| text.matches("\n:\n\n").count() + usize::from(text.starts_with(":\n\n"));
    while comments(&text) < 2 {
        let chunk = tokio::time::timeout(Duration::from_secs(20), body.next())
            .await
            .expect("a keep-alive comment while the stream is idle")
            .expect("the body goes on")
            .expect("bytes");
        text.push_str(std::str::from_utf8(&chunk).unwrap());
    }
    assert!(text.starts_with("data: "), "{text:?}");
    release.send(()).unwrap();
    while let Some(chunk) = tokio::time::timeout(Duration::from_secs(20), body.next())
        .await
        .expect("the stream ends once released")
    {
        text.push_str(std::str::from_utf8(&chunk.unwrap()).unwrap());
    }
    // The comments are skipped by a client: the events are the two items and `complete`.
    let events = parse_sse(&text);
    let data: Vec<&str> = events.iter().map(|event| event.event.as_str()).collect();
    assert_eq!(data, ["message", "message", "complete"], "{text:?}");
    let second: Value = serde_json::from_str(&events[1].data).unwrap();
    assert_eq!(second["data"], json!({"n": 1}));
}

/// Sets a flag when dropped.
struct DropFlag(Arc<AtomicBool>, Option<tokio::sync::oneshot::Sender<()>>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
        if let Some(sender) = self.1.take() {
            let _ = sender.send(());
        }
    }
}

#[tokio::test]
async fn a_client_disconnect_drops_the_handler_stream_and_cancels_the_context() {
    let dropped = Arc::new(AtomicBool::new(false));
    let (dropped_tx, dropped_rx) = tokio::sync::oneshot::channel();
    let (cancelled_tx, cancelled_rx) = tokio::sync::oneshot::channel::<()>();
    let slot = Arc::new(std::sync::Mutex::new(Some((dropped_tx, cancelled_tx))));
    let registry = OperationRegistry::new();
    let flag = dropped.clone();
    registry
        .register(
            OperationSpec::new("test", "forever", OperationKind::Subscription),
            Handler::stream(move |_input, ctx: OperationContext| {
                let (dropped_tx, cancelled_tx) =
                    slot.lock().unwrap().take().expect("subscribed once");
                tokio::spawn(async move {
                    ctx.cancelled().await;
                    let _ = cancelled_tx.send(());
                });
                let guard = DropFlag(flag.clone(), Some(dropped_tx));
                futures::stream::unfold((0_u64, guard), |(count, guard)| async move {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    Some((Ok(json!({"n": count})), (count + 1, guard)))
                })
            }),
        )
        .unwrap();
    let served = start(registry).await;
    let response = reqwest::Client::new()
        .post(served.url("/ops/test.forever"))
        .send()
        .await
        .unwrap();
    let mut body = response.bytes_stream();
    let first = body.next().await.expect("a first chunk").expect("bytes");
    assert!(String::from_utf8_lossy(&first).contains("data:"));
    assert!(!dropped.load(Ordering::SeqCst));
    drop(body);
    tokio::time::timeout(Duration::from_secs(20), dropped_rx)
        .await
        .expect("the handler stream is dropped after the client disconnects")
        .expect("drop signal");
    tokio::time::timeout(Duration::from_secs(20), cancelled_rx)
        .await
        .expect("the context is cancelled after the client disconnects")
        .expect("cancel signal");
}

/// Every `$ref` in `value` points at something in `doc`.
fn assert_refs_resolve(doc: &Value, value: &Value) {
    match value {
        Value::Object(map) => {
            for (key, item) in map {
                if key == "$ref" {
                    let reference = item.as_str().expect("string ref");
                    let pointer = reference.strip_prefix('#').expect("local ref");
                    assert!(doc.pointer(pointer).is_some(), "dangling {reference}");
                } else {
                    assert_refs_resolve(doc, item);
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|item| assert_refs_resolve(doc, item)),
        _ => {}
    }
}

#[tokio::test]
async fn the_openapi_document_describes_every_operation() {
    let registry = fixture_registry(true);
    let served = start(registry.clone()).await;
    let doc: Value = reqwest::get(served.url("/openapi.json"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(doc["openapi"], "3.1.0");
    assert_refs_resolve(&doc, &doc);
    let paths = doc["paths"].as_object().unwrap();
    assert_eq!(paths.len(), registry.len());
    for spec in registry.specs() {
        let id = spec.id();
        let item = paths[&format!("/ops/{id}")].as_object().unwrap();
        // Mutations: POST. Queries and subscriptions here: GET (canonical) and its POST twin.
        let canonical = if spec.kind == OperationKind::Mutation {
            assert_eq!(item.len(), 1, "{id}");
            &item["post"]
        } else {
            assert_eq!(item.len(), 2, "{id}");
            let alias = &item["post"];
            assert_eq!(alias["operationId"], format!("{id}.post"));
            assert_eq!(alias["x-opkit-alias"], true);
            assert_eq!(alias["x-opkit-id"], id.as_str());
            &item["get"]
        };
        assert_eq!(canonical["operationId"], id.as_str());
        assert!(canonical.get("x-opkit-alias").is_none());
        for (method, op) in item {
            assert_eq!(op["x-opkit-kind"], spec.kind.as_str());
            for status in ["200", "400", "401", "404", "500", "504"] {
                assert!(
                    op["responses"].get(status).is_some(),
                    "{id} documents {status}"
                );
            }
            assert_eq!(
                op["responses"].get("403").is_some(),
                !spec.access.is_public()
            );
            assert_eq!(op["responses"].get("413").is_some(), method == "post");
            let content = &op["responses"]["200"]["content"];
            if spec.kind.is_stream() {
                let events = &content["text/event-stream"]["schema"];
                assert_eq!(
                    events["oneOf"][0]["properties"]["data"]["contentSchema"]["$ref"],
                    format!("#/components/schemas/{id}.Envelope")
                );
            } else {
                assert_eq!(
                    content["application/json"]["schema"]["$ref"],
                    format!("#/components/schemas/{id}.Envelope")
                );
            }
        }
    }
    let schemas = &doc["components"]["schemas"];
    assert!(schemas.get("CallError").is_some());
    assert!(schemas.get("text.search.Input.Filter").is_some());
    assert_eq!(
        schemas["math.add.Input"]["properties"]["a"]["type"],
        "integer"
    );
    assert_eq!(
        doc["components"]["securitySchemes"]["bearerAuth"]["scheme"],
        "bearer"
    );
    let search = &doc["paths"]["/ops/text.search"]["get"]["parameters"];
    let filter = search
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "filter")
        .unwrap();
    assert_eq!(
        filter["content"]["application/json"]["schema"]["$ref"],
        "#/components/schemas/text.search.Input.Filter"
    );
    assert_eq!(filter["required"], true);
    // The document follows the registry.
    registry.unregister("jobs.fail");
    let doc: Value = reqwest::get(served.url("/openapi.json"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(doc["paths"].get("/ops/jobs.fail").is_none());
}

/// A query string for `input` following the documented parameters.
fn query_pairs(op: &Value, input: &Value) -> Vec<(String, String)> {
    let mut pairs = Vec::new();
    for parameter in op["parameters"].as_array().into_iter().flatten() {
        let name = parameter["name"].as_str().unwrap();
        let Some(value) = input.get(name) else {
            continue;
        };
        if parameter.get("content").is_some() {
            pairs.push((name.to_owned(), value.to_string()));
        } else if let Value::Array(items) = value {
            for item in items {
                pairs.push((name.to_owned(), plain(item)));
            }
        } else {
            pairs.push((name.to_owned(), plain(value)));
        }
    }
    pairs
}

fn plain(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

#[tokio::test]
async fn round_trip_through_the_document_gives_the_same_operations_and_data() {
    let registry = fixture_registry(false);
    let served = start(registry.clone()).await;
    let client = reqwest::Client::new();
    let doc: Value = client
        .get(served.url("/openapi.json"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    // Same operations: one canonical (non-alias) HTTP operation per spec, same kinds.
    let mut imported: Vec<(String, String)> = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            if op.get("x-opkit-alias").is_some() {
                continue;
            }
            let spec = registry.spec(op["x-opkit-id"].as_str().unwrap()).unwrap();
            assert_eq!(op["x-opkit-kind"], spec.kind.as_str());
            imported.push((
                op["operationId"].as_str().unwrap().to_owned(),
                method.clone(),
            ));
            assert_eq!(
                path,
                &format!("/ops/{}", op["operationId"].as_str().unwrap())
            );
        }
    }
    imported.sort();
    let ids: Vec<String> = registry.specs().iter().map(|spec| spec.id()).collect();
    assert_eq!(
        imported
            .iter()
            .map(|(id, _)| id.clone())
            .collect::<Vec<_>>(),
        ids
    );
    let schemas = &doc["components"]["schemas"];
    assert_eq!(schemas["math.add.Input"]["required"], json!(["a", "b"]));
    assert_eq!(schemas["math.double.Output"], json!({"type": "integer"}));
    assert_eq!(
        schemas["users.create.Output"],
        registry.spec("users.create").unwrap().output_schema
    );

    // Same data: call every operation the way the document says and compare with a local call.
    let admin = fixture_tokens().get("admin-token").cloned().unwrap();
    let ctx = OperationContext::new().with_identity(admin);
    let inputs = [
        ("math.add", json!({"a": 5, "b": -7})),
        ("math.double", json!({"n": 8})),
        ("users.create", json!({"name": "Grace"})),
        ("admin.stats", json!({})),
        ("clock.ticks", json!({"count": 4})),
        ("web.health", json!({})),
        (
            "text.search",
            json!({"filter": {"prefix": "a"}, "tags": ["t"], "limit": 2}),
        ),
    ];
    assert_eq!(inputs.len(), ids.len());
    for (id, input) in inputs {
        let path_item = &doc["paths"][format!("/ops/{id}")];
        let (method, op) = path_item
            .as_object()
            .unwrap()
            .iter()
            .find(|(_, op)| op["operationId"] == id)
            .unwrap();
        let url = served.url(&format!("/ops/{id}"));
        let request = if method == "get" {
            client.get(&url).query(&query_pairs(op, &input))
        } else {
            client.post(&url).json(&input)
        };
        let response = request.bearer_auth("admin-token").send().await.unwrap();
        assert_eq!(response.status().as_u16(), 200, "{id}");
        let spec = registry.spec(id).unwrap();
        if spec.kind.is_stream() {
            let events = parse_sse(&response.text().await.unwrap());
            let remote: Vec<Value> = events
                .iter()
                .filter(|event| event.event == "message")
                .map(|event| serde_json::from_str::<Value>(&event.data).unwrap()["data"].clone())
                .collect();
            let local: Vec<Value> = registry
                .subscribe(id, input, &ctx)
                .await
                .unwrap()
                .map(|item| item.unwrap().data)
                .collect()
                .await;
            assert_eq!(remote, local, "{id}");
        } else {
            let remote: Value = response.json().await.unwrap();
            let local = registry.execute(id, input, &ctx).await.unwrap();
            assert_eq!(remote["data"], local.data, "{id}");
            assert_eq!(remote["meta"]["source"], local.meta.source(), "{id}");
        }
    }
}

#[tokio::test]
async fn a_client_disconnect_cancels_a_running_query() {
    let (events_tx, mut events) = tokio::sync::mpsc::unbounded_channel::<&'static str>();
    let registry = OperationRegistry::new();
    registry
        .register(
            OperationSpec::new("test", "wait", OperationKind::Query),
            Handler::unary(move |_input, ctx: OperationContext| {
                let events = events_tx.clone();
                async move {
                    let watcher = events.clone();
                    let watched = ctx.clone();
                    tokio::spawn(async move {
                        watched.cancelled().await;
                        let _ = watcher.send("cancelled");
                    });
                    let _ = events.send("started");
                    std::future::pending::<()>().await;
                    Ok(Value::Null)
                }
            }),
        )
        .unwrap();
    let served = start(registry).await;
    let url = served.url("/ops/test.wait");
    let request = tokio::spawn(async move { reqwest::get(url).await });
    let next = async |events: &mut tokio::sync::mpsc::UnboundedReceiver<&'static str>| {
        tokio::time::timeout(Duration::from_secs(20), events.recv())
            .await
            .expect("the operation reports in time")
    };
    assert_eq!(next(&mut events).await, Some("started"));
    request.abort();
    assert_eq!(
        next(&mut events).await,
        Some("cancelled"),
        "the context is cancelled when the client goes away"
    );
}
