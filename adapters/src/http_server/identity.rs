//! Who is calling: the identity the application's own middleware decided, or one an
//! [`Authenticator`] reads from the request (bearer tokens, API keys, cookies, ...).

use futures::FutureExt;
use futures::future::BoxFuture;
use http::request::Parts;
use http::{HeaderMap, HeaderName, HeaderValue};
use opkit::{CallError, Identity};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

/// Decides who is calling from the whole HTTP request (headers, cookies, extensions, URI):
/// what the [`HttpServer`](super::HttpServer) and the
/// [`McpServer`](crate::mcp_server::McpServer) use to fill the call's identity.
///
/// `Ok(None)` is an anonymous call, `Ok(Some(identity))` an authenticated one, and an error
/// refuses the request (a [`CallError::unauthenticated`] answers `401`). Any
/// `Fn(&Parts) -> Result<Option<Identity>, CallError>` closure is an authenticator;
/// [`BearerAuth`] and [`ApiKeyAuth`] are ready-made ones that also describe themselves in the
/// OpenAPI document.
///
/// Before any authenticator, both servers take an [`Identity`] that the application's own
/// middleware put into the request's extensions (a tower/axum layer that already logged the
/// user in): only server-side code can put it there, so it is trusted as is.
///
/// ```
/// use http::request::Parts;
/// use opkit::{CallError, Identity};
/// use opkit_adapters::http_server::Authenticator;
///
/// // A session cookie, looked up in the application's own table.
/// let by_cookie = |request: &Parts| -> Result<Option<Identity>, CallError> {
///     let cookie = request.headers.get("cookie").and_then(|value| value.to_str().ok());
///     match cookie {
///         None => Ok(None),
///         Some(text) if text.contains("session=alice") => Ok(Some(Identity::new("alice"))),
///         Some(_) => Err(CallError::unauthenticated("the session has expired")),
///     }
/// };
/// # fn check(_: impl Authenticator) {}
/// check(by_cookie);
/// ```
pub trait Authenticator: Send + Sync + 'static {
    /// The identity of `request`; an error refuses it.
    fn authenticate(
        &self,
        request: &Parts,
    ) -> BoxFuture<'static, Result<Option<Identity>, CallError>>;

    /// The OpenAPI security scheme (name and object) that documents this authenticator.
    fn security_scheme(&self) -> Option<(String, Value)> {
        None
    }

    /// The `WWW-Authenticate` challenge sent with a `401`; `refused` when the request's
    /// credentials were presented and refused (rather than missing).
    fn challenge(&self, refused: bool) -> Option<HeaderValue> {
        let _ = refused;
        None
    }

    /// The `WWW-Authenticate` challenge sent with a `403` when an authenticated caller lacks
    /// `scopes` (all the scopes the operation needs): for OAuth, `Bearer
    /// error="insufficient_scope", scope="…"` (RFC 6750 §3.1). `None` (the default) sends
    /// none.
    fn insufficient_scope(&self, scopes: &[String]) -> Option<HeaderValue> {
        let _ = scopes;
        None
    }

    /// The Protected Resource Metadata document (RFC 9728) of an OAuth resource server, which
    /// both servers then publish at `/.well-known/oauth-protected-resource` (and the form
    /// suffixed with the resource's path). `None` (the default) publishes nothing.
    fn protected_resource_metadata(&self) -> Option<Value> {
        None
    }
}

impl<F> Authenticator for F
where
    F: Fn(&Parts) -> Result<Option<Identity>, CallError> + Send + Sync + 'static,
{
    fn authenticate(
        &self,
        request: &Parts,
    ) -> BoxFuture<'static, Result<Option<Identity>, CallError>> {
        futures::future::ready(self(request)).boxed()
    }
}

/// `Authorization: Bearer <token>`, resolved by an [`IdentityResolver`]: what
/// [`HttpServer::identity_resolver`](super::HttpServer::identity_resolver) installs. No header
/// is an anonymous call; a header that does not resolve is refused with `401`.
#[derive(Clone)]
pub struct BearerAuth {
    resolver: Arc<dyn IdentityResolver>,
}

impl BearerAuth {
    /// Bearer tokens resolved by `resolver`.
    pub fn new(resolver: impl IdentityResolver) -> Self {
        Self::shared(Arc::new(resolver))
    }

    /// Bearer tokens resolved by a shared resolver.
    pub fn shared(resolver: Arc<dyn IdentityResolver>) -> Self {
        Self { resolver }
    }
}

impl Authenticator for BearerAuth {
    fn authenticate(
        &self,
        request: &Parts,
    ) -> BoxFuture<'static, Result<Option<Identity>, CallError>> {
        let token = match Credentials::from_headers(&request.headers) {
            Credentials::Anonymous => return futures::future::ready(Ok(None)).boxed(),
            Credentials::Malformed => return futures::future::ready(Err(invalid_token())).boxed(),
            Credentials::Bearer(token) => token,
        };
        let resolving = self.resolver.resolve(&token);
        async move { resolving.await.map(Some).ok_or_else(invalid_token) }.boxed()
    }

    fn security_scheme(&self) -> Option<(String, Value)> {
        Some((
            "bearerAuth".to_owned(),
            json!({"type": "http", "scheme": "bearer"}),
        ))
    }

    fn challenge(&self, refused: bool) -> Option<HeaderValue> {
        Some(if refused {
            HeaderValue::from_static("Bearer error=\"invalid_token\"")
        } else {
            HeaderValue::from_static("Bearer")
        })
    }
}

fn invalid_token() -> CallError {
    CallError::unauthenticated("the bearer token was not accepted")
}

/// An API key in a request header (`x-api-key: <key>`), resolved by an [`IdentityResolver`]
/// (the application's own key table). No header is an anonymous call; a key that does not
/// resolve is refused with `401`. Documented as an `apiKey` security scheme.
///
/// ```
/// use opkit::Identity;
/// use opkit_adapters::http_server::{ApiKeyAuth, HttpServer};
/// # let registry = opkit::OperationRegistry::new();
/// let server = HttpServer::new(registry).authenticator(ApiKeyAuth::header(
///     "x-api-key",
///     |key: &str| (key == "k-123").then(|| Identity::new("svc")),
/// ));
/// ```
#[derive(Clone)]
pub struct ApiKeyAuth {
    header: HeaderName,
    resolver: Arc<dyn IdentityResolver>,
}

impl ApiKeyAuth {
    /// Keys in the header `name`, resolved by `resolver`.
    ///
    /// # Panics
    ///
    /// When `name` is not a valid header name (a programming error).
    pub fn header(name: &str, resolver: impl IdentityResolver) -> Self {
        let header = HeaderName::from_bytes(name.as_bytes()).unwrap_or_else(|error| {
            panic!("ApiKeyAuth::header: `{name}` is not a header name: {error}")
        });
        Self {
            header,
            resolver: Arc::new(resolver),
        }
    }
}

impl Authenticator for ApiKeyAuth {
    fn authenticate(
        &self,
        request: &Parts,
    ) -> BoxFuture<'static, Result<Option<Identity>, CallError>> {
        let Some(value) = request.headers.get(&self.header) else {
            return futures::future::ready(Ok(None)).boxed();
        };
        let header = self.header.clone();
        let refused = move || {
            CallError::unauthenticated(format!("the API key in `{header}` was not accepted"))
        };
        let Ok(key) = value.to_str() else {
            return futures::future::ready(Err(refused())).boxed();
        };
        let resolving = self.resolver.resolve(key.trim());
        async move { resolving.await.map(Some).ok_or_else(refused) }.boxed()
    }

    fn security_scheme(&self) -> Option<(String, Value)> {
        Some((
            "apiKeyAuth".to_owned(),
            json!({"type": "apiKey", "in": "header", "name": self.header.as_str()}),
        ))
    }
}

/// The caller of `request`: an [`Identity`] the application's middleware put into the
/// extensions, else what `authenticator` says, else anonymous.
pub(crate) async fn authenticate(
    authenticator: Option<&dyn Authenticator>,
    request: &Parts,
) -> Result<Option<Identity>, CallError> {
    if let Some(identity) = request.extensions.get::<Identity>() {
        return Ok(Some(identity.clone()));
    }
    match authenticator {
        Some(authenticator) => authenticator.authenticate(request).await,
        None => Ok(None),
    }
}

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
    /// An `Authorization` header that is not a usable bearer token, or several of them
    /// (which one a proxy or a server reads first differs: none is trusted).
    Malformed,
}

impl Credentials {
    pub(crate) fn from_headers(headers: &HeaderMap) -> Self {
        let mut values = headers.get_all(http::header::AUTHORIZATION).iter();
        let Some(value) = values.next() else {
            return Self::Anonymous;
        };
        if values.next().is_some() {
            return Self::Malformed;
        }
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
        // Two headers: neither is taken, whichever comes first.
        headers.insert(
            http::header::AUTHORIZATION,
            HeaderValue::from_static("Bearer abc"),
        );
        headers.append(
            http::header::AUTHORIZATION,
            HeaderValue::from_static("Bearer def"),
        );
        assert_eq!(Credentials::from_headers(&headers), Credentials::Malformed);
    }
}
