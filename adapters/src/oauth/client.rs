//! The client side: [`ClientCredentials`] gets access tokens from an authorization server with
//! the client-credentials grant (RFC 6749 §4.4), for a resource (RFC 8707), and keeps one
//! until shortly before it expires.

use super::discovery::{Discovery, discover};
use super::error::{FetchError, OAuthConfigError};
use super::fetch::{FetchLimits, Fetcher, parse_url};
use serde_json::Value;
use std::fmt;
use std::time::{Duration, Instant};

/// A token is fetched again when it has less than this left: 30 s.
pub const DEFAULT_REFRESH_MARGIN: Duration = Duration::from_secs(30);

/// Why no access token could be had.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TokenRequestError {
    /// The authorization server (discovery or token endpoint) could not be reached or
    /// answered badly.
    #[error(transparent)]
    Fetch(#[from] FetchError),
    /// The token endpoint refused (`error`, `error_description` of RFC 6749 §5.2).
    #[error("the token endpoint refused: {error}{}", description.as_deref().map(|text| format!(" ({text})")).unwrap_or_default())]
    Refused {
        /// The OAuth error code (`invalid_client`, `invalid_scope`, ...).
        error: String,
        /// The server's description.
        description: Option<String>,
    },
    /// The answer has no `access_token`.
    #[error("the token endpoint answered without an access token")]
    NoToken,
    /// The credentials name no issuer and the resource's Protected Resource Metadata names no
    /// authorization server (or there is none).
    #[error("no authorization server is known for the resource `{resource}`")]
    NoAuthorizationServer {
        /// The resource.
        resource: String,
    },
}

/// Where a resource's Protected Resource Metadata may be (RFC 9728 §3.1), in order.
fn protected_resource_urls(resource: &str) -> Vec<String> {
    let Ok(url) = url::Url::parse(resource) else {
        return Vec::new();
    };
    let origin = url.origin().ascii_serialization();
    let path = url.path().trim_end_matches('/');
    let bare = format!("{origin}/.well-known/oauth-protected-resource");
    if path.is_empty() {
        vec![bare]
    } else {
        vec![format!("{bare}{path}"), bare]
    }
}

/// Access tokens of one client from one authorization server: the client-credentials grant,
/// with client authentication by HTTP Basic, the `scope` and the `resource` (the server the
/// token is for) given here. The token endpoint is the issuer's (found by discovery) unless
/// set. A token is kept and reused until [`DEFAULT_REFRESH_MARGIN`] before it expires, then
/// fetched again; [`invalidate`](Self::invalidate) drops it (after a `401`, say).
///
/// ```
/// use opkit_adapters::oauth::ClientCredentials;
/// let credentials = ClientCredentials::new("https://id.example", "notes-bot", "s3cret")
///     .unwrap()
///     .scope("notes:read")
///     .resource("https://notes.example/mcp");
/// ```
pub struct ClientCredentials {
    /// The authorization server; `None`: found through the resource's Protected Resource
    /// Metadata.
    issuer: Option<String>,
    client_id: String,
    client_secret: String,
    scope: Option<String>,
    resource: Option<String>,
    token_endpoint: Option<String>,
    discovery: Discovery,
    fetcher: Fetcher,
    margin: Duration,
    cached: tokio::sync::Mutex<Cached>,
}

#[derive(Default)]
struct Cached {
    issuer: Option<String>,
    endpoint: Option<String>,
    token: Option<(String, Option<Instant>)>,
}

impl fmt::Debug for ClientCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientCredentials")
            .field("issuer", &self.issuer)
            .field("client_id", &self.client_id)
            .field("scope", &self.scope)
            .field("resource", &self.resource)
            .finish_non_exhaustive()
    }
}

impl ClientCredentials {
    /// The client `client_id` with `client_secret` at the authorization server `issuer`.
    pub fn new(
        issuer: impl Into<String>,
        client_id: impl Into<String>,
        client_secret: impl Into<String>,
    ) -> Result<Self, OAuthConfigError> {
        let issuer = issuer.into();
        parse_url("issuer", &issuer)?;
        Self::with_issuer(Some(issuer), client_id.into(), client_secret.into())
    }

    /// The client `client_id` with `client_secret` at whichever authorization server the
    /// resource names: its Protected Resource Metadata (RFC 9728, at
    /// `/.well-known/oauth-protected-resource<path>` of the resource's host, else at the bare
    /// well-known path) is read first and its first `authorization_servers` entry used — what
    /// an MCP client does with a server it knows nothing about.
    pub fn discovered(
        client_id: impl Into<String>,
        client_secret: impl Into<String>,
    ) -> Result<Self, OAuthConfigError> {
        Self::with_issuer(None, client_id.into(), client_secret.into())
    }

    fn with_issuer(
        issuer: Option<String>,
        client_id: String,
        client_secret: String,
    ) -> Result<Self, OAuthConfigError> {
        Ok(Self {
            issuer,
            client_id,
            client_secret,
            scope: None,
            resource: None,
            token_endpoint: None,
            discovery: Discovery::Auto,
            fetcher: Fetcher::new(FetchLimits::default())?,
            margin: DEFAULT_REFRESH_MARGIN,
            cached: tokio::sync::Mutex::default(),
        })
    }

    /// The scopes asked for (space-separated); none by default (the server's default).
    #[must_use]
    pub fn scope(mut self, scope: impl Into<String>) -> Self {
        self.scope = Some(scope.into());
        self
    }

    /// The resource the tokens are for (RFC 8707 `resource`, the audience); an MCP import
    /// sets the server's URL when this is not set.
    #[must_use]
    pub fn resource(mut self, resource: impl Into<String>) -> Self {
        self.resource = Some(resource.into());
        self
    }

    /// Whether a resource is set.
    pub fn has_resource(&self) -> bool {
        self.resource.is_some()
    }

    /// The token endpoint, instead of the one discovery finds.
    #[must_use]
    pub fn token_endpoint(mut self, url: impl Into<String>) -> Self {
        self.token_endpoint = Some(url.into());
        self
    }

    /// Where the issuer's metadata is looked for (default [`Discovery::Auto`]).
    #[must_use]
    pub fn discovery(mut self, discovery: Discovery) -> Self {
        self.discovery = discovery;
        self
    }

    /// How long before its expiry a token is fetched again (default
    /// [`DEFAULT_REFRESH_MARGIN`]).
    #[must_use]
    pub fn refresh_margin(mut self, margin: Duration) -> Self {
        self.margin = margin;
        self
    }

    /// The bound on each request to the authorization server.
    pub fn fetch_limits(mut self, limits: FetchLimits) -> Result<Self, OAuthConfigError> {
        self.fetcher = Fetcher::new(limits)?;
        Ok(self)
    }

    /// A valid access token: the kept one, or a new one.
    pub async fn token(&self) -> Result<String, TokenRequestError> {
        self.token_for(None).await
    }

    /// [`token`](Self::token), for `fallback` when no [`resource`](Self::resource) is set.
    pub(crate) async fn token_for(
        &self,
        fallback: Option<&str>,
    ) -> Result<String, TokenRequestError> {
        let mut cached = self.cached.lock().await;
        if let Some((token, expires)) = &cached.token
            && expires.is_none_or(|at| Instant::now() + self.margin < at)
        {
            return Ok(token.clone());
        }
        let resource = self.resource.as_deref().or(fallback);
        let endpoint = match (&cached.endpoint, &self.token_endpoint) {
            (Some(endpoint), _) | (None, Some(endpoint)) => endpoint.clone(),
            (None, None) => {
                let issuer = match (&self.issuer, &cached.issuer) {
                    (Some(issuer), _) | (None, Some(issuer)) => issuer.clone(),
                    (None, None) => {
                        let issuer = self.issuer_of(resource).await?;
                        cached.issuer = Some(issuer.clone());
                        issuer
                    }
                };
                let metadata = discover(&self.fetcher, &issuer, self.discovery).await?;
                metadata.token_endpoint.ok_or(FetchError::MissingEndpoint {
                    issuer,
                    field: "token_endpoint",
                })?
            }
        };
        cached.endpoint = Some(endpoint.clone());
        let mut form = vec![("grant_type", "client_credentials")];
        if let Some(scope) = &self.scope {
            form.push(("scope", scope));
        }
        if let Some(resource) = resource {
            form.push(("resource", resource));
        }
        let asked = Instant::now();
        let (status, answer) = self
            .fetcher
            .post_form(
                &endpoint,
                &form,
                Some((&self.client_id, &self.client_secret)),
            )
            .await?;
        if !(200..300).contains(&status) {
            return Err(match answer.get("error").and_then(Value::as_str) {
                Some(error) => TokenRequestError::Refused {
                    error: error.to_owned(),
                    description: answer
                        .get("error_description")
                        .and_then(Value::as_str)
                        .map(str::to_owned),
                },
                None => FetchError::Status {
                    url: endpoint,
                    status,
                }
                .into(),
            });
        }
        let token = answer
            .get("access_token")
            .and_then(Value::as_str)
            .filter(|token| !token.is_empty())
            .ok_or(TokenRequestError::NoToken)?
            .to_owned();
        let expires = answer
            .get("expires_in")
            .and_then(Value::as_u64)
            .map(|seconds| asked + Duration::from_secs(seconds));
        cached.token = Some((token.clone(), expires));
        Ok(token)
    }

    /// The first authorization server of `resource`'s Protected Resource Metadata.
    async fn issuer_of(&self, resource: Option<&str>) -> Result<String, TokenRequestError> {
        let resource = resource.ok_or(TokenRequestError::NoAuthorizationServer {
            resource: String::new(),
        })?;
        for url in protected_resource_urls(resource) {
            let Some(document) = self.fetcher.get_json(&url).await? else {
                continue;
            };
            let named = document.get("resource").and_then(Value::as_str);
            if named.map(|named| named.trim_end_matches('/'))
                != Some(resource.trim_end_matches('/'))
            {
                return Err(FetchError::InvalidDocument {
                    url,
                    reason: format!(
                        "it describes the resource `{}`, not `{resource}` (RFC 9728 §3.3)",
                        named.unwrap_or_default()
                    ),
                }
                .into());
            }
            return document
                .get("authorization_servers")
                .and_then(Value::as_array)
                .and_then(|servers| servers.first())
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or_else(|| TokenRequestError::NoAuthorizationServer {
                    resource: resource.to_owned(),
                });
        }
        Err(TokenRequestError::NoAuthorizationServer {
            resource: resource.to_owned(),
        })
    }

    /// Drops the kept token: the next [`token`](Self::token) fetches a new one.
    pub async fn invalidate(&self) {
        self.cached.lock().await.token = None;
    }
}
