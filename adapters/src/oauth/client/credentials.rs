//! The client side: [`ClientCredentials`] gets access tokens from an authorization server with
//! the client-credentials grant (RFC 6749 §4.4), for a resource (RFC 8707), and keeps one
//! until shortly before it expires.

use super::grant::{Grant, refusal};
use crate::oauth::discovery::{Discovery, discover};
use crate::oauth::error::{FetchError, OAuthConfigError, TokenRequestError};
use crate::oauth::fetch::{FetchLimits, Fetcher, parse_url};
use serde_json::Value;
use std::fmt;
use std::time::{Duration, Instant};

/// A token is fetched again when it has less than this left: 30 s.
pub const DEFAULT_REFRESH_MARGIN: Duration = Duration::from_secs(30);

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

/// Access tokens of one client acting as itself, from one authorization server: the
/// client-credentials grant (client authentication by HTTP Basic or `private_key_jwt`), or
/// the JWT-bearer grant with a [workload's token](Self::workload_identity) or an
/// [enterprise identity assertion](Self::enterprise_managed); the `scope` and the `resource`
/// (the server the token is for) given here. The token endpoint is the issuer's (found by discovery) unless
/// set. A token is kept and reused until [`DEFAULT_REFRESH_MARGIN`] before it expires, then
/// fetched again; [`invalidate`](Self::invalidate) drops it (after a `401`, say).
///
/// **Which authorization server gets the credentials.** A client secret, a client assertion
/// or a workload's platform token is sent only to an authorization server the application
/// chose: the `issuer` given to the constructor, or, when it is found through the resource's
/// Protected Resource Metadata, one of [`trusted_issuers`](Self::trusted_issuers). A resource
/// (an MCP server being imported, say) that names any other server gets
/// [`TokenRequestError::UntrustedIssuer`] and nothing is sent to it, unless the application
/// opts in to any issuer with [`trust_any_issuer`](Self::trust_any_issuer). The issuer, the
/// metadata and the token endpoint are reached over `https` only (plain `http` only on a
/// loopback address), and the token request follows no redirect.
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
    authentication: ClientAuthentication,
    grant: Grant,
    scope: Option<String>,
    resource: Option<String>,
    token_endpoint: Option<String>,
    discovery: Discovery,
    /// The issuers a discovered one may be (the `issuer` given counts as chosen already).
    trusted_issuers: Vec<String>,
    /// The application opted in to whatever issuer the resource names.
    any_issuer: bool,
    fetcher: Fetcher,
    margin: Duration,
    cached: tokio::sync::Mutex<Cached>,
}

/// How the client proves who it is at the token endpoint.
enum ClientAuthentication {
    /// None: a public client, which sends its `client_id` in the form.
    Public,
    /// `client_secret_basic`: its secret, in an `Authorization: Basic` header.
    Secret(String),
    /// `private_key_jwt` (RFC 7523): a short-lived JWT signed with its private key, whose
    /// public key the authorization server holds.
    PrivateKeyJwt {
        key: jsonwebtoken::EncodingKey,
        algorithm: jsonwebtoken::Algorithm,
    },
}

/// How long a client assertion is valid.
const ASSERTION_LIFETIME_SECS: u64 = 60;

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
        secure_url("issuer", &issuer)?;
        Self::with_issuer(
            Some(issuer),
            client_id.into(),
            ClientAuthentication::Secret(client_secret.into()),
        )
    }

    /// The client `client_id` with `client_secret` at the authorization server the resource
    /// names: its Protected Resource Metadata (RFC 9728, at
    /// `/.well-known/oauth-protected-resource<path>` of the resource's host, else at the bare
    /// well-known path) is read first and its first `authorization_servers` entry used — if
    /// it is one of the [`trusted_issuers`](Self::trusted_issuers) (the secret goes to no
    /// other server unless [`trust_any_issuer`](Self::trust_any_issuer) says so).
    ///
    /// ```
    /// use opkit_adapters::oauth::ClientCredentials;
    /// let credentials = ClientCredentials::discovered("notes-bot", "s3cret")
    ///     .unwrap()
    ///     .trusted_issuers(["https://id.example", "https://login.example/tenant"]);
    /// ```
    pub fn discovered(
        client_id: impl Into<String>,
        client_secret: impl Into<String>,
    ) -> Result<Self, OAuthConfigError> {
        Self::with_issuer(
            None,
            client_id.into(),
            ClientAuthentication::Secret(client_secret.into()),
        )
    }

    /// The client `client_id` authenticating with `private_key_jwt` (RFC 7523): each token
    /// request carries a JWT it signs with `private_key_pem` (PKCS#8 or the key's own PEM
    /// form) using `algorithm` (`ES256`, `ES384`, `RS256`, `PS256`, `EdDSA`, ...). The
    /// authorization server is `issuer`, or (`None`) found through the resource's metadata
    /// as with [`discovered`](Self::discovered). The assertion's `iss` and `sub` are
    /// `client_id`, its `aud` the issuer (the token endpoint when only that is known), and it
    /// lives a minute. A discovered issuer must be one of the
    /// [`trusted_issuers`](Self::trusted_issuers).
    pub fn private_key_jwt(
        issuer: Option<String>,
        client_id: impl Into<String>,
        private_key_pem: &[u8],
        algorithm: &str,
    ) -> Result<Self, OAuthConfigError> {
        use jsonwebtoken::{Algorithm, EncodingKey};
        let invalid = |reason: String| OAuthConfigError::PrivateKey {
            algorithm: algorithm.to_owned(),
            reason,
        };
        let parsed: Algorithm = algorithm
            .parse()
            .map_err(|_| invalid("not a JWS algorithm name".to_owned()))?;
        let key = match parsed {
            Algorithm::ES256 | Algorithm::ES384 => EncodingKey::from_ec_pem(private_key_pem),
            Algorithm::RS256
            | Algorithm::RS384
            | Algorithm::RS512
            | Algorithm::PS256
            | Algorithm::PS384
            | Algorithm::PS512 => EncodingKey::from_rsa_pem(private_key_pem),
            Algorithm::EdDSA => EncodingKey::from_ed_pem(private_key_pem),
            _ => return Err(invalid("an HMAC algorithm is not a private key".to_owned())),
        }
        .map_err(|error| invalid(error.to_string()))?;
        if let Some(issuer) = &issuer {
            secure_url("issuer", issuer)?;
        }
        Self::with_issuer(
            issuer,
            client_id.into(),
            ClientAuthentication::PrivateKeyJwt {
                key,
                algorithm: parsed,
            },
        )
    }

    fn with_issuer(
        issuer: Option<String>,
        client_id: String,
        authentication: ClientAuthentication,
    ) -> Result<Self, OAuthConfigError> {
        Ok(Self {
            issuer,
            client_id,
            authentication,
            grant: Grant::ClientCredentials,
            scope: None,
            resource: None,
            token_endpoint: None,
            discovery: Discovery::Auto,
            trusted_issuers: Vec::new(),
            any_issuer: false,
            fetcher: Fetcher::new(FetchLimits::default())?,
            margin: DEFAULT_REFRESH_MARGIN,
            cached: tokio::sync::Mutex::default(),
        })
    }

    /// Workload identity federation (RFC 7523 §2.1, the JWT-bearer grant): the workload's own
    /// JWT — issued by its platform (a Kubernetes service-account token, a cloud's identity
    /// token) with the authorization server as its audience — is exchanged for an access
    /// token. `workload_token` is called for each token request (read a rotated token file
    /// again there). The client is public (its `client_id` goes in the form); the
    /// authorization server is `issuer`, or found through the resource's metadata and one of
    /// the [`trusted_issuers`](Self::trusted_issuers): the platform token is a credential
    /// the authorization server could replay, so it goes to no server nobody chose.
    ///
    /// ```
    /// use opkit_adapters::oauth::ClientCredentials;
    /// let credentials = ClientCredentials::workload_identity(
    ///     Some("https://id.example".to_owned()),
    ///     "notes-indexer",
    ///     || {
    ///         std::fs::read_to_string("/var/run/secrets/tokens/notes")
    ///             .map_err(|error| error.to_string())
    ///     },
    /// )
    /// .unwrap();
    /// ```
    pub fn workload_identity(
        issuer: Option<String>,
        client_id: impl Into<String>,
        workload_token: impl Fn() -> Result<String, String> + Send + Sync + 'static,
    ) -> Result<Self, OAuthConfigError> {
        if let Some(issuer) = &issuer {
            secure_url("issuer", issuer)?;
        }
        let mut credentials =
            Self::with_issuer(issuer, client_id.into(), ClientAuthentication::Public)?;
        credentials.grant = Grant::Workload(std::sync::Arc::new(workload_token));
        Ok(credentials)
    }

    /// Enterprise-managed authorization (the ID-JAG flow): the signed-in user's ID token is
    /// exchanged at the enterprise's identity provider (`idp`, RFC 8693) for an identity
    /// assertion naming this resource's authorization server, which grants the access token
    /// for it (the JWT-bearer grant), the client authenticating there with `client_secret`
    /// (HTTP Basic). No browser is involved: the enterprise's policy decides. The
    /// authorization server is `issuer`, or found through the resource's metadata and one of
    /// the [`trusted_issuers`](Self::trusted_issuers).
    pub fn enterprise_managed(
        issuer: Option<String>,
        client_id: impl Into<String>,
        client_secret: impl Into<String>,
        idp: super::grant::EnterpriseIdp,
    ) -> Result<Self, OAuthConfigError> {
        if let Some(issuer) = &issuer {
            secure_url("issuer", issuer)?;
        }
        let mut credentials = Self::with_issuer(
            issuer,
            client_id.into(),
            ClientAuthentication::Secret(client_secret.into()),
        )?;
        credentials.grant = Grant::Enterprise(idp);
        Ok(credentials)
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

    /// The authorization servers a discovered issuer may be (compared without a trailing
    /// `/`): credentials go to the one the resource names only when it is listed here. Adds
    /// to the list; an `issuer` given to the constructor needs no listing.
    #[must_use]
    pub fn trusted_issuers<I, S>(mut self, issuers: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.trusted_issuers
            .extend(issuers.into_iter().map(Into::into));
        self
    }

    /// Sends the credentials to whichever authorization server the resource names, listed
    /// or not. Whoever controls the resource's metadata then receives the client secret, the
    /// client assertion or the workload token and can replay it at the real server: only for
    /// resources trusted as much as the credentials (a test harness, a conformance suite).
    /// The issuer is still reached over `https` (or loopback) only.
    #[must_use]
    pub fn trust_any_issuer(mut self) -> Self {
        self.any_issuer = true;
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
                        let (issuer, resource) = self.issuer_of(resource).await?;
                        self.check_trusted(&issuer, &resource)?;
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
        secure(&endpoint, "token endpoint")?;
        cached.endpoint = Some(endpoint.clone());
        let mut form = vec![("grant_type", self.grant.grant_type())];
        if let Some(scope) = &self.scope {
            form.push(("scope", scope));
        }
        if let Some(resource) = resource {
            form.push(("resource", resource));
        }
        let asked = Instant::now();
        let audience = self
            .issuer
            .clone()
            .or_else(|| cached.issuer.clone())
            .unwrap_or_else(|| endpoint.clone());
        let granted = self
            .grant
            .assertion(&self.fetcher, &audience, resource)
            .await?;
        if let Some(granted) = &granted {
            form.push(("assertion", granted));
        }
        let assertion;
        let basic = match &self.authentication {
            ClientAuthentication::Public => {
                form.push(("client_id", &self.client_id));
                None
            }
            ClientAuthentication::Secret(secret) => {
                Some((self.client_id.as_str(), secret.as_str()))
            }
            ClientAuthentication::PrivateKeyJwt { key, algorithm } => {
                assertion = self.assertion(key, *algorithm, &audience)?;
                form.push(("client_id", &self.client_id));
                form.push((
                    "client_assertion_type",
                    "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
                ));
                form.push(("client_assertion", &assertion));
                None
            }
        };
        let (status, answer) = self.fetcher.post_form(&endpoint, &form, basic).await?;
        if !(200..300).contains(&status) {
            return Err(refusal(&answer).unwrap_or_else(|| {
                FetchError::Status {
                    url: endpoint,
                    status,
                }
                .into()
            }));
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

    /// A `private_key_jwt` client assertion for `audience` (RFC 7523 section 3).
    fn assertion(
        &self,
        key: &jsonwebtoken::EncodingKey,
        algorithm: jsonwebtoken::Algorithm,
        audience: &str,
    ) -> Result<String, TokenRequestError> {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| since.as_secs());
        let claims = serde_json::json!({
            "iss": self.client_id,
            "sub": self.client_id,
            "aud": audience,
            "iat": now,
            "exp": now + ASSERTION_LIFETIME_SECS,
            "jti": format!("{:032x}", rand_jti().ok_or_else(no_randomness)?),
        });
        jsonwebtoken::encode(&jsonwebtoken::Header::new(algorithm), &claims, key)
            .map_err(|error| TokenRequestError::Assertion(error.to_string()))
    }

    /// Whether the credentials may go to `issuer`, which `resource` named.
    fn check_trusted(&self, issuer: &str, resource: &str) -> Result<(), TokenRequestError> {
        secure(issuer, "authorization server")?;
        let bare = issuer.trim_end_matches('/');
        let listed = self
            .trusted_issuers
            .iter()
            .any(|trusted| trusted.trim_end_matches('/') == bare);
        if listed || self.any_issuer {
            Ok(())
        } else {
            Err(TokenRequestError::UntrustedIssuer {
                resource: resource.to_owned(),
                issuer: issuer.to_owned(),
            })
        }
    }

    /// The first authorization server of `resource`'s Protected Resource Metadata, and the
    /// resource.
    async fn issuer_of(
        &self,
        resource: Option<&str>,
    ) -> Result<(String, String), TokenRequestError> {
        let resource = resource.ok_or(TokenRequestError::NoAuthorizationServer {
            resource: String::new(),
        })?;
        secure(resource, "resource")?;
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
                .map(|issuer| (issuer.to_owned(), resource.to_owned()))
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

/// 128 bits from the operating system's CSPRNG (through aws-lc-rs, the crypto already
/// linked): unguessable and unique across processes. `None` only when the operating system
/// refuses randomness.
pub(crate) fn rand_jti() -> Option<u128> {
    let mut bytes = [0u8; 16];
    aws_lc_rs::rand::fill(&mut bytes).ok()?;
    Some(u128::from_be_bytes(bytes))
}

fn no_randomness() -> TokenRequestError {
    TokenRequestError::Assertion("the operating system gave no randomness for its `jti`".to_owned())
}

/// `url` when it is `https`, or `http` to a loopback address; the error naming `what` it was
/// otherwise. Credentials never travel in the clear past this machine.
fn secure(url: &str, what: &'static str) -> Result<(), TokenRequestError> {
    if crate::oauth::fetch::is_secure_url(url) {
        Ok(())
    } else {
        Err(TokenRequestError::InsecureUrl {
            what,
            url: url.to_owned(),
        })
    }
}

/// [`secure`] for a URL given to a constructor.
fn secure_url(what: &'static str, value: &str) -> Result<(), OAuthConfigError> {
    parse_url(what, value)?;
    if crate::oauth::fetch::is_secure_url(value) {
        Ok(())
    } else {
        Err(OAuthConfigError::InvalidUrl {
            what,
            value: value.to_owned(),
            reason: "credentials go only over https (plain http only to a loopback address)"
                .to_owned(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_private_key_jwt_client_needs_a_private_key_for_its_algorithm() {
        let hmac = ClientCredentials::private_key_jwt(None, "bot", b"secret", "HS256");
        assert!(matches!(hmac, Err(OAuthConfigError::PrivateKey { .. })));
        let unknown = ClientCredentials::private_key_jwt(None, "bot", b"", "XY999");
        assert!(matches!(unknown, Err(OAuthConfigError::PrivateKey { .. })));
        let not_a_key = ClientCredentials::private_key_jwt(None, "bot", b"not pem", "ES256");
        let error = not_a_key.unwrap_err().to_string();
        assert!(error.contains("ES256"), "{error}");
    }

    #[test]
    fn assertion_ids_differ() {
        assert_ne!(rand_jti().unwrap(), rand_jti().unwrap());
    }
}
