//! The redirects the imports' HTTP clients follow: only on the origin (scheme, host and port)
//! a request was sent to, at most [`MAX_REDIRECTS`] in a row; a redirect elsewhere is the
//! request's answer.
//!
//! reqwest, following a redirect to another host, leaves out `Authorization` and cookies but
//! sends every other header along: an API key in a header, an import's own headers, an MCP
//! session id would reach whatever the redirect points at. The MCP import also follows only
//! the redirects that keep the method and the body (`307`, `308`): a `301`, `302` or `303`
//! turns its `POST` into a `GET` without the JSON-RPC message.

/// The most redirects followed in a row for one request.
pub(crate) const MAX_REDIRECTS: usize = 10;

/// Which redirects on the request's origin are followed (the OpenAPI import follows any, the
/// MCP import those that keep the body: with one of the two features, one is unused).
#[derive(Clone, Copy)]
#[cfg_attr(not(all(feature = "openapi", feature = "mcp")), allow(dead_code))]
pub(crate) enum Follow {
    /// Any redirect status.
    Any,
    /// Only `307` and `308`, which keep the method and the body.
    KeepingTheBody,
}

/// `builder`'s client, its redirects followed as the [module docs](self) say. `name` names
/// the client in the warning of a build that fails (when the TLS backend cannot start, which
/// reqwest's default client would hit too): reqwest's default is used then, following no
/// redirect, so that no path follows one elsewhere.
pub(crate) fn client(
    builder: reqwest::ClientBuilder,
    follow: Follow,
    name: &str,
) -> reqwest::Client {
    builder
        .redirect(policy(follow))
        .build()
        .unwrap_or_else(|error| {
            tracing::warn!(
                %error,
                "the {name} could not be built; using reqwest's default, following no redirect"
            );
            reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap_or_default()
        })
}

fn policy(follow: Follow) -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(move |attempt| {
        let status_followed = match follow {
            Follow::Any => true,
            Follow::KeepingTheBody => matches!(
                attempt.status(),
                reqwest::StatusCode::TEMPORARY_REDIRECT | reqwest::StatusCode::PERMANENT_REDIRECT
            ),
        };
        let same_origin = attempt
            .previous()
            .first()
            .is_some_and(|first| first.origin() == attempt.url().origin());
        if !status_followed || !same_origin {
            attempt.stop()
        } else if attempt.previous().len() > MAX_REDIRECTS {
            attempt.error(format!("more than {MAX_REDIRECTS} redirects"))
        } else {
            attempt.follow()
        }
    })
}
