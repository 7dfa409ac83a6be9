//! Who is calling: bearer tokens resolved into [`Identity`]s by a pluggable resolver.

use futures::FutureExt;
use futures::future::BoxFuture;
use http::HeaderMap;
use opkit::Identity;
use std::collections::HashMap;
use std::future::Future;

/// Turns a bearer token into the caller's [`Identity`]; `None` rejects the token.
///
/// Any `Fn(&str) -> Option<Identity>` closure is a resolver; wrap an async lookup in
/// [`async_resolver`]; [`StaticTokens`] is a fixed table for tests and examples.
///
/// ```
/// use opkit::Identity;
/// use opkit_adapters::http_server::IdentityResolver;
/// let resolver = |token: &str| (token == "s3cret").then(|| Identity::new("ann"));
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// assert_eq!(resolver.resolve("s3cret").await.unwrap().id, "ann");
/// assert!(resolver.resolve("guess").await.is_none());
/// # });
/// ```
pub trait IdentityResolver: Send + Sync + 'static {
    /// Resolves `token` (the text after `Bearer `); `None` means the token is not valid.
    fn resolve(&self, token: &str) -> BoxFuture<'static, Option<Identity>>;
}

impl<F> IdentityResolver for F
where
    F: Fn(&str) -> Option<Identity> + Send + Sync + 'static,
{
    fn resolve(&self, token: &str) -> BoxFuture<'static, Option<Identity>> {
        futures::future::ready(self(token)).boxed()
    }
}

/// An [`IdentityResolver`] from an async closure that receives the token.
///
/// ```
/// use opkit::Identity;
/// use opkit_adapters::http_server::{IdentityResolver, async_resolver};
/// let resolver = async_resolver(|token: String| async move {
///     (token == "s3cret").then(|| Identity::new("ann"))
/// });
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// assert!(resolver.resolve("s3cret").await.is_some());
/// # });
/// ```
pub fn async_resolver<F, Fut>(resolve: F) -> impl IdentityResolver
where
    F: Fn(String) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Option<Identity>> + Send + 'static,
{
    AsyncResolver(resolve)
}

struct AsyncResolver<F>(F);

impl<F, Fut> IdentityResolver for AsyncResolver<F>
where
    F: Fn(String) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Option<Identity>> + Send + 'static,
{
    fn resolve(&self, token: &str) -> BoxFuture<'static, Option<Identity>> {
        (self.0)(token.to_owned()).boxed()
    }
}

/// A fixed table of tokens and the identities they stand for.
///
/// ```
/// use opkit::Identity;
/// use opkit_adapters::http_server::StaticTokens;
/// let tokens = StaticTokens::new()
///     .with("admin-token", Identity::new("admin").with_scopes(["users:write"]))
///     .with("reader-token", Identity::new("reader"));
/// assert_eq!(tokens.get("reader-token").unwrap().id, "reader");
/// ```
#[derive(Debug, Clone, Default)]
pub struct StaticTokens {
    tokens: HashMap<String, Identity>,
}

impl StaticTokens {
    /// An empty table (every token is rejected).
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a token.
    #[must_use]
    pub fn with(mut self, token: impl Into<String>, identity: Identity) -> Self {
        self.tokens.insert(token.into(), identity);
        self
    }

    /// The identity of `token`.
    pub fn get(&self, token: &str) -> Option<&Identity> {
        self.tokens.get(token)
    }
}

impl IdentityResolver for StaticTokens {
    fn resolve(&self, token: &str) -> BoxFuture<'static, Option<Identity>> {
        futures::future::ready(self.tokens.get(token).cloned()).boxed()
    }
}

/// What the `Authorization` header of a request says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Credentials {
    /// No `Authorization` header: an anonymous call.
    Anonymous,
    /// `Authorization: Bearer <token>` (the scheme is case-insensitive).
    Bearer(String),
    /// An `Authorization` header that is not a usable bearer token.
    Malformed,
}

impl Credentials {
    pub(crate) fn from_headers(headers: &HeaderMap) -> Self {
        let Some(value) = headers.get(http::header::AUTHORIZATION) else {
            return Self::Anonymous;
        };
        let Ok(text) = value.to_str() else {
            return Self::Malformed;
        };
        let text = text.trim();
        match text.split_once(' ') {
            Some((scheme, token))
                if scheme.eq_ignore_ascii_case("bearer") && !token.trim().is_empty() =>
            {
                Self::Bearer(token.trim().to_owned())
            }
            _ => Self::Malformed,
        }
    }
}

/// Why a request's credentials were refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Rejected;

/// Resolves a request's identity: no resolver or no header is anonymous; a header that does
/// not resolve is [`Rejected`].
pub(crate) async fn identify(
    resolver: Option<&dyn IdentityResolver>,
    headers: &HeaderMap,
) -> Result<Option<Identity>, Rejected> {
    let Some(resolver) = resolver else {
        return Ok(None);
    };
    match Credentials::from_headers(headers) {
        Credentials::Anonymous => Ok(None),
        Credentials::Malformed => Err(Rejected),
        Credentials::Bearer(token) => resolver.resolve(&token).await.map(Some).ok_or(Rejected),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    #[test]
    fn credentials_from_headers() {
        let mut headers = HeaderMap::new();
        assert_eq!(Credentials::from_headers(&headers), Credentials::Anonymous);
        headers.insert(
            http::header::AUTHORIZATION,
            HeaderValue::from_static("bearer  abc "),
        );
        assert_eq!(
            Credentials::from_headers(&headers),
            Credentials::Bearer("abc".into())
        );
        headers.insert(
            http::header::AUTHORIZATION,
            HeaderValue::from_static("Basic dXNlcjpwdw=="),
        );
        assert_eq!(Credentials::from_headers(&headers), Credentials::Malformed);
    }
}
