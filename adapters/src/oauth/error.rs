//! What can go wrong: a refused token ([`TokenError`]), a document that could not be fetched
//! from the authorization server ([`FetchError`]), a configuration that cannot work
//! ([`OAuthConfigError`]), a client that got no token ([`TokenRequestError`]).

use opkit::CallError;

/// Why a bearer token was refused. Every variant answers `401` with
/// `WWW-Authenticate: Bearer error="invalid_token"`, except [`TokenError::KeysUnavailable`] and
/// [`TokenError::IntrospectionUnavailable`] (the authorization server could not be reached:
/// `503`, the token may well be good).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TokenError {
    /// Not three base64url parts with a JSON header, or not valid JSON claims.
    #[error("the token is not a well-formed JWT: {0}")]
    Malformed(String),
    /// The header's `alg` is not one the authenticator accepts (`none` and the HMAC
    /// algorithms never are).
    #[error("the token's algorithm `{0}` is not accepted")]
    AlgorithmNotAllowed(String),
    /// The header's `typ` is not the required one (`at+jwt`, RFC 9068).
    #[error("the token's type is `{found}`, expected `{expected}`")]
    WrongType {
        /// The required `typ`.
        expected: String,
        /// The token's `typ` (empty when it has none).
        found: String,
    },
    /// No key of the issuer's key set has the token's `kid` (after a refresh).
    #[error("the token was signed by a key the issuer does not publish (kid `{0}`)")]
    UnknownKey(String),
    /// The token names no `kid` and the key set has more than one key that fits its algorithm.
    #[error("the token names no key (`kid`) and the issuer publishes several")]
    NoKeyId,
    /// The key with the token's `kid` does not fit the token's algorithm.
    #[error("the key `{kid}` does not fit the algorithm `{alg}`")]
    KeyMismatch {
        /// The key's id.
        kid: String,
        /// The token's algorithm.
        alg: String,
    },
    /// The signature does not verify.
    #[error("the token's signature does not verify")]
    InvalidSignature,
    /// `exp` is in the past (beyond the leeway).
    #[error("the token has expired")]
    Expired,
    /// `nbf` is in the future (beyond the leeway).
    #[error("the token is not valid yet")]
    NotYetValid,
    /// `iss` is not the configured issuer.
    #[error("the token was issued by another issuer")]
    WrongIssuer,
    /// `aud` does not name this resource.
    #[error("the token is meant for another audience")]
    WrongAudience,
    /// A claim the authenticator needs is missing.
    #[error("the token has no `{0}` claim")]
    MissingClaim(String),
    /// A claim has the wrong shape.
    #[error("the token's `{claim}` claim is not valid: {reason}")]
    InvalidClaim {
        /// The claim's name.
        claim: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The introspection endpoint says the token is not active (RFC 7662).
    #[error("the token is not active")]
    Inactive,
    /// The issuer's keys could not be fetched and none are cached.
    #[error("the issuer's signing keys are not available: {0}")]
    KeysUnavailable(FetchError),
    /// The introspection endpoint could not be reached or answered badly.
    #[error("the token could not be introspected: {0}")]
    IntrospectionUnavailable(FetchError),
}

impl TokenError {
    /// `true` when the token itself was refused (a `401`), `false` when the authorization
    /// server could not be reached (a `503`).
    pub fn is_refusal(&self) -> bool {
        !matches!(
            self,
            Self::KeysUnavailable(_) | Self::IntrospectionUnavailable(_)
        )
    }
}

impl From<TokenError> for CallError {
    fn from(error: TokenError) -> Self {
        if error.is_refusal() {
            CallError::unauthenticated(format!("the bearer token was refused: {error}"))
        } else {
            CallError::unavailable(error.to_string())
        }
    }
}

/// Why a document of the authorization server (discovery, key set, introspection, token)
/// could not be had.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FetchError {
    /// The request failed (connection refused, TLS, DNS, ...).
    #[error("`{url}` could not be fetched: {reason}")]
    Request {
        /// The document's URL.
        url: String,
        /// What failed.
        reason: String,
    },
    /// No complete answer within the fetch timeout.
    #[error("`{url}` did not answer within {timeout_ms} ms")]
    Timeout {
        /// The document's URL.
        url: String,
        /// The timeout.
        timeout_ms: u64,
    },
    /// The answer's status was not a success.
    #[error("`{url}` answered {status}")]
    Status {
        /// The document's URL.
        url: String,
        /// The HTTP status.
        status: u16,
    },
    /// The answer is larger than the limit.
    #[error("`{url}` sent more than {limit} bytes")]
    TooLarge {
        /// The document's URL.
        url: String,
        /// The limit in bytes.
        limit: usize,
    },
    /// The answer is not the JSON document expected.
    #[error("`{url}` is not a valid document: {reason}")]
    InvalidDocument {
        /// The document's URL.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The discovery document names another issuer than the one configured (RFC 8414 §3.3).
    #[error("the discovery document names the issuer `{found}`, expected `{expected}`")]
    IssuerMismatch {
        /// The configured issuer.
        expected: String,
        /// The document's `issuer`.
        found: String,
    },
    /// No discovery document was found at any of the well-known locations.
    #[error("no discovery document for `{issuer}` (tried {tried})")]
    NotDiscovered {
        /// The configured issuer.
        issuer: String,
        /// The URLs tried, comma-separated.
        tried: String,
    },
    /// The discovery document lacks an endpoint the caller needs.
    #[error("the discovery document of `{issuer}` has no `{field}`")]
    MissingEndpoint {
        /// The configured issuer.
        issuer: String,
        /// The missing field (`jwks_uri`, `token_endpoint`, ...).
        field: &'static str,
    },
    /// A refresh was wanted but the last one was too recent (the rate limit).
    #[error("the key set was refreshed less than {min_interval_ms} ms ago")]
    RateLimited {
        /// The configured minimum interval between refreshes.
        min_interval_ms: u64,
    },
}

/// A configuration an authenticator or token client cannot work with, found when it is built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OAuthConfigError {
    /// A URL (issuer, resource, endpoint) does not parse or is not `http`/`https`.
    #[error("`{value}` is not a valid {what} URL: {reason}")]
    InvalidUrl {
        /// Which URL (`issuer`, `resource`, ...).
        what: &'static str,
        /// The value given.
        value: String,
        /// Why it is not valid.
        reason: String,
    },
    /// An HMAC algorithm (`HS256`, ...) was allowed: a resource server holds only public keys,
    /// and accepting HMAC would let a public key be used as the shared secret.
    #[error("the algorithm `{0}` is symmetric (HMAC) and cannot be verified with public keys")]
    SymmetricAlgorithm(String),
    /// No algorithm is allowed.
    #[error("no signing algorithm is allowed")]
    NoAlgorithms,
    /// The HTTP client could not be built.
    #[error("the HTTP client could not be built: {0}")]
    HttpClient(String),
    /// A `private_key_jwt` key could not be read for its algorithm.
    #[error("the private key for `{algorithm}` cannot be used: {reason}")]
    PrivateKey {
        /// The algorithm given.
        algorithm: String,
        /// Why the key cannot be used with it.
        reason: String,
    },
}

#[cfg(feature = "oauth-client")]
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
    /// The `private_key_jwt` client assertion could not be signed.
    #[error("the client assertion could not be signed: {0}")]
    Assertion(String),
    /// The resource names an authorization server the application did not choose: no
    /// credential was sent to it.
    #[error(
        "the resource `{resource}` names the authorization server `{issuer}`, which is not trusted: give it as the issuer, or list it with ClientCredentials::trusted_issuers (no credential was sent to it)"
    )]
    UntrustedIssuer {
        /// The resource whose metadata named it.
        resource: String,
        /// The authorization server it named.
        issuer: String,
    },
    /// A URL credentials would travel to is not `https` (nor `http` to a loopback address).
    #[error(
        "the {what} `{url}` is not https: credentials go only over https (plain http only to a loopback address)"
    )]
    InsecureUrl {
        /// What the URL is (`token endpoint`, `authorization server`, `resource`).
        what: &'static str,
        /// The URL.
        url: String,
    },
}
