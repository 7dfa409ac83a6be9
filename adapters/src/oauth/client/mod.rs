//! The client half: the MCP import signing in to a server that wants OAuth (feature
//! `oauth-client`). [`ClientCredentials`] (`credentials`, with the JWT-bearer grants of
//! `grant`) gets tokens for a service acting as itself; [`AuthorizationCode`]
//! (`authorization_code`, run by `sign_in` on rmcp's OAuth client) signs a user in; `dpop`
//! and `dpop_http` bind tokens to a key (RFC 9449) and hold a client's secret to the
//! authorization servers the application trusts.

mod authorization_code;
mod credentials;
pub(crate) mod dpop;
mod dpop_http;
mod grant;
pub(crate) mod sign_in;

pub use authorization_code::{AuthorizationCode, Authorize, AuthorizeError, DEFAULT_MAX_STEP_UPS};
pub use credentials::{ClientCredentials, DEFAULT_REFRESH_MARGIN};
pub use grant::{EnterpriseIdp, TokenSource};
pub use sign_in::SignInError;
