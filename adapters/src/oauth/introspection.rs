//! Opaque access tokens, checked by asking the issuer (token introspection, RFC 7662).

use super::discovery::{Discovery, discover};
use super::error::{FetchError, TokenError};
use super::fetch::Fetcher;
use serde_json::{Map, Value};

/// The introspection endpoint of one issuer and the credentials to call it with.
pub(crate) struct Introspection {
    fetcher: Fetcher,
    issuer: String,
    discovery: Discovery,
    client_id: String,
    client_secret: String,
    endpoint: tokio::sync::OnceCell<String>,
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
        }
    }

    /// The claims of an active `token` for one of `audiences`, or why it is refused.
    pub(crate) async fn introspect(
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

/// An introspection answer checked: active, from `issuer` (when it says), for one of
/// `audiences`, not expired.
fn check(
    claims: Map<String, Value>,
    issuer: &str,
    audiences: &[String],
) -> Result<Map<String, Value>, TokenError> {
    if claims.get("active").and_then(Value::as_bool) != Some(true) {
        return Err(TokenError::Inactive);
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
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs());
    if claims
        .get("exp")
        .and_then(Value::as_u64)
        .is_some_and(|exp| exp <= now)
    {
        return Err(TokenError::Expired);
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
}
