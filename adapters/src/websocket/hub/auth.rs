//! Spoke authentication: the verifiers ([`TokenVerifier`], [`StaticTokens`]), reading the
//! handshake's bearer token, and the handshake's refusals.

use super::grant::SpokeGrant;
use aws_lc_rs::digest::{SHA256, digest};
use std::fmt;
use subtle::{ConditionallySelectable, ConstantTimeEq};
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request};
use tokio_tungstenite::tungstenite::http::{StatusCode, header};

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
/// A token is checked against every token of the table in constant time (their SHA-256
/// digests are compared, all of them, whichever matches), so the time a check takes tells
/// nothing about how close a guess came.
///
/// ```
/// use opkit_adapters::websocket::{SpokeGrant, StaticTokens, TokenVerifier};
/// let tokens = StaticTokens::new().with_token("s3cret", SpokeGrant::new("billing"));
/// assert_eq!(tokens.verify("s3cret").unwrap().name, "billing");
/// assert!(tokens.verify("guess").is_none());
/// ```
#[derive(Clone, Default)]
pub struct StaticTokens {
    /// The SHA-256 digest of each token, with its grant; no two digests are equal.
    tokens: Vec<([u8; 32], SpokeGrant)>,
}

impl fmt::Debug for StaticTokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never print the tokens themselves.
        f.debug_struct("StaticTokens")
            .field("tokens", &self.tokens.len())
            .finish()
    }
}

fn token_digest(token: &str) -> [u8; 32] {
    let mut out = [0; 32];
    out.copy_from_slice(digest(&SHA256, token.as_bytes()).as_ref());
    out
}

impl StaticTokens {
    /// No tokens: every spoke is refused.
    pub fn new() -> Self {
        Self::default()
    }

    /// Accepts `token`, granting `grant` (replacing what the same token granted before).
    #[must_use]
    pub fn with_token(mut self, token: impl Into<String>, grant: SpokeGrant) -> Self {
        let digest = token_digest(&token.into());
        match self.tokens.iter_mut().find(|(known, _)| *known == digest) {
            Some(entry) => entry.1 = grant,
            None => self.tokens.push((digest, grant)),
        }
        self
    }
}

impl TokenVerifier for StaticTokens {
    fn verify(&self, token: &str) -> Option<SpokeGrant> {
        let presented = token_digest(token);
        // Every digest is compared, and the match (if any) is selected without a branch.
        let mut found = u64::MAX;
        for (index, (known, _)) in self.tokens.iter().enumerate() {
            found.conditional_assign(&(index as u64), known[..].ct_eq(&presented[..]));
        }
        let index = usize::try_from(found).ok()?;
        self.tokens.get(index).map(|(_, grant)| grant.clone())
    }
}

/// The token of an `Authorization: Bearer <token>` header.
pub(super) fn bearer_token(request: &Request) -> Option<&str> {
    let mut values = request.headers().get_all(header::AUTHORIZATION).iter();
    let value = values.next()?.to_str().ok()?;
    if values.next().is_some() {
        // Several: which one a proxy and the hub read first may differ; none is taken.
        return None;
    }
    let (scheme, token) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

/// The `401 Unauthorized` answer to a handshake.
pub(super) fn refuse(message: &str) -> ErrorResponse {
    answer(StatusCode::UNAUTHORIZED, message.to_owned())
}

/// The `429 Too Many Requests` answer to a handshake, naming the bound.
pub(super) fn too_many(message: String) -> ErrorResponse {
    answer(StatusCode::TOO_MANY_REQUESTS, message)
}

fn answer(status: StatusCode, message: String) -> ErrorResponse {
    let mut response = ErrorResponse::new(Some(message));
    *response.status_mut() = status;
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn static_tokens_match_whole_tokens_only() {
        let tokens = StaticTokens::new()
            .with_token("alpha", SpokeGrant::new("a"))
            .with_token("alphabet", SpokeGrant::new("b"))
            .with_token("", SpokeGrant::new("empty"))
            .with_token("alpha", SpokeGrant::new("a2"));
        assert_eq!(tokens.verify("alpha").unwrap().name, "a2");
        assert_eq!(tokens.verify("alphabet").unwrap().name, "b");
        assert_eq!(tokens.verify("").unwrap().name, "empty");
        for guess in ["alph", "alphabe", "alphabets", "ALPHA", "alpha "] {
            assert!(tokens.verify(guess).is_none(), "{guess}");
        }
        assert!(StaticTokens::new().verify("alpha").is_none());
        assert_eq!(format!("{tokens:?}"), "StaticTokens { tokens: 3 }");
    }

    #[test]
    fn one_bearer_header_is_read_and_two_are_refused() {
        let request = |values: &[&str]| {
            let mut request = Request::builder();
            for value in values {
                request = request.header(header::AUTHORIZATION, *value);
            }
            request.body(()).unwrap()
        };
        assert_eq!(bearer_token(&request(&["Bearer abc"])), Some("abc"));
        assert_eq!(bearer_token(&request(&["Basic abc"])), None);
        assert_eq!(bearer_token(&request(&["Bearer abc", "Bearer def"])), None);
        assert_eq!(bearer_token(&request(&[])), None);
    }
}
