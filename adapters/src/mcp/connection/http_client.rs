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
//! `307` or `308` (which keep the method and the body, the JSON-RPC message), at most
//! [`MAX_REDIRECTS`] in a row. A redirect elsewhere would replay the session id and the
//! connection's own headers to another host, and a `301`, `302` or `303` would turn the `POST`
//! into a `GET` without its message: such a response is returned as it came.

/// The most redirects followed for one request.
pub(super) const MAX_REDIRECTS: usize = 10;

/// The client a Streamable HTTP connection sends its requests with (see the module docs).
pub(super) fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .tcp_nodelay(true)
        .redirect(redirects())
        .build()
        .unwrap_or_else(|error| {
            // Building fails only when the TLS backend cannot start, which the default
            // client would hit too.
            tracing::warn!(%error, "the MCP HTTP client could not be built; using reqwest's default");
            reqwest::Client::new()
        })
}

/// Same-origin `307` and `308` redirects, at most [`MAX_REDIRECTS`].
fn redirects() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let keeps_the_message = matches!(
            attempt.status(),
            reqwest::StatusCode::TEMPORARY_REDIRECT | reqwest::StatusCode::PERMANENT_REDIRECT
        );
        let same_origin = attempt
            .previous()
            .first()
            .is_some_and(|first| first.origin() == attempt.url().origin());
        if !keeps_the_message || !same_origin {
            attempt.stop()
        } else if attempt.previous().len() > MAX_REDIRECTS {
            attempt.error(format!("more than {MAX_REDIRECTS} redirects"))
        } else {
            attempt.follow()
        }
    })
}
