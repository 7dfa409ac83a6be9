//! The OAuth tests: the HTTP server and the MCP server as resource servers of a real OpenID
//! provider (`oidc-provider`).
//!
//! One test binary (linked once) of the modules below; each module is the suite of one
//! file, gated on the features it needs.

#[cfg(any(
    all(feature = "oauth", feature = "http-server"),
    all(feature = "oauth", feature = "mcp-server")
))]
#[path = "../oauth_support/mod.rs"]
mod oauth_support;

mod client_trust;
mod http;
mod mcp;
mod sign_in;
