//! The notes service signed in through a real OpenID provider (`--oidc-issuer`): the
//! `oidc-provider` of the adapters' OAuth tests (`adapters/peers/oauth`, installed by
//! `scripts/install-peers.sh`) on loopback, the `notes` binary in a process of its own, and
//! tokens the provider issues for the service's resources.

mod support;

use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// The OpenID provider; killed by PID when dropped.
struct Provider {
    child: Child,
    issuer: String,
}

impl Drop for Provider {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Provider {
    fn start() -> Self {
        let peers = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../adapters/peers/oauth");
        let node = peers.join("node_modules/.bin/node");
        assert!(
            node.exists(),
            "the OAuth peers are missing ({}): run `bash scripts/install-peers.sh`",
            peers.display()
        );
        let mut child = Command::new(node)
            .current_dir(&peers)
            .arg("provider.mjs")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the OpenID provider");
        let stdout = child.stdout.take().expect("stdout");
        let (ready, port) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(port) = line.strip_prefix("READY ") {
                    let _ = ready.send(port.trim().to_owned());
                }
            }
        });
        let mut provider = Self {
            child,
            issuer: String::new(),
        };
        let port = port
            .recv_timeout(Duration::from_secs(30))
            .expect("the OpenID provider starts within 30 s");
        provider.issuer = format!("http://127.0.0.1:{port}");
        provider
    }

    async fn token(&self, client: &str, scope: &str, resource: &str) -> String {
        let answer: Value = reqwest::Client::new()
            .post(format!("{}/token", self.issuer))
            .basic_auth(client, Some(format!("{client}-secret")))
            .form(&[
                ("grant_type", "client_credentials"),
                ("scope", scope),
                ("resource", resource),
            ])
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        answer["access_token"].as_str().expect("a token").to_owned()
    }
}

async fn call(base: &str, id: &str, token: Option<&str>, input: Value) -> reqwest::Response {
    let mut request = reqwest::Client::new()
        .post(format!("{base}/api/ops/{id}"))
        .json(&input);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    request.send().await.unwrap()
}

fn challenge(response: &reqwest::Response) -> String {
    response
        .headers()
        .get("www-authenticate")
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
async fn notes_signs_callers_in_with_the_providers_tokens() {
    let provider = Provider::start();
    let db = support::temp_db("oauth");
    let (_notes, base) = support::serve(&db, &["--oidc-issuer", &provider.issuer]).await;

    // Anonymous: told where to sign in, for the API and for MCP.
    let response = call(&base, "notes.mine", None, json!({})).await;
    assert_eq!(response.status(), 401);
    let api_metadata = format!("{base}/.well-known/oauth-protected-resource/api");
    assert_eq!(
        challenge(&response),
        format!("Bearer resource_metadata=\"{api_metadata}\"")
    );
    let metadata: Value = reqwest::get(&api_metadata)
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(metadata["resource"], format!("{base}/api"));
    assert_eq!(metadata["authorization_servers"], json!([provider.issuer]));
    let response = reqwest::Client::new()
        .post(format!("{base}/mcp"))
        .header("accept", "application/json, text/event-stream")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);
    assert!(challenge(&response).contains("/.well-known/oauth-protected-resource/mcp"));

    // The provider's client `writer` (scope notes:admin) writes, reads and deletes.
    let writer = provider
        .token("writer", "notes:admin", &format!("{base}/api"))
        .await;
    let response = call(
        &base,
        "notes.create",
        Some(&writer),
        json!({"title": "signed in"}),
    )
    .await;
    assert_eq!(response.status(), 200);
    let note: Value = response.json().await.unwrap();
    let id = note["data"]["id"].clone();
    let mine: Value = call(&base, "notes.mine", Some(&writer), json!({}))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(mine["data"][0]["title"], "signed in", "{mine}");

    // `reader` lacks notes:admin: 403 naming the scope to ask for.
    let reader = provider
        .token("reader", "notes:read", &format!("{base}/api"))
        .await;
    let response = call(&base, "notes.delete", Some(&reader), json!({"id": id})).await;
    assert_eq!(response.status(), 403);
    assert!(challenge(&response).contains("scope=\"notes:admin\""));
    let response = call(&base, "notes.delete", Some(&writer), json!({"id": id})).await;
    assert_eq!(response.status(), 200);

    // A token for the MCP resource is not one for the API.
    let for_mcp = provider
        .token("writer", "notes:admin", &format!("{base}/mcp"))
        .await;
    let response = call(&base, "notes.mine", Some(&for_mcp), json!({})).await;
    assert_eq!(response.status(), 401);
    assert!(challenge(&response).starts_with("Bearer error=\"invalid_token\""));
}
