//! The HTTP client rmcp's OAuth client sends through during a sign-in ([`DpopHttp`]): reqwest,
//! plus DPoP at the token endpoint of an authorization server that offers it. It reads the
//! authorization server metadata passing through (`dpop_signing_alg_values_supported` with
//! `ES256` marks its `token_endpoint`), gives each token request to such an endpoint a proof,
//! and sends a request again, once, with the nonce a `use_dpop_nonce` answer names (RFC 9449
//! §8).
//!
//! For a client with a secret it also holds the secret to the servers the application
//! trusts ([`SecretGuard`]): the metadata passing through whose `issuer` is trusted marks its
//! `token_endpoint`, and a `POST` (what carries the secret) goes nowhere else.

use super::dpop::{DpopKey, NONCE_HEADER, Nonces, PROOF_HEADER, USE_NONCE};
use futures::StreamExt;
use parking_lot::Mutex;
use rmcp::transport::auth::{
    OAuthHttpClient, OAuthHttpClientError, OAuthHttpClientFuture, OAuthHttpRedirectPolicy,
    OAuthHttpRequest,
};
use serde_json::Value;
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

/// The bound on an authorization server's answer: 1 MiB.
const MAX_ANSWER_BYTES: usize = 1 << 20;

/// The bound on one request, when rmcp names none: 30 s.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// The sign-in's HTTP client (see the module docs).
pub(crate) struct DpopHttp {
    follow: reqwest::Client,
    stop: reqwest::Client,
    /// The connection's DPoP key, when DPoP is on.
    key: Option<Arc<DpopKey>>,
    nonces: Arc<Nonces>,
    /// Token endpoints whose authorization server offers DPoP with ES256.
    endpoints: Mutex<HashSet<String>>,
    /// Where a client secret may go, when the client has one.
    guard: Option<Arc<SecretGuard>>,
}

/// The trusted issuers of a client with a secret, and their token endpoints seen so far.
pub(crate) struct SecretGuard {
    trusted: Vec<String>,
    endpoints: Mutex<HashSet<String>>,
    /// Why the last request was refused (rmcp's error does not carry it).
    refused: Mutex<Option<String>>,
}

impl SecretGuard {
    pub(crate) fn new(trusted: &[String]) -> Self {
        Self {
            trusted: trusted
                .iter()
                .map(|issuer| issuer.trim_end_matches('/').to_owned())
                .collect(),
            endpoints: Mutex::default(),
            refused: Mutex::default(),
        }
    }

    /// Why a request was refused, if one was.
    pub(crate) fn refusal(&self) -> Option<String> {
        self.refused.lock().clone()
    }

    /// Marks the token endpoint of `document` when its issuer is trusted.
    fn note(&self, document: &Value) {
        let issuer = document.get("issuer").and_then(Value::as_str);
        let endpoint = document.get("token_endpoint").and_then(Value::as_str);
        if let (Some(issuer), Some(endpoint)) = (issuer, endpoint)
            && self
                .trusted
                .iter()
                .any(|trusted| trusted == issuer.trim_end_matches('/'))
            && crate::oauth::fetch::is_secure_url(endpoint)
        {
            self.endpoints.lock().insert(endpoint.to_owned());
        }
    }

    /// Whether a `POST` may go to `url`.
    fn allows(&self, url: &str) -> Result<(), Error> {
        if self.endpoints.lock().contains(url) {
            return Ok(());
        }
        let refusal = format!(
            "the sign-in does not send its client secret to {url}: it is not the token endpoint of a trusted authorization server (AuthorizationCode::trusted_issuers)"
        );
        tracing::warn!(target: "opkit_adapters::oauth", "{refusal}");
        *self.refused.lock() = Some(refusal.clone());
        Err(refusal.into())
    }
}

type Error = OAuthHttpClientError;

impl DpopHttp {
    pub(crate) fn new(
        key: Option<Arc<DpopKey>>,
        nonces: Arc<Nonces>,
        guard: Option<Arc<SecretGuard>>,
    ) -> Result<Self, Error> {
        let build = |redirect: reqwest::redirect::Policy| {
            reqwest::Client::builder()
                .redirect(redirect)
                .timeout(DEFAULT_TIMEOUT)
                .build()
        };
        Ok(Self {
            follow: build(reqwest::redirect::Policy::limited(10))?,
            stop: build(reqwest::redirect::Policy::none())?,
            key,
            nonces,
            endpoints: Mutex::default(),
            guard,
        })
    }

    /// Whether the token endpoint at `url` takes DPoP proofs.
    pub(crate) fn offers_dpop(&self, url: &str) -> bool {
        self.endpoints.lock().contains(url)
    }

    /// Marks the token endpoint of an authorization server metadata document that offers
    /// DPoP with ES256.
    fn note_metadata(&self, body: &[u8]) {
        let Ok(document) = serde_json::from_slice::<Value>(body) else {
            return;
        };
        if let Some(guard) = &self.guard {
            guard.note(&document);
        }
        let es256 = document
            .get("dpop_signing_alg_values_supported")
            .and_then(Value::as_array)
            .is_some_and(|algorithms| algorithms.iter().any(|alg| alg == "ES256"));
        if let (true, Some(endpoint)) = (
            es256,
            document.get("token_endpoint").and_then(Value::as_str),
        ) {
            self.endpoints.lock().insert(endpoint.to_owned());
        }
    }
}

/// A buffered answer: status, headers and body.
struct Answer {
    status: http::StatusCode,
    headers: http::HeaderMap,
    body: Vec<u8>,
}

impl Answer {
    /// Whether the server wants its nonce in the proof (`error` of a JSON body).
    fn wants_nonce(&self) -> Option<String> {
        if self.status != http::StatusCode::BAD_REQUEST {
            return None;
        }
        let error = serde_json::from_slice::<Value>(&self.body).ok()?;
        (error.get("error").and_then(Value::as_str) == Some(USE_NONCE))
            .then(|| self.nonce())
            .flatten()
    }

    fn nonce(&self) -> Option<String> {
        self.headers
            .get(NONCE_HEADER)
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned)
    }
}

impl DpopHttp {
    async fn send(
        &self,
        client: &reqwest::Client,
        parts: &http::request::Parts,
        body: &[u8],
        proof: Option<String>,
        timeout: Option<Duration>,
    ) -> Result<Answer, Error> {
        let url = parts.uri.to_string();
        let mut request = client
            .request(parts.method.clone(), &url)
            .headers(parts.headers.clone())
            .body(body.to_vec());
        if let Some(proof) = proof {
            request = request.header(PROOF_HEADER, proof);
        }
        if let Some(timeout) = timeout {
            request = request.timeout(timeout);
        }
        let response = request.send().await?;
        let status = response.status();
        let headers = response.headers().clone();
        let mut answer = Vec::new();
        let mut chunks = response.bytes_stream();
        while let Some(chunk) = chunks.next().await {
            let chunk = chunk?;
            if answer.len() + chunk.len() > MAX_ANSWER_BYTES {
                return Err(
                    format!("the answer of {url} is larger than {MAX_ANSWER_BYTES} bytes").into(),
                );
            }
            answer.extend_from_slice(&chunk);
        }
        Ok(Answer {
            status,
            headers,
            body: answer,
        })
    }
}

impl OAuthHttpClient for DpopHttp {
    fn execute(&self, request: OAuthHttpRequest) -> OAuthHttpClientFuture<'_> {
        Box::pin(async move {
            let client = match request.redirect_policy {
                OAuthHttpRedirectPolicy::Stop => &self.stop,
                _ => &self.follow,
            };
            let timeout = request.timeout;
            let (parts, body) = request.request.into_parts();
            let url = parts.uri.to_string();
            refuse_metadata_hosts(&url)?;
            if parts.method == http::Method::POST
                && let Some(guard) = &self.guard
            {
                guard.allows(&url)?;
            }
            let key = self
                .key
                .as_ref()
                .filter(|_| parts.method == http::Method::POST && self.offers_dpop(&url));
            let token_request = key.is_some();
            let proof = |nonce: Option<String>| -> Result<Option<String>, Error> {
                let Some(key) = key else {
                    return Ok(None);
                };
                Ok(Some(key.proof("POST", &url, None, nonce.as_deref())?))
            };
            let mut answer = self
                .send(
                    client,
                    &parts,
                    &body,
                    proof(self.nonces.for_url(&url))?,
                    timeout,
                )
                .await?;
            if token_request {
                if let Some(nonce) = answer.wants_nonce() {
                    self.nonces.remember(&url, &nonce);
                    answer = self
                        .send(client, &parts, &body, proof(Some(nonce))?, timeout)
                        .await?;
                }
                if let Some(nonce) = answer.nonce() {
                    self.nonces.remember(&url, &nonce);
                }
            } else if parts.method == http::Method::GET && answer.status.is_success() {
                self.note_metadata(&answer.body);
            }
            let mut response = http::Response::builder().status(answer.status);
            for (name, value) in &answer.headers {
                response = response.header(name, value);
            }
            Ok(response.body(answer.body)?)
        })
    }
}

/// Cloud metadata services: never an authorization server.
const METADATA_HOSTS: &[&str] = &[
    "metadata",
    "metadata.google.internal",
    "metadata.azure.internal",
];

/// Refuses a URL at a link-local address (169.254.0.0/16, fe80::/10, where cloud metadata
/// services listen) or a cloud metadata host name: a discovered document could name one.
fn refuse_metadata_hosts(url: &str) -> Result<(), Error> {
    let parsed = url::Url::parse(url)?;
    let refused = match parsed.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_link_local(),
        Some(url::Host::Ipv6(ip)) => (ip.segments()[0] & 0xffc0) == 0xfe80,
        Some(url::Host::Domain(name)) => {
            METADATA_HOSTS.contains(&name.to_ascii_lowercase().as_str())
        }
        None => true,
    };
    if refused {
        return Err(format!(
            "the sign-in does not send requests to {url}: a link-local or cloud metadata address"
        )
        .into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_addresses_are_refused() {
        for url in [
            "http://169.254.169.254/latest/meta-data",
            "http://[fe80::1]/token",
            "http://metadata.google.internal/computeMetadata",
        ] {
            assert!(refuse_metadata_hosts(url).is_err(), "{url}");
        }
        assert!(refuse_metadata_hosts("http://127.0.0.1:4000/token").is_ok());
        assert!(refuse_metadata_hosts("https://id.example/token").is_ok());
    }
}
