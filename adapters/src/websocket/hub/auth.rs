//! Spoke authentication: the grant a token gives ([`SpokeGrant`]), the verifiers
//! ([`TokenVerifier`], [`StaticTokens`]) and reading the handshake's bearer token.

use opkit::Identity;
use std::collections::HashMap;
use std::fmt;
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request};
use tokio_tungstenite::tungstenite::http::{StatusCode, header};

/// What a verified token grants a spoke.
#[derive(Debug, Clone, PartialEq)]
pub struct SpokeGrant {
    /// The spoke's name, in logs and [`WsHub::operations`](super::WsHub::operations).
    pub name: String,
    /// When set, the hub stamps this identity on every `call.requested` the spoke publishes.
    pub identity: Option<Identity>,
}

impl SpokeGrant {
    /// A grant for a spoke named `name` whose requests carry the identities it puts in them.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            identity: None,
        }
    }

    /// Binds the spoke's requests to `identity` (the hub overwrites theirs).
    #[must_use]
    pub fn with_identity(mut self, identity: Identity) -> Self {
        self.identity = Some(identity);
        self
    }
}

/// Checks the token a spoke presents in its handshake (`Authorization: Bearer <token>`).
///
/// Implemented by [`StaticTokens`] and by any `Fn(&str) -> Option<SpokeGrant>`.
pub trait TokenVerifier: Send + Sync + 'static {
    /// The spoke's grant, or `None` to refuse the connection (HTTP 401).
    fn verify(&self, token: &str) -> Option<SpokeGrant>;
}

impl<F> TokenVerifier for F
where
    F: Fn(&str) -> Option<SpokeGrant> + Send + Sync + 'static,
{
    fn verify(&self, token: &str) -> Option<SpokeGrant> {
        self(token)
    }
}

/// A fixed table of tokens.
///
/// ```
/// use opkit_adapters::websocket::{SpokeGrant, StaticTokens, TokenVerifier};
/// let tokens = StaticTokens::new().with_token("s3cret", SpokeGrant::new("billing"));
/// assert_eq!(tokens.verify("s3cret").unwrap().name, "billing");
/// assert!(tokens.verify("guess").is_none());
/// ```
#[derive(Clone, Default)]
pub struct StaticTokens {
    tokens: HashMap<String, SpokeGrant>,
}

impl fmt::Debug for StaticTokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never print the tokens themselves.
        f.debug_struct("StaticTokens")
            .field("tokens", &self.tokens.len())
            .finish()
    }
}

impl StaticTokens {
    /// No tokens: every spoke is refused.
    pub fn new() -> Self {
        Self::default()
    }

    /// Accepts `token`, granting `grant`.
    #[must_use]
    pub fn with_token(mut self, token: impl Into<String>, grant: SpokeGrant) -> Self {
        self.tokens.insert(token.into(), grant);
        self
    }
}

impl TokenVerifier for StaticTokens {
    fn verify(&self, token: &str) -> Option<SpokeGrant> {
        self.tokens.get(token).cloned()
    }
}

/// The token of an `Authorization: Bearer <token>` header.
pub(super) fn bearer_token(request: &Request) -> Option<&str> {
    let value = request
        .headers()
        .get(header::AUTHORIZATION)?
        .to_str()
        .ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

/// The `401 Unauthorized` answer to a handshake.
pub(super) fn refuse(message: &str) -> ErrorResponse {
    let mut response = ErrorResponse::new(Some(message.to_owned()));
    *response.status_mut() = StatusCode::UNAUTHORIZED;
    response
}
