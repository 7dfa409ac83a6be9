//! [`OAuthAuthenticator`]: the [`Authenticator`] of an OAuth 2.1 resource server. It checks
//! JWT access tokens against the issuer's published keys and maps their claims to the
//! caller's [`Identity`].

use super::claims::ClaimsMapping;
use super::keys::{KeyCache, KeySource, RefreshPolicy};
use super::resource::ProtectedResource;
use crate::http_server::Authenticator;
use crate::http_server::identity::Credentials;
use crate::oauth::discovery::Discovery;
use crate::oauth::error::{OAuthConfigError, TokenError};
use crate::oauth::fetch::parse_url;
use crate::oauth::fetch::{FetchLimits, Fetcher};
use base64::Engine;
use futures::FutureExt;
use futures::future::BoxFuture;
use http::HeaderValue;
use http::request::Parts;
use jsonwebtoken::{Algorithm, Validation};
use opkit::{CallError, Identity};
use serde_json::{Map, Value, json};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

/// The algorithms accepted unless [`OAuthAuthenticatorBuilder::algorithms`] says otherwise:
/// every asymmetric one (RSA, RSA-PSS, ECDSA, EdDSA). `none` and HMAC are never accepted.
pub const DEFAULT_ALGORITHMS: [Algorithm; 9] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

/// The clock skew allowed on `exp` and `nbf` unless configured: 30 s.
pub const DEFAULT_LEEWAY: Duration = Duration::from_secs(30);

/// How long fetched keys are used before they are fetched again, unless configured: 10 min.
pub const DEFAULT_KEYS_MAX_AGE: Duration = Duration::from_secs(600);

/// The least time between two fetches of the key set (an unknown `kid` waits for the next
/// window), unless configured: 30 s.
pub const DEFAULT_MIN_REFRESH_INTERVAL: Duration = Duration::from_secs(30);

/// Bearer access tokens from an OAuth 2.1 / OpenID Connect authorization server, checked as
/// a resource server does: a JWT's signature against the issuer's key set (found by
/// discovery, cached, refreshed when a token names a key the cache lacks), its `iss`, its
/// `aud` (this resource's URI), `exp` and `nbf` with a small leeway, and its algorithm
/// (asymmetric only). The claims become the [`Identity`] — `sub` the id, `scope`/`scp` the
/// scopes, a configurable claim the roles — so `access(scopes = [..], roles = [..])` rules
/// work unchanged.
///
/// Given to an [`HttpServer`](crate::http_server::HttpServer) or an
/// [`McpServer`](crate::mcp_server::McpServer), it also makes the server publish its
/// Protected Resource Metadata (RFC 9728), answer `401` with
/// `WWW-Authenticate: Bearer resource_metadata="…"` (and `error="invalid_token"` for a refused
/// token), answer `403` with `error="insufficient_scope", scope="…"` when a token lacks a
/// scope an operation needs, and document an `openIdConnect` (or `oauth2`) security scheme
/// with each operation's scopes.
///
/// See the [module docs](crate::oauth) for a whole setup.
#[derive(Clone)]
pub struct OAuthAuthenticator {
    inner: Arc<AuthenticatorState>,
}

struct AuthenticatorState {
    issuer: String,
    audiences: Vec<String>,
    algorithms: Vec<Algorithm>,
    leeway: Duration,
    token_type: Option<String>,
    mapping: ClaimsMapping,
    resource: ProtectedResource,
    keys: KeyCache,
    scheme: Scheme,
    introspection: Option<super::introspection::Introspection>,
}

/// How the OpenAPI document describes the authenticator.
#[derive(Debug, Clone)]
enum Scheme {
    OpenIdConnect(String),
    ClientCredentials(String),
}

impl std::fmt::Debug for OAuthAuthenticator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthAuthenticator")
            .field("issuer", &self.inner.issuer)
            .field("audiences", &self.inner.audiences)
            .field("algorithms", &self.inner.algorithms)
            .finish_non_exhaustive()
    }
}

impl OAuthAuthenticator {
    /// A builder for tokens issued by `issuer` (the authorization server's issuer URL,
    /// exactly as its tokens and metadata name it) for the resource `resource` (this server's
    /// URI, e.g. `https://api.example/mcp`: the audience tokens must name).
    pub fn builder(
        issuer: impl Into<String>,
        resource: impl Into<String>,
    ) -> OAuthAuthenticatorBuilder {
        OAuthAuthenticatorBuilder {
            issuer: issuer.into(),
            resource: resource.into(),
            audiences: Vec::new(),
            algorithms: DEFAULT_ALGORITHMS.to_vec(),
            leeway: DEFAULT_LEEWAY,
            token_type: None,
            mapping: ClaimsMapping::default(),
            jwks_uri: None,
            discovery: Discovery::Auto,
            limits: FetchLimits::default(),
            refresh: RefreshPolicy {
                max_age: DEFAULT_KEYS_MAX_AGE,
                min_interval: DEFAULT_MIN_REFRESH_INTERVAL,
            },
            scopes_supported: Vec::new(),
            resource_name: None,
            token_url: None,
            introspection: None,
        }
    }

    /// The caller that `token` stands for, or why it is refused.
    pub async fn verify(&self, token: &str) -> Result<Identity, TokenError> {
        let claims = self.verify_claims(token).await?;
        self.inner.mapping.identity(&claims)
    }

    /// The checked claims of `token`.
    pub async fn verify_claims(&self, token: &str) -> Result<Map<String, Value>, TokenError> {
        let inner = &self.inner;
        if !looks_like_jwt(token)
            && let Some(introspection) = &inner.introspection
        {
            return introspection
                .introspect(token, &inner.issuer, &inner.audiences)
                .await;
        }
        let header = RawHeader::parse(token)?;
        let alg = Algorithm::from_str(&header.alg)
            .ok()
            .filter(|alg| inner.algorithms.contains(alg))
            .ok_or_else(|| TokenError::AlgorithmNotAllowed(header.alg.clone()))?;
        if let Some(expected) = &inner.token_type {
            let found = header.typ.clone().unwrap_or_default();
            let bare = found.strip_prefix("application/").unwrap_or(&found);
            if !bare.eq_ignore_ascii_case(expected) {
                return Err(TokenError::WrongType {
                    expected: expected.clone(),
                    found,
                });
            }
        }
        let key = inner.keys.key(header.kid.as_deref(), alg).await?;
        let mut validation = Validation::new(alg);
        validation.leeway = inner.leeway.as_secs();
        validation.validate_nbf = true;
        validation.set_issuer(&[&inner.issuer]);
        validation.set_audience(&inner.audiences);
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        let data = jsonwebtoken::decode::<Map<String, Value>>(token, &key, &validation)
            .map_err(token_error)?;
        Ok(data.claims)
    }

    /// The Protected Resource Metadata this authenticator's servers publish.
    pub fn protected_resource(&self) -> &ProtectedResource {
        &self.inner.resource
    }
}

impl Authenticator for OAuthAuthenticator {
    fn authenticate(
        &self,
        request: &Parts,
    ) -> BoxFuture<'static, Result<Option<Identity>, CallError>> {
        let token = match Credentials::from_headers(&request.headers) {
            Credentials::Anonymous => return futures::future::ready(Ok(None)).boxed(),
            Credentials::Malformed => {
                return futures::future::ready(Err(CallError::unauthenticated(
                    "the Authorization header is not one bearer token",
                )))
                .boxed();
            }
            Credentials::Bearer(token) => token,
        };
        let this = self.clone();
        async move {
            match this.verify(&token).await {
                Ok(identity) => Ok(Some(identity)),
                Err(error) => {
                    tracing::debug!(%error, "oauth: refused a bearer token");
                    Err(error.into())
                }
            }
        }
        .boxed()
    }

    fn security_scheme(&self) -> Option<(String, Value)> {
        let description = "An OAuth 2.1 access token (JWT) from the authorization server, for this resource (`aud`), as `Authorization: Bearer <token>`.";
        Some(match &self.inner.scheme {
            Scheme::OpenIdConnect(url) => (
                "oidc".to_owned(),
                json!({"type": "openIdConnect", "openIdConnectUrl": url, "description": description}),
            ),
            Scheme::ClientCredentials(token_url) => {
                let scopes: Map<String, Value> = self
                    .inner
                    .resource
                    .document()
                    .get("scopes_supported")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .map(|scope| (scope.to_owned(), json!("")))
                    .collect();
                (
                    "oauth2".to_owned(),
                    json!({
                        "type": "oauth2",
                        "description": description,
                        "flows": {"clientCredentials": {"tokenUrl": token_url, "scopes": scopes}}
                    }),
                )
            }
        })
    }

    fn challenge(&self, refused: bool) -> Option<HeaderValue> {
        Some(self.inner.resource.unauthorized_challenge(refused))
    }

    fn insufficient_scope(&self, scopes: &[String]) -> Option<HeaderValue> {
        Some(self.inner.resource.insufficient_scope_challenge(scopes))
    }

    fn protected_resource_metadata(&self) -> Option<Value> {
        Some(self.inner.resource.document())
    }
}

/// A builder of [`OAuthAuthenticator`]s; [`OAuthAuthenticator::builder`] makes one.
#[derive(Debug, Clone)]
#[must_use]
pub struct OAuthAuthenticatorBuilder {
    issuer: String,
    resource: String,
    audiences: Vec<String>,
    algorithms: Vec<Algorithm>,
    leeway: Duration,
    token_type: Option<String>,
    mapping: ClaimsMapping,
    jwks_uri: Option<String>,
    discovery: Discovery,
    limits: FetchLimits,
    refresh: RefreshPolicy,
    scopes_supported: Vec<String>,
    resource_name: Option<String>,
    token_url: Option<String>,
    introspection: Option<(String, String)>,
}

impl OAuthAuthenticatorBuilder {
    /// Also accepts tokens whose `aud` names one of `audiences` (the resource's URI is always
    /// accepted): for a provider that puts an API identifier there (Auth0's "API audience").
    pub fn audiences<S: Into<String>>(mut self, audiences: impl IntoIterator<Item = S>) -> Self {
        self.audiences.extend(audiences.into_iter().map(Into::into));
        self
    }

    /// The accepted signing algorithms (default [`DEFAULT_ALGORITHMS`]). HMAC algorithms are
    /// refused when the authenticator is built.
    pub fn algorithms(mut self, algorithms: impl IntoIterator<Item = Algorithm>) -> Self {
        self.algorithms = algorithms.into_iter().collect();
        self
    }

    /// The clock skew allowed on `exp` and `nbf` (default [`DEFAULT_LEEWAY`]; whole seconds).
    pub fn leeway(mut self, leeway: Duration) -> Self {
        self.leeway = leeway;
        self
    }

    /// Requires the header's `typ` (`"at+jwt"` for RFC 9068 access tokens, which keeps ID
    /// tokens out); not checked by default, since several providers send `JWT`.
    ///
    /// **ID tokens.** Without it, the audience is what keeps an OpenID Connect ID token (whose
    /// `aud` is the client id of the application that signed the user in) from passing for an
    /// access token: never list a client id among the [`audiences`](Self::audiences) (a
    /// habit some providers' quick starts teach) unless `token_type("at+jwt")` is set and the
    /// provider issues RFC 9068 tokens.
    pub fn token_type(mut self, typ: impl Into<String>) -> Self {
        self.token_type = Some(typ.into());
        self
    }

    /// The claim holding the roles, a dotted path (`roles`, `realm_access.roles`); none by
    /// default.
    pub fn roles_claim(mut self, claim: impl Into<String>) -> Self {
        self.mapping.roles = Some(claim.into());
        self
    }

    /// The claim holding the caller's id (default `sub`).
    pub fn id_claim(mut self, claim: impl Into<String>) -> Self {
        self.mapping.id = claim.into();
        self
    }

    /// What the id of a client acting as itself (a token with `client_id` and no `sub`)
    /// starts with (default [`DEFAULT_CLIENT_PREFIX`](crate::oauth::DEFAULT_CLIENT_PREFIX),
    /// `client:`); `None` refuses such tokens (see [`ClaimsMapping::client_prefix`]).
    pub fn client_prefix(mut self, prefix: Option<String>) -> Self {
        self.mapping.client_prefix = prefix;
        self
    }

    /// The key set's URL, instead of the `jwks_uri` of the issuer's discovery document.
    pub fn jwks_uri(mut self, uri: impl Into<String>) -> Self {
        self.jwks_uri = Some(uri.into());
        self
    }

    /// Where the issuer's metadata is looked for (default [`Discovery::Auto`]).
    pub fn discovery(mut self, discovery: Discovery) -> Self {
        self.discovery = discovery;
        self
    }

    /// The bound on each fetch from the authorization server (time and size; default
    /// [`FetchLimits::default`]: 5 s, 256 KiB).
    pub fn fetch_limits(mut self, limits: FetchLimits) -> Self {
        self.limits = limits;
        self
    }

    /// How long fetched keys are used before they are fetched again (default
    /// [`DEFAULT_KEYS_MAX_AGE`]).
    pub fn keys_max_age(mut self, age: Duration) -> Self {
        self.refresh.max_age = age;
        self
    }

    /// The least time between two fetches of the key set (default
    /// [`DEFAULT_MIN_REFRESH_INTERVAL`]): a token naming an unknown key makes a fetch only
    /// once per interval, however many such tokens arrive.
    pub fn min_refresh_interval(mut self, interval: Duration) -> Self {
        self.refresh.min_interval = interval;
        self
    }

    /// The scopes the resource publishes in its metadata (`scopes_supported`) and documents.
    pub fn scopes_supported<S: Into<String>>(
        mut self,
        scopes: impl IntoIterator<Item = S>,
    ) -> Self {
        self.scopes_supported = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// The resource's name for people in its metadata (`resource_name`).
    pub fn resource_name(mut self, name: impl Into<String>) -> Self {
        self.resource_name = Some(name.into());
        self
    }

    /// Documents the security scheme as `oauth2` with a client-credentials flow at
    /// `token_url` (the default is `openIdConnect`, pointing at the issuer's discovery
    /// document).
    pub fn openapi_token_url(mut self, token_url: impl Into<String>) -> Self {
        self.token_url = Some(token_url.into());
        self
    }

    /// Accepts opaque (non-JWT) tokens too, by asking the issuer's introspection endpoint
    /// (RFC 7662, found by discovery) as the client `client_id` / `client_secret`. JWTs are
    /// still checked locally.
    pub fn introspection(
        mut self,
        client_id: impl Into<String>,
        client_secret: impl Into<String>,
    ) -> Self {
        self.introspection = Some((client_id.into(), client_secret.into()));
        self
    }

    /// The authenticator, or why the configuration cannot work (a URL that does not parse,
    /// an HMAC algorithm, no algorithm).
    pub fn build(self) -> Result<OAuthAuthenticator, OAuthConfigError> {
        parse_url("issuer", &self.issuer)?;
        if let Some(uri) = &self.jwks_uri {
            parse_url("jwks_uri", uri)?;
        }
        if let Some(alg) = self
            .algorithms
            .iter()
            .find(|alg| matches!(alg, Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512))
        {
            return Err(OAuthConfigError::SymmetricAlgorithm(format!("{alg:?}")));
        }
        if self.algorithms.is_empty() {
            return Err(OAuthConfigError::NoAlgorithms);
        }
        let mut resource = ProtectedResource::new(&self.resource, [self.issuer.clone()])?
            .scopes_supported(self.scopes_supported);
        if let Some(name) = self.resource_name {
            resource = resource.name(name);
        }
        let mut audiences = vec![self.resource.clone()];
        audiences.extend(self.audiences);
        let fetcher = Fetcher::new(self.limits)?;
        let source = match self.jwks_uri {
            Some(uri) => KeySource::Uri(uri),
            None => KeySource::Discover {
                issuer: self.issuer.clone(),
                discovery: self.discovery,
            },
        };
        let scheme = match self.token_url {
            Some(token_url) => Scheme::ClientCredentials(token_url),
            None => Scheme::OpenIdConnect(format!(
                "{}/.well-known/openid-configuration",
                self.issuer.trim_end_matches('/')
            )),
        };
        let introspection = self.introspection.map(|(id, secret)| {
            super::introspection::Introspection::new(
                fetcher.clone(),
                self.issuer.clone(),
                self.discovery,
                id,
                secret,
            )
        });
        Ok(OAuthAuthenticator {
            inner: Arc::new(AuthenticatorState {
                keys: KeyCache::new(source, fetcher, self.refresh),
                issuer: self.issuer,
                audiences,
                algorithms: self.algorithms,
                leeway: self.leeway,
                token_type: self.token_type,
                mapping: self.mapping,
                resource,
                scheme,
                introspection,
            }),
        })
    }
}

/// Three dot-separated parts (a JWS compact serialization).
fn looks_like_jwt(token: &str) -> bool {
    token.split('.').count() == 3
}

/// The JOSE header, read before anything is trusted, to name the algorithm in errors (a
/// token with `alg: none` is refused by name, not as "malformed").
struct RawHeader {
    alg: String,
    typ: Option<String>,
    kid: Option<String>,
}

impl RawHeader {
    fn parse(token: &str) -> Result<Self, TokenError> {
        let mut parts = token.split('.');
        let (Some(header), Some(_), Some(_), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(TokenError::Malformed(
                "not three dot-separated parts".to_owned(),
            ));
        };
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(header)
            .map_err(|error| TokenError::Malformed(format!("header: {error}")))?;
        let header: Map<String, Value> = serde_json::from_slice(&bytes)
            .map_err(|error| TokenError::Malformed(format!("header: {error}")))?;
        let text = |field: &str| header.get(field).and_then(Value::as_str).map(str::to_owned);
        if header.contains_key("crit") {
            // No extension is understood, so a critical one cannot be honoured (RFC 7515 §4.1.11).
            return Err(TokenError::Malformed(
                "the header has `crit` extensions".to_owned(),
            ));
        }
        Ok(Self {
            alg: text("alg")
                .ok_or_else(|| TokenError::Malformed("the header has no `alg`".to_owned()))?,
            typ: text("typ"),
            kid: text("kid"),
        })
    }
}

fn token_error(error: jsonwebtoken::errors::Error) -> TokenError {
    use jsonwebtoken::errors::ErrorKind;
    match error.into_kind() {
        ErrorKind::InvalidSignature => TokenError::InvalidSignature,
        ErrorKind::ExpiredSignature => TokenError::Expired,
        ErrorKind::ImmatureSignature => TokenError::NotYetValid,
        ErrorKind::InvalidIssuer => TokenError::WrongIssuer,
        ErrorKind::InvalidAudience => TokenError::WrongAudience,
        ErrorKind::MissingRequiredClaim(claim) => TokenError::MissingClaim(claim),
        ErrorKind::InvalidClaimFormat(claim) => TokenError::InvalidClaim {
            claim,
            reason: "wrong type".to_owned(),
        },
        ErrorKind::InvalidAlgorithm => TokenError::AlgorithmNotAllowed("(key mismatch)".to_owned()),
        other => TokenError::Malformed(format!("{other:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hmac_and_empty_algorithm_lists_are_refused() {
        let builder = OAuthAuthenticator::builder("https://id.example", "https://api.example/mcp");
        assert_eq!(
            builder
                .clone()
                .algorithms([Algorithm::RS256, Algorithm::HS256])
                .build()
                .unwrap_err(),
            OAuthConfigError::SymmetricAlgorithm("HS256".to_owned())
        );
        assert_eq!(
            builder.algorithms([]).build().unwrap_err(),
            OAuthConfigError::NoAlgorithms
        );
    }

    #[tokio::test]
    async fn alg_none_is_refused_by_name_before_any_fetch() {
        let auth = OAuthAuthenticator::builder("http://127.0.0.1:9", "http://127.0.0.1:9/mcp")
            .build()
            .unwrap();
        let engine = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let token = format!(
            "{}.{}.",
            engine.encode(br#"{"alg":"none","typ":"at+jwt"}"#),
            engine.encode(br#"{"sub":"x"}"#)
        );
        assert_eq!(
            auth.verify(&token).await.unwrap_err(),
            TokenError::AlgorithmNotAllowed("none".to_owned())
        );
        assert_eq!(
            auth.verify("a.b").await.unwrap_err(),
            TokenError::Malformed("not three dot-separated parts".to_owned())
        );
    }
}
