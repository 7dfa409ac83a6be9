//! The HTTP server as an OAuth 2.1 resource server (feature `oauth`), against a real OpenID
//! provider (`oidc-provider`, started on loopback): its tokens give the right identity,
//! scopes and roles; tokens for another audience, expired, signed by an unknown key, with
//! `alg: none`, tampered with or from another issuer are refused with `401` and
//! `error="invalid_token"`; a missing scope is `403 insufficient_scope`; the provider's key
//! rotation is picked up without a restart; the metadata and the OpenAPI document say how
//! to sign in.
#![cfg(all(feature = "oauth", feature = "http-server"))]

use crate::oauth_support;
use opkit_testkit::process::TaskGuard;

use base64::Engine;
use oauth_support::{Provider, challenge, now, registry};
use opkit_adapters::http_server::HttpServer;
use opkit_adapters::oauth::OAuthAuthenticator;
use serde_json::{Value, json};
use std::time::Duration;

/// An HTTP server at the root of a loopback port, its resource URI `http://127.0.0.1:<p>`.
struct Api {
    base: String,
    http: reqwest::Client,
    _task: TaskGuard,
}

impl Api {
    async fn start(provider: &Provider) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let auth = OAuthAuthenticator::builder(provider.issuer.clone(), base.clone())
            .scopes_supported(["notes:read", "notes:write"])
            .roles_claim("roles")
            .token_type("at+jwt")
            .leeway(Duration::from_secs(5))
            .min_refresh_interval(Duration::from_millis(200))
            .build()
            .unwrap();
        let router = HttpServer::new(registry()).authenticator(auth).router();
        let task = tokio::spawn(async move {
            axum::serve(listener, router).await.unwrap();
        });
        Self {
            base,
            http: reqwest::Client::new(),
            _task: TaskGuard(task),
        }
    }

    async fn call(&self, id: &str, token: Option<&str>) -> reqwest::Response {
        let mut request = self
            .http
            .post(format!("{}/ops/{id}", self.base))
            .json(&json!({}));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        request.send().await.unwrap()
    }

    fn metadata_url(&self) -> String {
        format!("{}/.well-known/oauth-protected-resource", self.base)
    }
}

#[tokio::test]
async fn provider_tokens_give_the_identity_scopes_and_roles() {
    let provider = Provider::start();
    let api = Api::start(&provider).await;

    let writer = provider
        .token("writer", "notes:read notes:write", &api.base)
        .await;
    let response = api.call("notes.write", Some(&writer)).await;
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    assert_eq!(
        body["data"]["caller"],
        json!({"id": "writer", "scopes": ["notes:read", "notes:write"], "roles": ["editor"]})
    );
    assert_eq!(api.call("notes.review", Some(&writer)).await.status(), 200);

    // A token without the scope an operation needs: 403 and the scope to ask for.
    let reader = provider.token("reader", "notes:read", &api.base).await;
    assert_eq!(api.call("notes.read", Some(&reader)).await.status(), 200);
    let response = api.call("notes.write", Some(&reader)).await;
    assert_eq!(response.status(), 403);
    assert_eq!(
        challenge(&response),
        format!(
            "Bearer error=\"insufficient_scope\", scope=\"notes:write\", resource_metadata=\"{}\"",
            api.metadata_url()
        )
    );
    // A missing role is a 403 without a scope challenge.
    let response = api.call("notes.review", Some(&reader)).await;
    assert_eq!(response.status(), 403);
    assert_eq!(challenge(&response), "");

    // No token: public operations run, the others point to the metadata.
    assert_eq!(api.call("public.ping", None).await.status(), 200);
    let response = api.call("notes.read", None).await;
    assert_eq!(response.status(), 401);
    assert_eq!(
        challenge(&response),
        format!("Bearer resource_metadata=\"{}\"", api.metadata_url())
    );
}

#[tokio::test]
async fn the_metadata_and_the_openapi_document_say_how_to_sign_in() {
    let provider = Provider::start();
    let api = Api::start(&provider).await;
    let metadata: Value = api
        .http
        .get(api.metadata_url())
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(metadata["resource"], api.base);
    assert_eq!(metadata["authorization_servers"], json!([provider.issuer]));
    assert_eq!(
        metadata["scopes_supported"],
        json!(["notes:read", "notes:write"])
    );
    assert_eq!(metadata["bearer_methods_supported"], json!(["header"]));

    let document: Value = api
        .http
        .get(format!("{}/openapi.json", api.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let scheme = &document["components"]["securitySchemes"]["oidc"];
    assert_eq!(scheme["type"], "openIdConnect");
    assert_eq!(
        scheme["openIdConnectUrl"],
        format!("{}/.well-known/openid-configuration", provider.issuer)
    );
    assert_eq!(
        document["paths"]["/ops/notes.write"]["post"]["security"],
        json!([{"oidc": ["notes:write"]}])
    );
    assert_eq!(
        document["paths"]["/ops/public.ping"]["get"]["security"],
        json!([{}, {"oidc": []}])
    );
    // The discovery document the scheme names is the provider's.
    let discovery: Value = api
        .http
        .get(scheme["openIdConnectUrl"].as_str().unwrap())
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(discovery["issuer"], provider.issuer);
}

/// A refused token: `401`, `error="invalid_token"` with the metadata, and a message naming
/// the reason.
async fn assert_refused(api: &Api, token: &str, reason: &str) {
    let response = api.call("notes.read", Some(token)).await;
    assert_eq!(response.status(), 401, "a token that {reason}");
    assert_eq!(
        challenge(&response),
        format!(
            "Bearer error=\"invalid_token\", resource_metadata=\"{}\"",
            api.metadata_url()
        )
    );
    let body: Value = response.json().await.unwrap();
    let message = body["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(reason),
        "`{message}` should say that {reason}"
    );
}

fn claims(provider: &Provider, audience: &str, exp: i64) -> Value {
    json!({
        "iss": provider.issuer, "sub": "mallory", "aud": audience, "scope": "notes:read",
        "iat": now() - 600, "exp": exp, "client_id": "mallory"
    })
}

#[tokio::test]
async fn bad_tokens_are_refused_with_401_and_the_reason() {
    let provider = Provider::start();
    let api = Api::start(&provider).await;
    let engine = base64::engine::general_purpose::URL_SAFE_NO_PAD;

    // Issued by the provider, for another resource.
    let other = provider
        .token("reader", "notes:read", "http://127.0.0.1:9/other")
        .await;
    assert_refused(&api, &other, "another audience").await;

    // Signed with the provider's published key, but expired (beyond the 5 s leeway).
    let expired = provider
        .sign(claims(&provider, &api.base, now() - 60), json!({}), false)
        .await;
    assert_refused(&api, &expired, "expired").await;
    // The same key and claims, not expired: accepted (so the refusals above are about the
    // claims, not the key).
    let fine = provider
        .sign(claims(&provider, &api.base, now() + 60), json!({}), false)
        .await;
    assert_eq!(api.call("notes.read", Some(&fine)).await.status(), 200);

    // Not valid yet.
    let mut early = claims(&provider, &api.base, now() + 600);
    early["nbf"] = json!(now() + 300);
    let early = provider.sign(early, json!({}), false).await;
    assert_refused(&api, &early, "not valid yet").await;

    // Another issuer.
    let mut foreign_issuer = claims(&provider, &api.base, now() + 60);
    foreign_issuer["iss"] = json!("http://127.0.0.1:9");
    let foreign_issuer = provider.sign(foreign_issuer, json!({}), false).await;
    assert_refused(&api, &foreign_issuer, "another issuer").await;

    // Signed by a key the provider never published.
    let unknown = provider
        .sign(claims(&provider, &api.base, now() + 60), json!({}), true)
        .await;
    assert_refused(&api, &unknown, "does not publish").await;

    // `alg: none`, with the claims of a good token.
    let good = provider.token("reader", "notes:read", &api.base).await;
    let payload = good.split('.').nth(1).unwrap();
    let none = format!(
        "{}.{payload}.",
        engine.encode(br#"{"alg":"none","typ":"at+jwt"}"#)
    );
    assert_refused(&api, &none, "algorithm `none`").await;
    // HS256 with the provider's public key as the secret would be the same story.
    let hmac = format!(
        "{}.{payload}.{}",
        engine.encode(br#"{"alg":"HS256","typ":"at+jwt"}"#),
        engine.encode(b"not-a-mac")
    );
    assert_refused(&api, &hmac, "algorithm `HS256`").await;

    // Tampered: more scopes in the payload, the original signature.
    let mut parts: Vec<String> = good.split('.').map(str::to_owned).collect();
    let mut body: Value = serde_json::from_slice(&engine.decode(&parts[1]).unwrap()).unwrap();
    body["scope"] = json!("notes:read notes:write");
    parts[1] = engine.encode(body.to_string());
    assert_refused(&api, &parts.join("."), "signature does not verify").await;

    // Not an access token (`typ` JWT, as an ID token would say).
    let id_token_like = provider
        .sign(
            claims(&provider, &api.base, now() + 60),
            json!({"typ": "JWT"}),
            false,
        )
        .await;
    assert_refused(&api, &id_token_like, "type is `JWT`").await;

    // Garbage and a non-bearer header.
    assert_refused(&api, "not-a-jwt", "not a well-formed JWT").await;
    let response = api
        .http
        .post(format!("{}/ops/notes.read", api.base))
        .header("authorization", "Basic dXNlcjpwdw==")
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);
    assert!(challenge(&response).starts_with("Bearer error=\"invalid_token\""));

    // The good token itself is accepted.
    assert_eq!(api.call("notes.read", Some(&good)).await.status(), 200);
}

#[tokio::test]
async fn key_rotation_at_the_provider_is_picked_up_without_a_restart() {
    let provider = Provider::start();
    let api = Api::start(&provider).await;
    let before = provider.token("reader", "notes:read", &api.base).await;
    assert_eq!(api.call("notes.read", Some(&before)).await.status(), 200);

    // A new key, the old one still published: both tokens are good.
    let kid = provider.rotate(false).await;
    tokio::time::sleep(Duration::from_millis(300)).await; // past the refresh interval
    let after = provider.token("reader", "notes:read", &api.base).await;
    assert!(header_of(&after)["kid"] == kid, "the new key signs");
    assert_eq!(api.call("notes.read", Some(&after)).await.status(), 200);
    assert_eq!(api.call("notes.read", Some(&before)).await.status(), 200);

    // The old key withdrawn: tokens it signed go (once the keys are fetched again for a
    // new kid), tokens of the newest key work.
    provider.rotate(true).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let newest = provider.token("reader", "notes:read", &api.base).await;
    assert_eq!(api.call("notes.read", Some(&newest)).await.status(), 200);
    assert_refused(&api, &before, "does not publish").await;
}

fn header_of(token: &str) -> Value {
    let engine = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    serde_json::from_slice(&engine.decode(token.split('.').next().unwrap()).unwrap()).unwrap()
}
