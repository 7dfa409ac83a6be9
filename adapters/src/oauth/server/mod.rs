//! The server half: the HTTP and MCP servers as OAuth 2.1 resource servers (feature `oauth`).
//! [`OAuthAuthenticator`] checks bearer tokens (`authenticator`: JWTs against the issuer's
//! keys, `keys`; opaque ones by `introspection`) and turns their claims into the caller's
//! identity (`claims`); `resource` is the Protected Resource Metadata the servers publish.

mod authenticator;
mod claims;
mod introspection;
mod keys;
mod resource;

pub use authenticator::{
    DEFAULT_ALGORITHMS, DEFAULT_KEYS_MAX_AGE, DEFAULT_LEEWAY, DEFAULT_MIN_REFRESH_INTERVAL,
    OAuthAuthenticator, OAuthAuthenticatorBuilder,
};
pub use claims::{ClaimsMapping, DEFAULT_CLIENT_PREFIX};
pub use introspection::{
    INTROSPECTION_MAX_ACTIVE_AGE, INTROSPECTION_MAX_KEPT, INTROSPECTION_REFUSAL_AGE,
};
pub use resource::{ProtectedResource, WELL_KNOWN_PATH};
