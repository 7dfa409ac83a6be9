//! The OAuth client never hands a credential to an authorization server nobody chose: a
//! resource (a malicious or compromised MCP server being imported, or whoever answers for its
//! metadata URL) whose Protected Resource Metadata names a server of its own gets a typed
//! refusal, and that server — which records every request it receives — receives nothing:
//! not the client secret, not the `private_key_jwt` assertion, not the workload's platform
//! token. Listed issuers still work; an explicit opt-in sends to any; plain http to a host
//! that is not loopback is refused even then.
#![cfg(all(feature = "oauth-client", feature = "http-server"))]
// The authorization-code flow (`AuthorizationCode`) with a pre-registered secret is held to
// the same rule: the secret goes only to a trusted issuer's token endpoint.

use axum::Router;
use axum::http::{HeaderMap, Uri};
use axum::routing::{get, post};
use opkit_adapters::oauth::{ClientCredentials, TokenRequestError};
use parking_lot::Mutex;
use serde_json::{Value, json};
use std::sync::Arc;

/// What the attacker's authorization server received: each request's path, headers and body.
type Received = Arc<Mutex<Vec<String>>>;

/// Serves `router` on a loopback port; its base URL.
async fn serve(router: Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await });
    format!("http://{address}")
}

/// The attacker's authorization server: a discovery document and a token endpoint that
/// records everything and hands out a token.
async fn attacker() -> (String, Received) {
    let received: Received = Arc::default();
    let record = |received: Received| {
        move |uri: Uri, headers: HeaderMap, body: String| {
            let received = received.clone();
            async move {
                received.lock().push(format!("{uri} {headers:?} {body}"));
                axum::Json(json!({"access_token": "stolen", "token_type": "Bearer"}))
            }
        }
    };
    let base = Arc::new(Mutex::new(String::new()));
    let discovery = {
        let base = base.clone();
        let received = received.clone();
        move || {
            let base = base.lock().clone();
            received.lock().push("discovery".to_owned());
            async move {
                axum::Json(json!({
                    "issuer": base,
                    "token_endpoint": format!("{base}/token"),
                    "authorization_endpoint": format!("{base}/authorize"),
                    "response_types_supported": ["code"],
                    "code_challenge_methods_supported": ["S256"],
                    "grant_types_supported": ["client_credentials", "urn:ietf:params:oauth:grant-type:jwt-bearer"],
                }))
            }
        }
    };
    let router = Router::new()
        .route(
            "/.well-known/oauth-authorization-server",
            get(discovery.clone()),
        )
        .route("/.well-known/openid-configuration", get(discovery))
        .route("/token", post(record(received.clone())));
    let url = serve(router).await;
    *base.lock() = url.clone();
    (url, received)
}

/// A resource whose Protected Resource Metadata names `issuer`.
async fn resource_naming(issuer: &str) -> String {
    let issuer = issuer.to_owned();
    let own = Arc::new(Mutex::new(String::new()));
    let metadata = {
        let own = own.clone();
        move || {
            let own = own.lock().clone();
            let issuer = issuer.clone();
            async move {
                axum::Json::<Value>(json!({
                    "resource": format!("{own}/mcp"),
                    "authorization_servers": [issuer],
                }))
            }
        }
    };
    let router = Router::new()
        .route(
            "/.well-known/oauth-protected-resource/mcp",
            get(metadata.clone()),
        )
        .route("/.well-known/oauth-protected-resource", get(metadata));
    let url = serve(router).await;
    *own.lock() = url.clone();
    format!("{url}/mcp")
}

fn private_key() -> String {
    rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256)
        .unwrap()
        .serialize_pem()
}

/// Every kind of credential with no issuer given, for `resource`.
fn unpinned(resource: &str) -> Vec<(&'static str, ClientCredentials)> {
    let key = private_key();
    vec![
        (
            "client secret",
            ClientCredentials::discovered("notes-bot", "the-secret").unwrap(),
        ),
        (
            "private_key_jwt",
            ClientCredentials::private_key_jwt(None, "notes-bot", key.as_bytes(), "ES256").unwrap(),
        ),
        (
            "workload token",
            ClientCredentials::workload_identity(None, "notes-indexer", || {
                Ok("the-platform-token".to_owned())
            })
            .unwrap(),
        ),
    ]
    .into_iter()
    .map(|(what, credentials)| (what, credentials.resource(resource)))
    .collect()
}

#[tokio::test]
async fn a_resource_naming_its_own_authorization_server_receives_no_credential() {
    let (evil, received) = attacker().await;
    let resource = resource_naming(&evil).await;
    for (what, credentials) in unpinned(&resource) {
        let error = credentials.token().await.unwrap_err();
        assert!(
            matches!(&error, TokenRequestError::UntrustedIssuer { issuer, .. } if issuer == &evil),
            "{what}: {error}"
        );
        assert!(error.to_string().contains("trusted_issuers"), "{error}");
    }
    // Listing another issuer does not make the attacker's trusted.
    for (what, credentials) in unpinned(&resource) {
        let error = credentials
            .trusted_issuers(["https://id.example"])
            .token()
            .await
            .unwrap_err();
        assert!(
            matches!(error, TokenRequestError::UntrustedIssuer { .. }),
            "{what}: {error}"
        );
    }
    assert!(
        received.lock().is_empty(),
        "the attacker received {:?}",
        received.lock()
    );
}

#[tokio::test]
async fn a_listed_issuer_or_the_explicit_opt_in_gets_the_token() {
    let (issuer, received) = attacker().await;
    let resource = resource_naming(&issuer).await;
    for (what, credentials) in unpinned(&resource) {
        let token = credentials
            .trusted_issuers([format!("{issuer}/")])
            .token()
            .await
            .unwrap_or_else(|error| panic!("{what}: {error}"));
        assert_eq!(token, "stolen");
    }
    let opted_in = ClientCredentials::discovered("notes-bot", "the-secret")
        .unwrap()
        .resource(&resource)
        .trust_any_issuer();
    assert_eq!(opted_in.token().await.unwrap(), "stolen");
    let posts = received
        .lock()
        .iter()
        .filter(|request| request.starts_with("/token"))
        .count();
    assert_eq!(posts, 4, "{:?}", received.lock());
}

#[tokio::test]
async fn credentials_never_travel_over_plain_http_past_loopback() {
    let resource = resource_naming("http://id.example").await;
    let credentials = ClientCredentials::discovered("notes-bot", "the-secret")
        .unwrap()
        .resource(&resource)
        .trust_any_issuer();
    let error = credentials.token().await.unwrap_err();
    assert!(
        matches!(&error, TokenRequestError::InsecureUrl { url, .. } if url == "http://id.example"),
        "{error}"
    );
    let pinned = ClientCredentials::new("http://id.example", "notes-bot", "the-secret");
    assert!(pinned.unwrap_err().to_string().contains("https"));
    let workload = ClientCredentials::workload_identity(
        Some("http://10.0.0.1/realms/x".to_owned()),
        "notes-indexer",
        || Ok(String::new()),
    );
    assert!(workload.is_err());
}

/// An MCP endpoint that wants a token it never accepts, whose Protected Resource Metadata
/// names `issuer`: its URL.
async fn mcp_naming(issuer: &str) -> String {
    let own = Arc::new(Mutex::new(String::new()));
    let metadata = {
        let own = own.clone();
        let issuer = issuer.to_owned();
        move || {
            let own = own.lock().clone();
            let issuer = issuer.clone();
            async move {
                axum::Json(
                    json!({"resource": format!("{own}/mcp"), "authorization_servers": [issuer]}),
                )
            }
        }
    };
    let challenge = {
        let own = own.clone();
        move || {
            let own = own.lock().clone();
            async move {
                let challenge = format!(
                    "Bearer resource_metadata=\"{own}/.well-known/oauth-protected-resource/mcp\""
                );
                (
                    axum::http::StatusCode::UNAUTHORIZED,
                    [(axum::http::header::WWW_AUTHENTICATE, challenge)],
                )
            }
        }
    };
    let router = Router::new()
        .route("/.well-known/oauth-protected-resource/mcp", get(metadata))
        .route("/mcp", post(challenge.clone()).get(challenge));
    let url = serve(router).await;
    *own.lock() = url.clone();
    format!("{url}/mcp")
}

/// The user's browser, played: whatever the authorization URL, the server "consents" and
/// sends the browser back with a code and the request's `state`.
async fn consenting(url: String) -> Result<String, opkit_adapters::oauth::AuthorizeError> {
    let parsed = url::Url::parse(&url)?;
    let query: std::collections::HashMap<String, String> =
        parsed.query_pairs().into_owned().collect();
    let state = query.get("state").cloned().unwrap_or_default();
    Ok(format!(
        "http://127.0.0.1:9/callback?code=the-code&state={state}"
    ))
}

#[tokio::test]
async fn a_pre_registered_secret_goes_to_no_authorization_server_nobody_chose() {
    use opkit_adapters::mcp::{McpConnection, McpLifecycle, McpOptions};
    use opkit_adapters::oauth::AuthorizationCode;

    let (evil, received) = attacker().await;
    let server = mcp_naming(&evil).await;
    let sign_in = |trusted: Option<&str>| {
        let sign_in = AuthorizationCode::new("http://127.0.0.1:9/callback", consenting)
            .unwrap()
            .preregistered("notes-desktop", Some("the-secret".to_owned()));
        match trusted {
            Some(issuer) => sign_in.trusted_issuers([issuer]),
            None => sign_in,
        }
    };
    let connect = |sign_in: AuthorizationCode| {
        let server = server.clone();
        async move {
            McpConnection::connect_http(
                &server,
                McpOptions::new("remote")
                    .lifecycle(McpLifecycle::Legacy)
                    .sign_in(sign_in),
            )
            .await
        }
    };
    for trusted in [None, Some("https://id.example")] {
        let error = connect(sign_in(trusted)).await.unwrap_err();
        assert!(
            error.to_string().contains("trusted_issuers"),
            "{trusted:?}: {error}"
        );
    }
    let token_posts = || {
        received
            .lock()
            .iter()
            .filter(|request| request.starts_with("/token"))
            .count()
    };
    assert_eq!(token_posts(), 0, "{:?}", received.lock());
    // The same flow with the attacker's server listed reaches its token endpoint: the
    // refusals above were the guard's.
    let _ = connect(sign_in(Some(&evil))).await;
    assert!(token_posts() >= 1, "{:?}", received.lock());
}
