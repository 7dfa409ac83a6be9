//! Standard sign-in: the HTTP and MCP servers as OAuth 2.1 resource servers (feature
//! `oauth`), as the MCP authorization spec asks of a remote MCP server, and the MCP import
//! as an OAuth client (feature `oauth-client`: [`ClientCredentials`] given to
//! `McpOptions::oauth` for a service signing in as itself, [`AuthorizationCode`] given to
//! `McpOptions::sign_in` for a user's consent in a browser).
//!
//! An [`OAuthAuthenticator`] checks the bearer access tokens an authorization server (Auth0,
//! Keycloak, Entra, Okta, Google, `oidc-provider`, your own) issued for this resource:
//!
//! | check | how |
//! |---|---|
//! | signature | with the issuer's published keys (JWKS), found through discovery (`<issuer>/.well-known/openid-configuration`, else RFC 8414's `/.well-known/oauth-authorization-server`) or given by [`jwks_uri`](OAuthAuthenticatorBuilder::jwks_uri); cached for [`DEFAULT_KEYS_MAX_AGE`], fetched again when a token names a key the cache lacks (key rotation) — at most once per [`DEFAULT_MIN_REFRESH_INTERVAL`] |
//! | algorithm | asymmetric only ([`DEFAULT_ALGORITHMS`]); `none` and HMAC are refused, and the key must fit the algorithm (no key confusion) |
//! | `iss` | the configured issuer, exactly |
//! | `aud` | the resource's URI (the RFC 8707 resource indicator the client asked the token for), or an extra audience given with [`audiences`](OAuthAuthenticatorBuilder::audiences) |
//! | `exp`, `nbf` | with a leeway of [`DEFAULT_LEEWAY`] |
//! | `typ` | `at+jwt` when [`token_type`](OAuthAuthenticatorBuilder::token_type) asks for it |
//! | opaque tokens | introspected at the issuer (RFC 7662) when [`introspection`](OAuthAuthenticatorBuilder::introspection) is configured |
//!
//! Every fetch from the authorization server is bounded in time and size ([`FetchLimits`]).
//! The claims become the call's [`Identity`](opkit::Identity): `sub` (else `client_id`) the
//! id, `scope` / `scp` the scopes, the [`roles_claim`](OAuthAuthenticatorBuilder::roles_claim)
//! the roles — so `#[operation(access(scopes = [..], roles = [..]))]` rules apply unchanged.
//!
//! # What the servers do with it
//!
//! | | [`HttpServer`](crate::http_server::HttpServer) | [`McpServer`](crate::mcp_server::McpServer) |
//! |---|---|---|
//! | Protected Resource Metadata (RFC 9728) | at `/.well-known/oauth-protected-resource` and `/.well-known/oauth-protected-resource<resource path>` of its router | the same, from [`McpServer::serve_http`](crate::mcp_server::McpServer::serve_http) or [`McpServer::well_known_router`](crate::mcp_server::McpServer::well_known_router) (merged at the site's root) |
//! | no token | anonymous: public operations run; others get `401` | `401` (an MCP client learns to sign in from it) |
//! | refused token | `401` | `401` |
//! | token lacking a scope | `403` | `403` (a `tools/call` of a tool whose operation needs the scope) |
//!
//! A `401` carries `WWW-Authenticate: Bearer resource_metadata="<metadata URL>"`, plus
//! `error="invalid_token"` when a token was presented and refused; a `403` for scopes
//! `Bearer error="insufficient_scope", scope="<the scopes the operation needs>",
//! resource_metadata="…"`. The authorization server being unreachable while no keys are
//! cached is a `503`, not a refusal. The OpenAPI document declares an `openIdConnect`
//! security scheme (or `oauth2` with a client-credentials flow, see
//! [`openapi_token_url`](OAuthAuthenticatorBuilder::openapi_token_url)) and lists on each
//! operation the scopes its access rule needs.
//!
//! # Setup, end to end (Keycloak)
//!
//! A realm `acme` at `https://id.acme.example/realms/acme`, a client scope `notes:write`
//! and an audience mapper that puts `https://notes.acme.example/mcp` into access tokens'
//! `aud` (Keycloak's answer to the resource indicator); realm roles are in
//! `realm_access.roles`:
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use opkit::prelude::*;
//! use opkit_adapters::mcp_server::McpServer;
//! use opkit_adapters::oauth::OAuthAuthenticator;
//! use std::sync::Arc;
//!
//! /// Writes a note.
//! #[operation(namespace = "notes", mutation, access(scopes = ["notes:write"]))]
//! async fn write(text: String) -> String {
//!     text
//! }
//!
//! let registry = OperationRegistry::new();
//! registry.register_operation(write)?;
//! let auth = OAuthAuthenticator::builder(
//!     "https://id.acme.example/realms/acme",
//!     "https://notes.acme.example/mcp",
//! )
//! .scopes_supported(["notes:write"])
//! .roles_claim("realm_access.roles")
//! .token_type("at+jwt")
//! .build()?;
//! let server = McpServer::new(registry).shared_authenticator(Arc::new(auth));
//! // POST https://notes.acme.example/mcp with `Authorization: Bearer <access token>`;
//! // GET  https://notes.acme.example/.well-known/oauth-protected-resource/mcp
//! //      -> {"resource": "https://notes.acme.example/mcp",
//! //          "authorization_servers": ["https://id.acme.example/realms/acme"], ..}
//! server.serve_http(tokio::net::TcpListener::bind("127.0.0.1:8080").await?).await?;
//! # Ok(())
//! # }
//! ```
//!
//! An MCP client that follows the spec (the official SDKs, the MCP Inspector) reads the
//! `401`'s `resource_metadata`, discovers the authorization server from it, gets a token for
//! the resource and calls again. The same authenticator can serve an
//! [`HttpServer`](crate::http_server::HttpServer) beside it (`shared_authenticator`), when
//! the resource identifier covers both (tokens are checked against one audience list).

#[cfg(feature = "oauth")]
mod authenticator;
#[cfg(feature = "oauth-client")]
mod authorization_code;
#[cfg(feature = "oauth")]
mod claims;
#[cfg(feature = "oauth-client")]
mod client;
mod discovery;
#[cfg(feature = "oauth-client")]
pub(crate) mod dpop;
#[cfg(feature = "oauth-client")]
mod dpop_http;
mod error;
mod fetch;
#[cfg(feature = "oauth-client")]
mod grant;
#[cfg(feature = "oauth")]
mod introspection;
#[cfg(feature = "oauth")]
mod keys;
#[cfg(feature = "oauth")]
mod resource;
#[cfg(feature = "oauth-client")]
pub(crate) mod sign_in;

#[cfg(feature = "oauth")]
pub use authenticator::{
    DEFAULT_ALGORITHMS, DEFAULT_KEYS_MAX_AGE, DEFAULT_LEEWAY, DEFAULT_MIN_REFRESH_INTERVAL,
    OAuthAuthenticator, OAuthAuthenticatorBuilder,
};
#[cfg(feature = "oauth-client")]
pub use authorization_code::{AuthorizationCode, Authorize, AuthorizeError, DEFAULT_MAX_STEP_UPS};
#[cfg(feature = "oauth")]
pub use claims::{ClaimsMapping, DEFAULT_CLIENT_PREFIX};
#[cfg(feature = "oauth-client")]
pub use client::{ClientCredentials, DEFAULT_REFRESH_MARGIN};
pub use discovery::{AuthorizationServerMetadata, Discovery};
#[cfg(feature = "oauth-client")]
pub use error::TokenRequestError;
pub use error::{FetchError, OAuthConfigError, TokenError};
pub use fetch::{DEFAULT_FETCH_TIMEOUT, DEFAULT_MAX_DOCUMENT_BYTES, FetchLimits};
#[cfg(feature = "oauth-client")]
pub use grant::{EnterpriseIdp, TokenSource};
#[cfg(feature = "oauth")]
pub use introspection::{
    INTROSPECTION_MAX_ACTIVE_AGE, INTROSPECTION_MAX_KEPT, INTROSPECTION_REFUSAL_AGE,
};
#[cfg(feature = "oauth")]
pub use jsonwebtoken::Algorithm;
#[cfg(feature = "oauth")]
pub use resource::ProtectedResource;
#[cfg(feature = "oauth")]
pub use resource::WELL_KNOWN_PATH;
#[cfg(feature = "oauth-client")]
pub use sign_in::SignInError;
