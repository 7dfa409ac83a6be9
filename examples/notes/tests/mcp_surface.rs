//! The notes service's MCP surface beyond tools, driven by the official Rust SDK's client
//! (rmcp) at both protocol revisions: the `notes://{id}` resource template, the "summarize
//! my notes" prompt, and the confirmation a delete asks for by elicitation — in the call
//! for a 2025-11-25 client, over several round trips for a 2026-07-28 client (the SDK's
//! client answers each input-required result and calls again).

mod support;

use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult,
    ElicitationAction, ElicitationCapability, FormElicitationCapability, GetPromptRequestParams,
    ProtocolVersion, ReadResourceRequestParams,
};
use rmcp::service::{
    ClientLifecycleMode, ClientServiceExt, RequestContext, RoleClient, RunningService,
};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, ErrorData, ServiceExt};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

const ADMIN: &str = "demo-key";

/// A client whose user answers "delete?" with `confirm`, counting the questions.
#[derive(Clone)]
struct User {
    version: ProtocolVersion,
    confirm: Arc<AtomicBool>,
    asked: Arc<AtomicUsize>,
    last_question: Arc<parking_lot::Mutex<String>>,
    /// The `_meta.progressToken` of each question asked in a call.
    tokens: Arc<parking_lot::Mutex<Vec<Option<rmcp::model::ProgressToken>>>>,
}

impl ClientHandler for User {
    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        self.asked.fetch_add(1, Ordering::SeqCst);
        self.tokens.lock().push(context.meta.get_progress_token());
        if let ElicitRequestParams::FormElicitationParams { message, .. } = &request {
            *self.last_question.lock() = message.clone();
        }
        let mut result = ElicitResult::new(ElicitationAction::Accept);
        result.content = Some(json!({"confirm": self.confirm.load(Ordering::SeqCst)}));
        Ok(result)
    }

    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        let mut elicitation = ElicitationCapability::default();
        elicitation.form = Some(FormElicitationCapability::default());
        capabilities.elicitation = Some(elicitation);
        let mut config = ClientConfig::default();
        config.protocol_version = self.version.clone();
        config.capabilities = capabilities;
        config
    }
}

async fn connect(base: &str, user: User) -> RunningService<RoleClient, User> {
    let mut headers = HashMap::new();
    headers.insert(
        http::HeaderName::from_static("x-api-key"),
        http::HeaderValue::from_static(ADMIN),
    );
    let mut config = StreamableHttpClientTransportConfig::with_uri(format!("{base}/mcp"));
    config.custom_headers = headers;
    let transport = StreamableHttpClientTransport::from_config(config);
    let connected = if user.version == ProtocolVersion::V_2026_07_28 {
        let lifecycle = ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        };
        user.serve_with_lifecycle(transport, lifecycle).await
    } else {
        user.serve(transport).await
    };
    connected.expect("the MCP client connects at /mcp")
}

fn call(name: &str, arguments: Value) -> CallToolRequestParams {
    CallToolRequestParams::new(name.to_owned())
        .with_arguments(arguments.as_object().cloned().unwrap_or_default())
}

#[tokio::test]
async fn resources_prompts_and_a_confirmed_delete_at_both_revisions() {
    let db = support::temp_db("mcp-surface");
    let (_service, base) = support::serve(&db, &[]).await;
    for version in [ProtocolVersion::V_2025_11_25, ProtocolVersion::V_2026_07_28] {
        let user = User {
            version: version.clone(),
            confirm: Arc::new(AtomicBool::new(false)),
            asked: Arc::default(),
            last_question: Arc::default(),
            tokens: Arc::default(),
        };
        let client = connect(&base, user.clone()).await;
        let era = version.as_str();
        let negotiated = client
            .peer()
            .peer_info()
            .map(|info| info.protocol_version.clone());
        assert_eq!(
            negotiated.as_ref().map(|v| v.as_str()),
            Some(era),
            "the client speaks {era}"
        );

        let templates = client
            .list_all_resource_templates()
            .await
            .expect("resources/templates/list");
        let uris: Vec<&str> = templates.iter().map(|t| t.uri_template.as_str()).collect();
        assert_eq!(uris, ["notes://{id}"], "{era}");

        let created = client
            .call_tool(call(
                "notes.create",
                json!({"title": format!("for {era}"), "body": "text"}),
            ))
            .await
            .expect("notes.create");
        let id = created.structured_content.expect("the note")["id"].clone();
        let read = client
            .read_resource(ReadResourceRequestParams::new(format!("notes://{id}")))
            .await
            .expect("resources/read");
        let text = serde_json::to_value(&read.contents[0]).expect("contents");
        assert_eq!(text["mimeType"], "application/json", "{era}: {text}");
        let note: Value = serde_json::from_str(text["text"].as_str().expect("text")).expect("json");
        assert_eq!(note["title"], json!(format!("for {era}")));
        // `{id}` completes with the ids there are (`notes.ids`, named by `complete(..)`).
        let typed = id.to_string().chars().next().expect("a digit").to_string();
        let offered = client
            .complete_resource_argument("notes://{id}", "id", typed.clone(), None)
            .await
            .expect("completion/complete");
        assert!(
            offered.values.contains(&id.to_string()),
            "{era}: {:?} offers the new note {id}",
            offered.values
        );
        assert!(offered.values.iter().all(|offer| offer.starts_with(&typed)));
        let missing = client
            .read_resource(ReadResourceRequestParams::new("notes://999999"))
            .await
            .expect_err("no such note");
        assert!(missing.to_string().contains("999999"), "{era}: {missing}");

        let prompts = client.list_all_prompts().await.expect("prompts/list");
        let summarize = prompts
            .iter()
            .find(|prompt| prompt.name == "notes.summarize")
            .expect("the summarize prompt");
        let arguments = summarize.arguments.clone().unwrap_or_default();
        assert_eq!(arguments.len(), 1, "{era}");
        assert_eq!(arguments[0].name, "words");
        assert_eq!(arguments[0].required, Some(false));
        let prompt = client
            .get_prompt(
                GetPromptRequestParams::new("notes.summarize")
                    .with_arguments(json!({"words": "20"}).as_object().cloned().unwrap()),
            )
            .await
            .expect("prompts/get");
        let message = serde_json::to_value(&prompt.messages[0]).expect("message");
        let text = message["content"]["text"].as_str().expect("a text message");
        assert!(
            text.contains("at most 20 words") && text.contains(&format!("for {era}")),
            "{text}"
        );

        // The user says no: nothing is deleted.
        let declined = client
            .call_tool(call("notes.delete", json!({"id": id})))
            .await
            .expect("notes.delete answers");
        assert_eq!(declined.is_error, Some(true), "{era}: {declined:?}");
        assert_eq!(user.asked.load(Ordering::SeqCst), 1, "{era}: asked once");
        assert!(user.last_question.lock().contains(&format!("for {era}")));
        // A question asked in the call carries a progress token of the server's own (rmcp
        // numbers every request it sends), not the call's; input requests carry none.
        let tokens = user.tokens.lock().clone();
        if version == ProtocolVersion::V_2026_07_28 {
            assert_eq!(tokens, [None], "{era}");
        } else {
            assert_eq!(tokens.len(), 1, "{era}");
            assert!(tokens[0].is_some(), "{era}: {tokens:?}");
        }
        let still = client
            .call_tool(call("notes.get", json!({"id": id})))
            .await
            .expect("notes.get");
        assert_eq!(
            still.is_error,
            Some(false),
            "{era}: the note is still there"
        );

        // The user says yes: deleted.
        user.confirm.store(true, Ordering::SeqCst);
        let deleted = client
            .call_tool(call("notes.delete", json!({"id": id})))
            .await
            .expect("notes.delete answers");
        assert_eq!(deleted.is_error, Some(false), "{era}: {deleted:?}");
        assert_eq!(user.asked.load(Ordering::SeqCst), 2, "{era}");
        let gone = client
            .call_tool(call("notes.get", json!({"id": id})))
            .await
            .expect("notes.get");
        assert_eq!(gone.is_error, Some(true), "{era}: deleted");
        client.cancel().await.expect("the client closes");
    }
}
