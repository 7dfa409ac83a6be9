//! The notes service signed in through a real OpenID provider (`--oidc-issuer`): the
//! `oidc-provider` of the adapters' OAuth tests (`adapters/peers/oauth`, installed by
//! `scripts/install-peers.sh`) on loopback, the `notes` binary in a process of its own, and
//! tokens the provider issues for the service's resources.

mod support;

use opkit_testkit::oidc::OidcProvider;
use serde_json::{Value, json};

/// The test kit's OpenID provider (killed by PID when dropped), asked for tokens.
struct Provider {
    _provider: OidcProvider,
    issuer: String,
}

impl Provider {
    fn start() -> Self {
        let provider = OidcProvider::start();
        Self {
            issuer: provider.issuer().to_owned(),
            _provider: provider,
        }
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
