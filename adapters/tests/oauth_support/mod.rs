//! Helpers of the `*_oauth` tests: a real OpenID provider (`oidc-provider`, run by
//! `peers/oauth/provider.mjs` on a free loopback port and killed by PID when dropped), tokens
//! from it, and the operations the tests serve.
#![allow(dead_code)]

use opkit::{AccessRule, Handler, OperationKind, OperationRegistry, OperationSpec};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// The OAuth peers' folder.
pub fn peers() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("peers/oauth")
}

/// Node 22 of the OAuth peers.
pub fn node() -> PathBuf {
    let node = peers().join("node_modules/.bin/node");
    assert!(
        node.exists() && peers().join("node_modules/oidc-provider").exists(),
        "the OAuth peers are missing ({}): run `bash scripts/install-peers.sh`",
        peers().display()
    );
    node
}

/// A running `oidc-provider`; killed (by PID) when dropped.
pub struct Provider {
    child: Child,
    pub issuer: String,
    http: reqwest::Client,
}

impl Provider {
    /// Starts the provider and waits (at most 30 s) for it to listen.
    pub fn start() -> Self {
        let mut child = Command::new(node())
            .current_dir(peers())
            .arg("provider.mjs")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the OpenID provider");
        let stdout = child.stdout.take().expect("the provider's stdout");
        let (ready, port) = mpsc::channel();
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
            http: reqwest::Client::new(),
        };
        match port.recv_timeout(Duration::from_secs(30)) {
            Ok(port) => provider.issuer = format!("http://127.0.0.1:{port}"),
            // Dropping the provider kills it.
            Err(error) => panic!("the OpenID provider did not start: {error}"),
        }
        provider
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

impl Drop for Provider {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
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
