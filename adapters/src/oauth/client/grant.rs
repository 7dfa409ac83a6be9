//! The grants a [`ClientCredentials`](crate::oauth::ClientCredentials) client asks for tokens with:
//! its own credentials (the client-credentials grant), or an assertion (the JWT-bearer
//! grant of RFC 7523 §2.1) — a workload's identity token (workload identity federation), or
//! an identity assertion for the authorization server that the enterprise's identity
//! provider issues in exchange for the user's ID token (enterprise-managed authorization:
//! RFC 8693 token exchange for an ID-JAG).

use crate::oauth::error::{FetchError, TokenRequestError};
use crate::oauth::fetch::Fetcher;
use serde_json::Value;
use std::fmt;
use std::sync::Arc;

/// `grant_type` of the JWT-bearer grant (RFC 7523 §2.1).
pub(crate) const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";

/// Where a token (a workload's JWT, a user's ID token) comes from: called for each token
/// request, so a token the platform rotates (a projected service-account token file) is read
/// afresh. An `Err` names why there is none.
pub type TokenSource = Arc<dyn Fn() -> Result<String, String> + Send + Sync>;

/// How a client asks for its tokens.
#[derive(Clone)]
pub(crate) enum Grant {
    /// `client_credentials`.
    ClientCredentials,
    /// The JWT-bearer grant with the workload's own JWT.
    Workload(TokenSource),
    /// The JWT-bearer grant with an ID-JAG from the identity provider.
    Enterprise(EnterpriseIdp),
}

impl Grant {
    /// The `grant_type`.
    pub(crate) fn grant_type(&self) -> &'static str {
        match self {
            Self::ClientCredentials => "client_credentials",
            Self::Workload(_) | Self::Enterprise(_) => JWT_BEARER,
        }
    }

    /// The `assertion` of a JWT-bearer grant for the authorization server `audience` and
    /// `resource`; `None` for the client-credentials grant.
    pub(crate) async fn assertion(
        &self,
        fetcher: &Fetcher,
        audience: &str,
        resource: Option<&str>,
    ) -> Result<Option<String>, TokenRequestError> {
        match self {
            Self::ClientCredentials => Ok(None),
            Self::Workload(source) => source().map(Some).map_err(|reason| {
                TokenRequestError::Assertion(format!("no workload token: {reason}"))
            }),
            Self::Enterprise(idp) => idp.exchange(fetcher, audience, resource).await.map(Some),
        }
    }
}

/// The enterprise's identity provider in enterprise-managed authorization: its token
/// endpoint, this application's client there, and the signed-in user's ID token, which the
/// provider exchanges (RFC 8693) for an identity assertion (ID-JAG) naming the MCP server's
/// authorization server and the resource.
///
/// ```
/// use opkit_adapters::oauth::EnterpriseIdp;
/// let idp = EnterpriseIdp::new("https://idp.acme.example/oauth2/token", "notes-desktop", || {
///     Ok("<the user's ID token>".to_owned())
/// });
/// ```
#[derive(Clone)]
pub struct EnterpriseIdp {
    token_endpoint: String,
    client_id: String,
    client_secret: Option<String>,
    id_token: TokenSource,
}

impl fmt::Debug for EnterpriseIdp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EnterpriseIdp")
            .field("token_endpoint", &self.token_endpoint)
            .field("client_id", &self.client_id)
            .finish_non_exhaustive()
    }
}

impl EnterpriseIdp {
    /// The provider's token endpoint, the application's `client_id` there, and where the
    /// user's ID token comes from.
    pub fn new(
        token_endpoint: impl Into<String>,
        client_id: impl Into<String>,
        id_token: impl Fn() -> Result<String, String> + Send + Sync + 'static,
    ) -> Self {
        Self {
            token_endpoint: token_endpoint.into(),
            client_id: client_id.into(),
            client_secret: None,
            id_token: Arc::new(id_token),
        }
    }

    /// The application's secret at the provider (HTTP Basic), for a confidential client.
    #[must_use]
    pub fn client_secret(mut self, secret: impl Into<String>) -> Self {
        self.client_secret = Some(secret.into());
        self
    }

    /// The ID-JAG for the authorization server `audience` and `resource`.
    async fn exchange(
        &self,
        fetcher: &Fetcher,
        audience: &str,
        resource: Option<&str>,
    ) -> Result<String, TokenRequestError> {
        let id_token = (self.id_token)()
            .map_err(|reason| TokenRequestError::Assertion(format!("no ID token: {reason}")))?;
        let mut form = vec![
            (
                "grant_type",
                "urn:ietf:params:oauth:grant-type:token-exchange",
            ),
            (
                "requested_token_type",
                "urn:ietf:params:oauth:token-type:id-jag",
            ),
            ("subject_token", id_token.as_str()),
            (
                "subject_token_type",
                "urn:ietf:params:oauth:token-type:id_token",
            ),
            ("audience", audience),
        ];
        if let Some(resource) = resource {
            form.push(("resource", resource));
        }
        let basic = match &self.client_secret {
            Some(secret) => Some((self.client_id.as_str(), secret.as_str())),
            None => {
                form.push(("client_id", self.client_id.as_str()));
                None
            }
        };
        let (status, answer) = fetcher
            .post_form(&self.token_endpoint, &form, basic)
            .await?;
        if !(200..300).contains(&status) {
            return Err(refusal(&answer).unwrap_or_else(|| {
                FetchError::Status {
                    url: self.token_endpoint.clone(),
                    status,
                }
                .into()
            }));
        }
        answer
            .get("access_token")
            .and_then(Value::as_str)
            .filter(|token| !token.is_empty())
            .map(str::to_owned)
            .ok_or_else(|| {
                TokenRequestError::Assertion(
                    "the identity provider's token exchange answered without an ID-JAG".to_owned(),
                )
            })
    }
}

/// The `error` answer of a token endpoint (RFC 6749 §5.2), if it is one.
pub(crate) fn refusal(answer: &Value) -> Option<TokenRequestError> {
    let error = answer.get("error").and_then(Value::as_str)?;
    Some(TokenRequestError::Refused {
        error: error.to_owned(),
        description: answer
            .get("error_description")
            .and_then(Value::as_str)
            .map(str::to_owned),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oauth::FetchLimits;
    use serde_json::json;

    #[tokio::test]
    async fn a_missing_workload_token_is_named_and_no_request_is_made() {
        let fetcher = Fetcher::new(FetchLimits::default()).unwrap();
        let grant = Grant::Workload(Arc::new(|| Err("the token file is gone".to_owned())));
        assert_eq!(grant.grant_type(), JWT_BEARER);
        let error = grant
            .assertion(&fetcher, "https://as.example", None)
            .await
            .unwrap_err();
        assert!(
            error.to_string().contains("the token file is gone"),
            "{error}"
        );
        let plain = Grant::ClientCredentials.assertion(&fetcher, "https://as.example", None);
        assert_eq!(plain.await.unwrap(), None);
    }

    #[test]
    fn token_endpoint_errors_are_refusals() {
        let refused = refusal(&json!({"error": "invalid_grant", "error_description": "expired"}));
        assert!(
            matches!(refused, Some(TokenRequestError::Refused { ref error, .. }) if error == "invalid_grant"),
            "{refused:?}"
        );
        assert!(refusal(&json!({"access_token": "x"})).is_none());
    }
}
