//! The MCP server as an OAuth 2.1 resource server (feature `oauth`), against a real OpenID
//! provider (`oidc-provider`) and the official TypeScript SDK as the client: the SDK follows
//! the `401` to the Protected Resource Metadata, discovers the authorization server, gets a
//! token with the client-credentials grant and calls tools; the raw HTTP answers (`401`,
//! `403 insufficient_scope`, the metadata at the path-suffixed well-known URL) are checked
//! too. Opaque tokens are introspected at the provider (RFC 7662).
#![cfg(all(feature = "oauth", feature = "mcp-server"))]

use crate::oauth_support;
use opkit_testkit::process::TaskGuard;

use oauth_support::{Provider, challenge, node, peers, registry};
use opkit_adapters::mcp_server::McpServer;
use opkit_adapters::oauth::OAuthAuthenticator;
use serde_json::{Value, json};
use std::time::Duration;

/// An MCP server at `/mcp` of a loopback port (resource `http://127.0.0.1:<p>/mcp`), with
/// the metadata at the site's root.
pub(crate) struct Mcp {
    origin: String,
    http: reqwest::Client,
    _task: TaskGuard,
}

impl Mcp {
    pub(crate) async fn start(provider: &Provider, introspection: bool) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let origin = format!("http://{}", listener.local_addr().unwrap());
        let mut auth =
            OAuthAuthenticator::builder(provider.issuer.clone(), format!("{origin}/mcp"))
                .scopes_supported(["notes:read", "notes:write"])
                .roles_claim("roles");
        if introspection {
            // The provider's opaque tokens are for resources ending in `/opaque`.
            auth = auth
                .audiences([format!("{origin}/opaque")])
                .introspection("reader", "reader-secret");
        }
        let server = McpServer::new(registry()).authenticator(auth.build().unwrap());
        let app = axum::Router::new()
            .nest("/mcp", server.router())
            .merge(server.well_known_router());
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Self {
            origin,
            http: reqwest::Client::new(),
            _task: TaskGuard(task),
        }
    }

    pub(crate) fn resource(&self) -> String {
        format!("{}/mcp", self.origin)
    }

    fn metadata_url(&self) -> String {
        format!("{}/.well-known/oauth-protected-resource/mcp", self.origin)
    }

    async fn post(&self, token: Option<&str>, message: Value) -> reqwest::Response {
        let mut request = self
            .http
            .post(self.resource())
            .header("accept", "application/json, text/event-stream")
            .json(&message);
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        request.send().await.unwrap()
    }
}

fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}
    }})
}

fn call(tool: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": tool, "arguments": {}}})
}

#[tokio::test]
async fn the_endpoint_answers_401_403_and_serves_its_metadata() {
    let provider = Provider::start();
    let mcp = Mcp::start(&provider, false).await;

    // No token: 401 pointing to the metadata, which names the provider.
    let response = mcp.post(None, initialize()).await;
    assert_eq!(response.status(), 401);
    assert_eq!(
        challenge(&response),
        format!("Bearer resource_metadata=\"{}\"", mcp.metadata_url())
    );
    let metadata: Value = mcp
        .http
        .get(mcp.metadata_url())
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(metadata["resource"], mcp.resource());
    assert_eq!(metadata["authorization_servers"], json!([provider.issuer]));
    let root: Value = mcp
        .http
        .get(format!(
            "{}/.well-known/oauth-protected-resource",
            mcp.origin
        ))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(root, metadata);

    // A refused token: 401 invalid_token.
    let response = mcp.post(Some("e30.e30.e30"), initialize()).await;
    assert_eq!(response.status(), 401);
    assert!(challenge(&response).starts_with("Bearer error=\"invalid_token\", resource_metadata="));

    // A token for another resource (the site's root, not `/mcp`): refused.
    let wrong = provider.token("writer", "notes:write", &mcp.origin).await;
    assert_eq!(mcp.post(Some(&wrong), initialize()).await.status(), 401);

    // A good token lacking `notes:write` for a tool that needs it: 403 with the scope.
    let reader = provider
        .token("reader", "notes:read", &mcp.resource())
        .await;
    assert_eq!(mcp.post(Some(&reader), initialize()).await.status(), 200);
    let response = mcp.post(Some(&reader), call("notes.write")).await;
    assert_eq!(response.status(), 403);
    assert_eq!(
        challenge(&response),
        format!(
            "Bearer error=\"insufficient_scope\", scope=\"notes:write\", resource_metadata=\"{}\"",
            mcp.metadata_url()
        )
    );
}

/// Runs `peers/oauth/mcp_client.mjs` against `url` as `client` asking for `scope`, making
/// `calls`; its report.
async fn sdk_client(url: &str, client: &str, scope: &str, calls: &Value) -> Value {
    let mut command = tokio::process::Command::new(node());
    command
        .current_dir(peers())
        .arg("mcp_client.mjs")
        .args([
            url,
            client,
            &format!("{client}-secret"),
            scope,
            &calls.to_string(),
        ])
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    let output = tokio::time::timeout(Duration::from_secs(120), command.output())
        .await
        .expect("the SDK client finishes within 120 s")
        .expect("the SDK client runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the SDK client failed:\n{stderr}\n{stdout}"
    );
    serde_json::from_str(stdout.trim())
        .unwrap_or_else(|error| panic!("no report ({error}):\n{stdout}\n{stderr}"))
}

#[tokio::test]
async fn the_typescript_sdk_signs_in_by_itself_and_calls_tools() {
    let provider = Provider::start();
    let mcp = Mcp::start(&provider, false).await;
    let calls = json!([{"name": "notes.write"}, {"name": "notes.review"}]);
    let report = sdk_client(&mcp.resource(), "writer", "notes:read notes:write", &calls).await;
    let tools = report["tools"].as_array().unwrap();
    assert!(tools.contains(&json!("notes.write")), "{report}");
    let write = &report["calls"][0];
    assert_eq!(write["result"]["isError"], json!(false), "{report}");
    assert_eq!(
        write["result"]["structuredContent"]["result"]["caller"],
        json!({"id": "writer", "scopes": ["notes:read", "notes:write"], "roles": ["editor"]}),
        "{report}"
    );
    assert_eq!(
        report["calls"][1]["result"]["isError"],
        json!(false),
        "{report}"
    );
}

#[tokio::test]
async fn opaque_tokens_are_introspected_at_the_provider() {
    let provider = Provider::start();
    let mcp = Mcp::start(&provider, true).await;
    let opaque = provider
        .token("reader", "notes:read", &format!("{}/opaque", mcp.origin))
        .await;
    assert_eq!(opaque.split('.').count(), 1, "an opaque token: {opaque}");
    assert_eq!(mcp.post(Some(&opaque), initialize()).await.status(), 200);
    let response = mcp.post(Some(&opaque), call("notes.write")).await;
    assert_eq!(
        response.status(),
        403,
        "its scopes are the introspected ones"
    );
    // A made-up opaque token is not active.
    let response = mcp.post(Some("made-up-token"), initialize()).await;
    assert_eq!(response.status(), 401);
    let body: Value = response.json().await.unwrap();
    assert!(
        body["message"].as_str().unwrap().contains("not active"),
        "{body}"
    );
    // JWTs are still checked locally.
    let jwt = provider
        .token("reader", "notes:read", &mcp.resource())
        .await;
    assert_eq!(mcp.post(Some(&jwt), initialize()).await.status(), 200);
}

/// The MCP import signs in with client-credentials tokens (feature `oauth-client`): it finds
/// the authorization server through the server's metadata, calls the tools of the server, and when the provider withdraws the key that
/// signed its token (so the server answers `401`), it gets a new token and goes on.
#[cfg(feature = "oauth-client")]
#[tokio::test]
async fn the_mcp_import_signs_in_with_client_credentials_and_renews_its_token() {
    use opkit::OperationContext;
    use opkit_adapters::mcp::{McpConnection, McpLifecycle, McpOptions};
    use opkit_adapters::oauth::ClientCredentials;

    let provider = Provider::start();
    let mcp = Mcp::start(&provider, false).await;
    // No issuer given: the import finds it through the server's Protected Resource Metadata.
    let credentials = ClientCredentials::discovered("writer", "writer-secret")
        .unwrap()
        .trusted_issuers([provider.issuer.clone()])
        .scope("notes:read notes:write");
    let options = McpOptions::new("remote")
        .oauth(credentials)
        .lifecycle(McpLifecycle::Legacy);
    let connection = McpConnection::connect_http(&mcp.resource(), options)
        .await
        .expect("the import connects with a token it got by itself");
    assert!(connection.tool_names().contains(&"notes.write".to_owned()));
    let ctx = OperationContext::new();
    let envelope = connection
        .call_tool("notes.write", json!({}), &ctx)
        .await
        .expect("the call");
    assert_eq!(envelope.data["caller"]["id"], "writer", "{envelope:?}");

    // The key that signed the kept token is withdrawn: the server refuses it, the import
    // fetches a new one and the call goes through.
    provider.rotate(true).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let envelope = connection
        .call_tool("notes.read", json!({}), &ctx)
        .await
        .expect("the call after the key rotation");
    assert_eq!(envelope.data["caller"]["id"], "writer", "{envelope:?}");

    // Wrong client credentials: a typed error naming the refusal.
    let wrong = ClientCredentials::new(provider.issuer.clone(), "writer", "guess").unwrap();
    let error = McpConnection::connect_http(&mcp.resource(), McpOptions::new("x").oauth(wrong))
        .await
        .unwrap_err();
    assert!(error.to_string().contains("invalid_client"), "{error}");
}
