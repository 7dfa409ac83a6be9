//! The HTTP client of a Streamable HTTP connection.
//!
//! rmcp's default client keeps no idle connection (`pool_max_idle_per_host(0)`): every
//! request opens a TCP connection of its own (and over TLS, a TLS session), measured at one
//! `connect` per `tools/call` on the serving bench. This one keeps them: rmcp's transport reads
//! a response's event stream to its end after the response came (for up to 50 ms), so the
//! connection goes back to the pool, and a server that ends the stream with the response (as
//! rmcp's `StreamableHttpService` does) is called on the same connection again.
//!
//! Redirects are followed as rmcp's own client follows them: only to the same origin, only a
//! `307` or `308` (which keep the method and the body, the JSON-RPC message), at most 10 in a
//! row (see `crate::redirects`); any other is returned as it came.

use crate::redirects::{self, Follow};

/// The client a Streamable HTTP connection sends its requests with (see the module docs).
pub(super) fn client() -> reqwest::Client {
    redirects::client(
        reqwest::Client::builder().tcp_nodelay(true),
        Follow::KeepingTheBody,
        "MCP HTTP client",
    )
}
