//! Helpers of the `*_oauth` tests: a real OpenID provider (`oidc-provider`, run by
//! `peers/oauth/provider.mjs` on a free loopback port and killed by PID when dropped: the
//! test kit's), tokens
//! from it, and the operations the tests serve.
#![allow(dead_code)]

use opkit::{AccessRule, Handler, OperationKind, OperationRegistry, OperationSpec};
use opkit_testkit::oidc::OidcProvider;
use serde_json::{Value, json};

#[allow(unused_imports)]
pub use opkit_testkit::oidc::{node, peers};

/// The test kit's `oidc-provider` (killed by PID when dropped), with a client to ask it for
/// tokens.
pub struct Provider {
    _provider: OidcProvider,
    pub issuer: String,
    http: reqwest::Client,
}

impl Provider {
    /// Starts the provider and waits (at most 30 s) for it to listen.
    pub fn start() -> Self {
        let provider = OidcProvider::start();
        Self {
            issuer: provider.issuer().to_owned(),
            _provider: provider,
            http: reqwest::Client::new(),
        }
    }

    /// A client-credentials access token of `client` (its secret is `<client>-secret`) for
    /// `resource`, with `scope` (none when empty).
    pub async fn token(&self, client: &str, scope: &str, resource: &str) -> String {
        let mut form = vec![("grant_type", "client_credentials"), ("resource", resource)];
        if !scope.is_empty() {
            form.push(("scope", scope));
        }
        let answer: Value = self
            .http
            .post(format!("{}/token", self.issuer))
            .basic_auth(client, Some(format!("{client}-secret")))
            .form(&form)
            .send()
            .await
            .expect("the token request")
            .json()
            .await
            .expect("a JSON token answer");
        answer["access_token"]
            .as_str()
            .unwrap_or_else(|| panic!("no access token: {answer}"))
            .to_owned()
    }

    /// A JWT with `claims` (and `header` fields over `alg`/`typ`/`kid`) signed by the
    /// provider's current key, or by a key it never published (`foreign`).
    pub async fn sign(&self, claims: Value, header: Value, foreign: bool) -> String {
        let answer: Value = self
            .http
            .post(format!("{}/admin/sign", self.issuer))
            .json(&json!({"claims": claims, "header": header, "foreign": foreign}))
            .send()
            .await
            .expect("the sign request")
            .json()
            .await
            .expect("a JSON answer");
        answer["token"].as_str().expect("a token").to_owned()
    }

    /// A new signing key; the old one stays published unless `drop_old`. Returns its `kid`.
    pub async fn rotate(&self, drop_old: bool) -> String {
        let query = if drop_old { "?drop=1" } else { "" };
        let answer: Value = self
            .http
            .post(format!("{}/admin/rotate{query}", self.issuer))
            .send()
            .await
            .expect("the rotate request")
            .json()
            .await
            .expect("a JSON answer");
        answer["kid"].as_str().expect("a kid").to_owned()
    }
}

/// Seconds since the epoch.
pub fn now() -> i64 {
    let elapsed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("a clock after 1970");
    i64::try_from(elapsed.as_secs()).expect("seconds fit")
}

/// The served operations: each answers the caller's identity. `notes.read` needs
/// `notes:read`, `notes.write` `notes:write`, `notes.review` the role `editor`, `public.ping`
/// nothing.
pub fn registry() -> OperationRegistry {
    let registry = OperationRegistry::new();
    let object = json!({"type": "object", "properties": {}});
    let operations = [
        (
            "notes",
            "read",
            OperationKind::Query,
            AccessRule::scopes(["notes:read"]),
        ),
        (
            "notes",
            "write",
            OperationKind::Mutation,
            AccessRule::scopes(["notes:write"]),
        ),
        (
            "notes",
            "review",
            OperationKind::Mutation,
            AccessRule::roles(["editor"]),
        ),
        ("public", "ping", OperationKind::Query, AccessRule::public()),
    ];
    for (namespace, name, kind, access) in operations {
        registry
            .register(
                OperationSpec::new(namespace, name, kind)
                    .description(format!("{namespace}.{name}: answers the caller"))
                    .input_schema(object.clone())
                    .access(access),
                Handler::unary(|_input, ctx| async move {
                    Ok(json!({"caller": ctx.identity().cloned()}))
                }),
            )
            .expect("register");
    }
    registry
}

/// A `WWW-Authenticate` header of `response` (empty when absent).
pub fn challenge(response: &reqwest::Response) -> String {
    response
        .headers()
        .get("www-authenticate")
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default()
        .to_owned()
}
