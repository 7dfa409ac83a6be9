//! Opaque access tokens, checked by asking the issuer (token introspection, RFC 7662).
//!
//! Each answer is kept, by a digest of the token (the token itself is not held): an active
//! token's claims until it expires (at most [`INTROSPECTION_MAX_ACTIVE_AGE`], so a revocation is seen
//! within it), a refusal for [`INTROSPECTION_REFUSAL_AGE`], so the same token presented again and again
//! costs one request to the provider per that time. At most [`INTROSPECTION_MAX_KEPT`] answers are kept.
//! A provider that cannot be reached is asked again the next time (nothing kept).

use crate::oauth::discovery::{Discovery, discover};
use crate::oauth::error::{FetchError, TokenError};
use crate::oauth::fetch::Fetcher;
use parking_lot::Mutex;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// The longest an active token's introspection is kept: 5 minutes.
pub const INTROSPECTION_MAX_ACTIVE_AGE: Duration = Duration::from_secs(300);
/// How long a refused token's introspection is kept: 30 s.
pub const INTROSPECTION_REFUSAL_AGE: Duration = Duration::from_secs(30);
/// The most introspection answers kept at once: 10,000.
pub const INTROSPECTION_MAX_KEPT: usize = 10_000;

/// The `token_type` values an access token may introspect as (RFC 7662 §2.2 names the
/// token's type; providers write the scheme or the RFC 8693 type identifier).
const ACCESS_TOKEN_TYPES: [&str; 4] = [
    "bearer",
    "dpop",
    "access_token",
    "urn:ietf:params:oauth:token-type:access_token",
];

type Answer = Result<Map<String, Value>, TokenError>;

/// Kept answers by token digest, each with the instant it is dropped.
#[derive(Default)]
struct Kept(HashMap<[u8; 32], (Answer, Instant)>);

impl Kept {
    fn get(&self, digest: &[u8; 32], now: Instant) -> Option<Answer> {
        let (answer, until) = self.0.get(digest)?;
        (now < *until).then(|| answer.clone())
    }

    fn keep(&mut self, digest: [u8; 32], answer: Answer, until: Instant, now: Instant) {
        if self.0.len() >= INTROSPECTION_MAX_KEPT {
            self.0.retain(|_, (_, kept_until)| *kept_until > now);
        }
        if self.0.len() >= INTROSPECTION_MAX_KEPT
            && let Some(oldest) = self
                .0
                .iter()
                .min_by_key(|(_, (_, kept_until))| *kept_until)
                .map(|(digest, _)| *digest)
        {
            self.0.remove(&oldest);
        }
        self.0.insert(digest, (answer, until));
    }
}

fn digest(token: &str) -> [u8; 32] {
    let hash = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, token.as_bytes());
    let mut digest = [0u8; 32];
    digest.copy_from_slice(hash.as_ref());
    digest
}

fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs())
}

/// The introspection endpoint of one issuer and the credentials to call it with.
pub(crate) struct Introspection {
    fetcher: Fetcher,
    issuer: String,
    discovery: Discovery,
    client_id: String,
    client_secret: String,
    endpoint: tokio::sync::OnceCell<String>,
    kept: Mutex<Kept>,
}

impl Introspection {
    pub(crate) fn new(
        fetcher: Fetcher,
        issuer: String,
        discovery: Discovery,
        client_id: String,
        client_secret: String,
    ) -> Self {
        Self {
            fetcher,
            issuer,
            discovery,
            client_id,
            client_secret,
            endpoint: tokio::sync::OnceCell::new(),
            kept: Mutex::default(),
        }
    }

    /// The claims of an active `token` for one of `audiences`, or why it is refused: the
    /// kept answer when there is one (see the module docs).
    pub(crate) async fn introspect(
        &self,
        token: &str,
        issuer: &str,
        audiences: &[String],
    ) -> Result<Map<String, Value>, TokenError> {
        let digest = digest(token);
        if let Some(answer) = self.kept.lock().get(&digest, Instant::now()) {
            return answer;
        }
        let answer = self.ask(token, issuer, audiences).await;
        let now = Instant::now();
        let until = match &answer {
            Ok(claims) => {
                let left = claims
                    .get("exp")
                    .and_then(Value::as_u64)
                    .map_or(INTROSPECTION_MAX_ACTIVE_AGE, |exp| {
                        Duration::from_secs(exp.saturating_sub(now_secs()))
                    });
                Some(now + left.min(INTROSPECTION_MAX_ACTIVE_AGE))
            }
            Err(TokenError::IntrospectionUnavailable(_)) => None,
            Err(_) => Some(now + INTROSPECTION_REFUSAL_AGE),
        };
        if let Some(until) = until {
            self.kept.lock().keep(digest, answer.clone(), until, now);
        }
        answer
    }

    /// Asks the provider about `token`.
    async fn ask(
        &self,
        token: &str,
        issuer: &str,
        audiences: &[String],
    ) -> Result<Map<String, Value>, TokenError> {
        let endpoint = self
            .endpoint
            .get_or_try_init(|| async {
                let metadata = discover(&self.fetcher, &self.issuer, self.discovery).await?;
                metadata
                    .introspection_endpoint
                    .ok_or_else(|| FetchError::MissingEndpoint {
                        issuer: self.issuer.clone(),
                        field: "introspection_endpoint",
                    })
            })
            .await
            .map_err(TokenError::IntrospectionUnavailable)?;
        let (status, answer) = self
            .fetcher
            .post_form(
                endpoint,
                &[("token", token), ("token_type_hint", "access_token")],
                Some((&self.client_id, &self.client_secret)),
            )
            .await
            .map_err(TokenError::IntrospectionUnavailable)?;
        let Value::Object(claims) = answer else {
            return Err(TokenError::IntrospectionUnavailable(
                FetchError::InvalidDocument {
                    url: endpoint.clone(),
                    reason: format!("status {status}, not a JSON object"),
                },
            ));
        };
        if !(200..300).contains(&status) {
            return Err(TokenError::IntrospectionUnavailable(FetchError::Status {
                url: endpoint.clone(),
                status,
            }));
        }
        check(claims, issuer, audiences)
    }
}

/// An introspection answer checked: active, an access token (when it says its type), from
/// `issuer` (when it says), for one of `audiences`, not expired, already valid.
fn check(
    claims: Map<String, Value>,
    issuer: &str,
    audiences: &[String],
) -> Result<Map<String, Value>, TokenError> {
    if claims.get("active").and_then(Value::as_bool) != Some(true) {
        return Err(TokenError::Inactive);
    }
    if let Some(kind) = claims.get("token_type") {
        let kind = kind.as_str().unwrap_or_default();
        if !ACCESS_TOKEN_TYPES
            .iter()
            .any(|access| kind.eq_ignore_ascii_case(access))
        {
            return Err(TokenError::WrongType {
                expected: "access_token".to_owned(),
                found: kind.to_owned(),
            });
        }
    }
    if let Some(found) = claims.get("iss")
        && found.as_str() != Some(issuer)
    {
        return Err(TokenError::WrongIssuer);
    }
    let named = match claims.get("aud") {
        Some(Value::String(aud)) => audiences.contains(aud),
        Some(Value::Array(list)) => list
            .iter()
            .filter_map(Value::as_str)
            .any(|aud| audiences.iter().any(|mine| mine == aud)),
        _ => return Err(TokenError::MissingClaim("aud".to_owned())),
    };
    if !named {
        return Err(TokenError::WrongAudience);
    }
    let now = now_secs();
    if claims
        .get("exp")
        .and_then(Value::as_u64)
        .is_some_and(|exp| exp <= now)
    {
        return Err(TokenError::Expired);
    }
    if claims
        .get("nbf")
        .and_then(Value::as_u64)
        .is_some_and(|nbf| nbf > now)
    {
        return Err(TokenError::NotYetValid);
    }
    Ok(claims)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn map(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn inactive_foreign_and_unaddressed_tokens_are_refused() {
        let aud = ["https://api.example".to_owned()];
        assert_eq!(
            check(map(json!({"active": false})), "i", &aud),
            Err(TokenError::Inactive)
        );
        assert_eq!(
            check(
                map(json!({"active": true, "iss": "j", "aud": "https://api.example"})),
                "i",
                &aud
            ),
            Err(TokenError::WrongIssuer)
        );
        assert_eq!(
            check(map(json!({"active": true, "aud": ["x"]})), "i", &aud),
            Err(TokenError::WrongAudience)
        );
        assert!(
            check(
                map(json!({"active": true, "aud": ["x", "https://api.example"]})),
                "i",
                &aud
            )
            .is_ok()
        );
    }

    #[test]
    fn a_refresh_token_or_a_token_not_yet_valid_is_refused() {
        let aud = ["https://api.example".to_owned()];
        let refresh = json!({"active": true, "aud": aud[0], "token_type": "refresh_token"});
        assert!(matches!(
            check(map(refresh), "i", &aud),
            Err(TokenError::WrongType { .. })
        ));
        for kind in ["Bearer", "access_token", "DPoP"] {
            let access = json!({"active": true, "aud": aud[0], "token_type": kind});
            assert!(check(map(access), "i", &aud).is_ok(), "{kind}");
        }
        let later = now_secs() + 3600;
        let early = json!({"active": true, "aud": aud[0], "nbf": later});
        assert_eq!(check(map(early), "i", &aud), Err(TokenError::NotYetValid));
    }

    #[test]
    fn kept_answers_are_bounded_and_expire() {
        let now = Instant::now();
        let mut kept = Kept::default();
        for n in 0..INTROSPECTION_MAX_KEPT + 5 {
            kept.keep(
                digest(&n.to_string()),
                Err(TokenError::Inactive),
                now + Duration::from_secs(n as u64 + 1),
                now,
            );
        }
        assert_eq!(kept.0.len(), INTROSPECTION_MAX_KEPT);
        let last = digest(&(INTROSPECTION_MAX_KEPT + 4).to_string());
        assert!(kept.get(&last, now).is_some());
        assert!(
            kept.get(&last, now + Duration::from_secs(1_000_000))
                .is_none()
        );
    }
}
