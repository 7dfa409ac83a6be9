//! Standard sign-in (features `oauth` and `oauth-client`). The manual is
//! `adapters/docs/oauth.md`, included below; the code is in two halves, `server` (the
//! resource server) and `client` (the import signing in), sharing `discovery`, `fetch` and
//! `error`.
#![doc = "\n"]
#![doc = include_str!("../../docs/oauth.md")]

#[cfg(feature = "oauth-client")]
pub(crate) mod client;
mod discovery;
mod error;
mod fetch;
#[cfg(feature = "oauth")]
mod server;

#[cfg(feature = "oauth-client")]
pub use client::{
    AuthorizationCode, Authorize, AuthorizeError, ClientCredentials, DEFAULT_MAX_STEP_UPS,
    DEFAULT_REFRESH_MARGIN, EnterpriseIdp, SignInError, TokenSource,
};
pub use discovery::{AuthorizationServerMetadata, Discovery};
#[cfg(feature = "oauth-client")]
pub use error::TokenRequestError;
pub use error::{FetchError, OAuthConfigError, TokenError};
pub use fetch::{DEFAULT_FETCH_TIMEOUT, DEFAULT_MAX_DOCUMENT_BYTES, FetchLimits};
#[cfg(feature = "oauth")]
pub use jsonwebtoken::Algorithm;
#[cfg(feature = "oauth")]
pub use server::{
    ClaimsMapping, DEFAULT_ALGORITHMS, DEFAULT_CLIENT_PREFIX, DEFAULT_KEYS_MAX_AGE, DEFAULT_LEEWAY,
    DEFAULT_MIN_REFRESH_INTERVAL, INTROSPECTION_MAX_ACTIVE_AGE, INTROSPECTION_MAX_KEPT,
    INTROSPECTION_REFUSAL_AGE, OAuthAuthenticator, OAuthAuthenticatorBuilder, ProtectedResource,
    WELL_KNOWN_PATH,
};
