//! The notes service over real sockets, as its users reach it: the `notes` binary in a process
//! of its own, called over HTTP (statuses of every domain error, the app's API key accepted by
//! opkit's routes, the OpenAPI document's `servers`, SSE, a nested call) and over MCP.

mod support;

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};
use std::collections::HashMap;

const ADMIN: &str = "demo-key";
const READER: &str = "reader-key";

struct Api {
    http: reqwest::Client,
    base: String,
}

impl Api {
    fn new(base: &str) -> Self {
        Self {
            http: reqwest::Client::new(),
            base: base.to_owned(),
        }
    }

    async fn send(&self, request: reqwest::RequestBuilder, key: Option<&str>) -> (u16, Value) {
        let request = match key {
            Some(key) => request.header("x-api-key", key),
            None => request,
        };
        let response = request.send().await.expect("the service answers");
        let status = response.status().as_u16();
        let text = response.text().await.expect("a body");
        let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
        (status, body)
    }

    /// `POST /api/ops/<id>` with a JSON body.
    async fn post(&self, id: &str, input: Value, key: Option<&str>) -> (u16, Value) {
        let url = format!("{}/api/ops/{id}", self.base);
        self.send(self.http.post(url).json(&input), key).await
    }

    /// `GET <path>`.
    async fn get(&self, path: &str, key: Option<&str>) -> (u16, Value) {
        let url = format!("{}{path}", self.base);
        self.send(self.http.get(url), key).await
    }
}

#[tokio::test]
async fn domain_errors_answer_their_status_and_the_apps_key_reaches_opkit() {
    let db = support::temp_db("statuses");
    let (_service, base) = support::serve(&db, &[]).await;
    let api = Api::new(&base);

    // The app's own routes and its own middleware.
    assert_eq!(api.get("/health", None).await, (200, json!("ok")));
    let (status, who) = api.get("/whoami", Some(ADMIN)).await;
    assert_eq!((status, &who["caller"]), (200, &json!("ann")));
    let (status, refused) = api.get("/api/ops/notes.list", Some("not-a-key")).await;
    assert_eq!(
        status, 401,
        "the app's middleware refuses an unknown key: {refused}"
    );

    // 200, with the identity the app's middleware found.
    let (status, created) = api
        .post(
            "notes.create",
            json!({"title": "groceries", "body": "milk"}),
            Some(ADMIN),
        )
        .await;
    assert_eq!(status, 200, "{created}");
    assert_eq!(created["data"]["author"], "ann");
    let id = created["data"]["id"].as_i64().expect("an id");

    // 409: the title is taken.
    let (status, error) = api
        .post("notes.create", json!({"title": "groceries"}), Some(READER))
        .await;
    assert_eq!(
        (status, &error["kind"]),
        (409, &json!("CONFLICT")),
        "{error}"
    );
    assert_eq!(error["code"], "EXECUTION_ERROR");

    // 422: a blank title.
    let (status, error) = api.post("notes.create", json!({"title": "  "}), None).await;
    assert_eq!(
        (status, &error["kind"]),
        (422, &json!("UNPROCESSABLE")),
        "{error}"
    );
    assert_eq!(error["code"], "VALIDATION_ERROR");

    // 404: no such note; 200 for the one that exists.
    let (status, error) = api.get("/api/ops/notes.get?id=999", None).await;
    assert_eq!(
        (status, &error["kind"]),
        (404, &json!("NOT_FOUND")),
        "{error}"
    );
    let (status, found) = api.get(&format!("/api/ops/notes.get?id={id}"), None).await;
    assert_eq!(
        (status, &found["data"]["title"]),
        (200, &json!("groceries"))
    );

    // 401: `notes.mine` needs to know the caller; with a key it answers their notes.
    let (status, error) = api.get("/api/ops/notes.mine", None).await;
    assert_eq!(
        (status, &error["kind"]),
        (401, &json!("UNAUTHENTICATED")),
        "{error}"
    );
    let (status, mine) = api.get("/api/ops/notes.mine", Some(ADMIN)).await;
    assert_eq!(
        (status, mine["data"].as_array().map(Vec::len)),
        (200, Some(1))
    );
    let (status, mine) = api.get("/api/ops/notes.mine", Some(READER)).await;
    assert_eq!(
        (status, mine["data"].as_array().map(Vec::len)),
        (200, Some(0))
    );

    // 429: the second export within the window.
    let (status, _) = api.get("/api/ops/notes.export", Some(READER)).await;
    assert_eq!(status, 200);
    let (status, error) = api.get("/api/ops/notes.export", Some(READER)).await;
    assert_eq!(
        (status, &error["kind"]),
        (429, &json!("RATE_LIMITED")),
        "{error}"
    );

    // 403: the access rule, checked against the identity from the app's key.
    let (status, error) = api
        .post("notes.delete", json!({"id": id}), Some(READER))
        .await;
    assert_eq!(
        (status, &error["code"]),
        (403, &json!("ACCESS_DENIED")),
        "{error}"
    );
    let (status, error) = api
        .post("notes.delete", json!({"id": 999}), Some(ADMIN))
        .await;
    assert_eq!(
        (status, &error["kind"]),
        (404, &json!("NOT_FOUND")),
        "{error}"
    );

    // A nested call: `notes.summary` calls `notes.list` through the env.
    let (status, summary) = api.get("/api/ops/notes.summary", None).await;
    assert_eq!(status, 200, "{summary}");
    assert_eq!(
        summary["data"],
        json!({"count": 1, "titles": ["groceries"]})
    );

    // A route that does not exist names where operations really are.
    let (status, error) = api.get("/api/nothing", None).await;
    assert_eq!(status, 404);
    let message = error["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("/api/ops/<id>") && message.contains("/api/openapi.json"),
        "{message}"
    );

    let (status, deleted) = api
        .post("notes.delete", json!({"id": id}), Some(ADMIN))
        .await;
    assert_eq!((status, &deleted["data"]), (200, &Value::Null));
}

#[tokio::test]
async fn the_openapi_document_knows_where_it_is_served_and_lists_each_operations_errors() {
    let db = support::temp_db("openapi");
    let (_service, base) = support::serve(&db, &[]).await;
    let (status, document) = Api::new(&base).get("/api/openapi.json", None).await;
    assert_eq!(status, 200);
    assert_eq!(document["servers"][0]["url"], "/api");
    let create = &document["paths"]["/ops/notes.create"]["post"]["responses"];
    for status in ["200", "400", "409", "422", "500"] {
        assert!(
            create.get(status).is_some(),
            "notes.create documents {status}: {create}"
        );
    }
    assert!(create.get("404").is_some(), "every operation documents 404");
    let get = &document["paths"]["/ops/notes.get"]["get"]["responses"];
    assert_eq!(
        get["404"]["$ref"],
        "#/components/responses/ResourceNotFound"
    );
    let export = &document["paths"]["/ops/notes.export"]["get"]["responses"];
    assert!(export.get("429").is_some(), "{export}");
    let mine = &document["paths"]["/ops/notes.mine"]["get"]["responses"];
    assert!(mine.get("401").is_some(), "{mine}");
    let conflict = &document["components"]["responses"]["Conflict"];
    assert_eq!(
        conflict["content"]["application/json"]["schema"]["$ref"],
        "#/components/schemas/CallError"
    );
    // The state parameters are not part of any input.
    let input = &document["components"]["schemas"]["notes.get.Input"];
    assert_eq!(input["required"], json!(["id"]), "{input}");
}

#[tokio::test]
async fn a_subscription_streams_notes_as_server_sent_events() {
    let db = support::temp_db("feed");
    let (_service, base) = support::serve(&db, &[]).await;
    let api = Api::new(&base);
    for title in ["one", "two", "three"] {
        let (status, _) = api
            .post("notes.create", json!({"title": title}), None)
            .await;
        assert_eq!(status, 200);
    }
    let body = reqwest::get(format!("{base}/api/ops/notes.feed?after=0&limit=2"))
        .await
        .expect("the feed answers")
        .text()
        .await
        .expect("the stream ends");
    let items: Vec<Value> = body
        .lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .filter_map(|data| serde_json::from_str::<Value>(data).ok())
        .filter(|event| event.get("meta").is_some())
        .collect();
    let titles: Vec<&Value> = items.iter().map(|item| &item["data"]["title"]).collect();
    assert_eq!(titles, [&json!("one"), &json!("two")], "{body}");
    assert!(body.contains("event: complete"), "{body}");
}

#[tokio::test]
async fn mcp_tools_are_served_behind_the_apps_auth() {
    let db = support::temp_db("mcp");
    let (_service, base) = support::serve(&db, &[]).await;
    let mut headers = HashMap::new();
    headers.insert(
        http::HeaderName::from_static("x-api-key"),
        http::HeaderValue::from_static(ADMIN),
    );
    let mut config = StreamableHttpClientTransportConfig::with_uri(format!("{base}/mcp"));
    config.custom_headers = headers;
    let client =
        ().serve(StreamableHttpClientTransport::from_config(config))
            .await
            .expect("the MCP client connects at /mcp");
    let tools = client.list_all_tools().await.expect("tools/list");
    let mut names: Vec<String> = tools.iter().map(|tool| tool.name.to_string()).collect();
    names.sort();
    assert_eq!(
        names,
        [
            "notes.create",
            "notes.delete",
            "notes.export",
            "notes.feed",
            "notes.get",
            "notes.ids",
            "notes.list",
            "notes.mine",
            "notes.rename",
            "notes.summary"
        ]
    );
    let call = |name: &str, arguments: Value| {
        CallToolRequestParams::new(name.to_owned())
            .with_arguments(arguments.as_object().cloned().unwrap_or_default())
    };
    let created = client
        .call_tool(call("notes.create", json!({"title": "from mcp"})))
        .await
        .expect("notes.create answers");
    assert_eq!(created.is_error, Some(false), "{created:?}");
    let note = created.structured_content.expect("structured content");
    assert_eq!(
        note["author"], "ann",
        "the app's key identified the MCP caller"
    );
    let missing = client
        .call_tool(call("notes.get", json!({"id": 999})))
        .await
        .expect("notes.get answers");
    assert_eq!(missing.is_error, Some(true));
    let text = format!("{:?}", missing.content);
    assert!(text.contains("there is no note 999"), "{text}");
    client.cancel().await.expect("the client closes");

    let unknown_key = reqwest::Client::new()
        .post(format!("{base}/mcp"))
        .header("x-api-key", "not-a-key")
        .header("accept", "application/json, text/event-stream")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
        .send()
        .await
        .expect("the service answers");
    assert_eq!(unknown_key.status().as_u16(), 401);
}

#[tokio::test]
async fn one_api_key_has_one_call_budget_over_http_and_mcp() {
    let db = support::temp_db("budget");
    let (_service, base) = support::serve(&db, &[]).await;
    let api = Api::new(&base);
    let budget = opkit_example_notes::CALLS_PER_MINUTE;
    // All but the last call of the key's budget over HTTP ...
    for _ in 1..budget {
        let (status, body) = api.get("/api/ops/notes.list", Some(READER)).await;
        assert_eq!(status, 200, "{body}");
    }
    // ... the last one over MCP, with the same key ...
    let mut headers = HashMap::new();
    headers.insert(
        http::HeaderName::from_static("x-api-key"),
        http::HeaderValue::from_static(READER),
    );
    let mut config = StreamableHttpClientTransportConfig::with_uri(format!("{base}/mcp"));
    config.custom_headers = headers;
    let client =
        ().serve(StreamableHttpClientTransport::from_config(config))
            .await
            .expect("the MCP client connects at /mcp");
    let list = || {
        CallToolRequestParams::new("notes.list".to_owned()).with_arguments(serde_json::Map::new())
    };
    let last = client.call_tool(list()).await.expect("notes.list answers");
    assert_eq!(last.is_error, Some(false), "{last:?}");
    // ... and the key is out of calls on both edges, while another key is not.
    let refused = client.call_tool(list()).await.expect("notes.list answers");
    assert_eq!(refused.is_error, Some(true), "{refused:?}");
    assert!(
        format!("{:?}", refused.content).contains("rate limit"),
        "{refused:?}"
    );
    client.cancel().await.expect("the client closes");
    let (status, error) = api.get("/api/ops/notes.list", Some(READER)).await;
    assert_eq!(
        (status, &error["kind"]),
        (429, &json!("RATE_LIMITED")),
        "{error}"
    );
    let (status, _) = api.get("/api/ops/notes.list", Some(ADMIN)).await;
    assert_eq!(status, 200);
}
