//! The client side with a person in the loop: [`AuthorizationCode`] is how the MCP import
//! signs in to a server that wants a user's consent — the OAuth 2.1 authorization-code flow
//! with PKCE, as the MCP authorization spec describes it. The application's part is one
//! callback, [`Authorize`]: show the user a URL, hand back where the browser was sent.

use crate::oauth::error::OAuthConfigError;
use futures::future::BoxFuture;
use std::fmt;
use std::future::Future;
use std::sync::Arc;

/// Scope step-ups one connection makes at most (a `403 insufficient_scope` answered by
/// asking the user again for more): 3.
pub const DEFAULT_MAX_STEP_UPS: u32 = 3;

/// What the application's [`Authorize`] callback gives back when the user could not be
/// signed in (closed the window, timed out, refused): any error, shown in the call's error.
pub type AuthorizeError = Box<dyn std::error::Error + Send + Sync>;

/// The application's part of the authorization-code flow: present the authorization URL to
/// the user (open a browser, print it, send it to the user's device) and resolve to the URL
/// the authorization server redirected back to — the redirect URI with `code`, `state` and,
/// when the server sends it, `iss`. A desktop application listens on its loopback redirect
/// URI for that request; a test fetches the URL from an authorization server that consents
/// by itself and reads the `Location` of its answer.
///
/// Any `Fn(String) -> impl Future<Output = Result<String, AuthorizeError>>` is one.
pub trait Authorize: Send + Sync + 'static {
    /// Takes the user through `url`; resolves to the redirect URL with the code.
    fn authorize(&self, url: String) -> BoxFuture<'static, Result<String, AuthorizeError>>;
}

impl<F, Fut> Authorize for F
where
    F: Fn(String) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<String, AuthorizeError>> + Send + 'static,
{
    fn authorize(&self, url: String) -> BoxFuture<'static, Result<String, AuthorizeError>> {
        Box::pin(self(url))
    }
}

/// Who the client is to the authorization server.
#[derive(Debug, Clone)]
pub(crate) enum Registration {
    /// Registered as it signs in: by its Client ID Metadata Document's URL when it has one
    /// and the server accepts those, else by Dynamic Client Registration (RFC 7591) under
    /// `client_name`.
    Dynamic {
        client_name: String,
        metadata_url: Option<String>,
    },
    /// Registered with the authorization server beforehand.
    Preregistered {
        client_id: String,
        client_secret: Option<String>,
    },
}

/// Signing in with the OAuth 2.1 authorization-code flow (feature `oauth-client`), given to
/// [`McpOptions::sign_in`](crate::mcp::McpOptions::sign_in). Nothing happens until the
/// server answers `401`; then the import does what the MCP authorization spec asks of a
/// client, on rmcp's OAuth client:
///
/// 1. reads the Protected Resource Metadata named by the `401`'s `WWW-Authenticate` (or at
///    the well-known paths, RFC 9728) and the authorization server's metadata (RFC 8414,
///    else OpenID Connect discovery), checking that each names what it should (the
///    resource, the issuer);
/// 2. registers: the pre-registered client if given, else the
///    [Client ID Metadata Document](Self::client_metadata_url) when the server supports
///    those, else Dynamic Client Registration;
/// 3. chooses the scopes: the ones [given](Self::scopes), else the challenge's `scope`, else
///    the resource's `scopes_supported`, else none; `offline_access` is added when the
///    authorization server offers it (for a refresh token);
/// 4. builds the authorization URL (PKCE S256, `state`, `resource` of RFC 8707) and hands it
///    to the [`Authorize`] callback; checks the redirect's `state` and `iss` (RFC 9207) and
///    exchanges the code at the token endpoint (with the client authentication the server
///    registered: `client_secret_basic`, `client_secret_post` or none);
/// 5. sends the request again with the access token.
///
/// Afterwards a token near its expiry is refreshed; a `401` for a token is answered by one
/// refresh, then by signing in again from the start (discovery included: the resource may
/// have moved to another authorization server, whose client registration is its own); a
/// `403 insufficient_scope` by asking the user again for the union of the scopes held and
/// the ones the server names (scope step-up: a sign-in from the start for the union, so a
/// dynamically registered client, which an authorization server may hold to the scopes it
/// registered with, registers again), at most [`max_step_ups`](Self::max_step_ups) times
/// per connection, and never for scopes already held — the server refusing those is a
/// refusal, not a reason to ask again.
///
/// ```
/// use opkit_adapters::oauth::AuthorizationCode;
/// let sign_in = AuthorizationCode::new("http://127.0.0.1:8765/callback", |url: String| async move {
///     println!("Open {url} to sign in");
///     // ... wait for the browser's request to the redirect URI, and return its URL:
///     Ok("http://127.0.0.1:8765/callback?code=...&state=...".to_owned())
/// })
/// .unwrap()
/// .client_name("notes-desktop")
/// .scopes(["notes:read"]);
/// ```
#[derive(Clone)]
pub struct AuthorizationCode {
    pub(crate) redirect_uri: String,
    pub(crate) registration: Registration,
    pub(crate) scopes: Vec<String>,
    pub(crate) authorize: Arc<dyn Authorize>,
    pub(crate) max_step_ups: u32,
    pub(crate) dpop: bool,
    /// The authorization servers a pre-registered client's secret may go to.
    pub(crate) trusted_issuers: Vec<String>,
    /// The application opted in to sending the secret to any of them.
    pub(crate) any_issuer: bool,
}

impl fmt::Debug for AuthorizationCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let registration = match &self.registration {
            Registration::Dynamic {
                client_name,
                metadata_url,
            } => format!("dynamic ({client_name}, metadata document {metadata_url:?})"),
            Registration::Preregistered { client_id, .. } => format!("pre-registered {client_id}"),
        };
        f.debug_struct("AuthorizationCode")
            .field("redirect_uri", &self.redirect_uri)
            .field("registration", &registration)
            .field("scopes", &self.scopes)
            .field("max_step_ups", &self.max_step_ups)
            .field("dpop", &self.dpop)
            .finish_non_exhaustive()
    }
}

impl AuthorizationCode {
    /// Signs in with `redirect_uri` (an absolute URI: a loopback `http` one, or a native
    /// application's own scheme) and `authorize` taking the user through the authorization
    /// URL. The client registers dynamically as `opkit` unless told otherwise.
    pub fn new(
        redirect_uri: impl Into<String>,
        authorize: impl Authorize,
    ) -> Result<Self, OAuthConfigError> {
        let redirect_uri = redirect_uri.into();
        url::Url::parse(&redirect_uri).map_err(|error| OAuthConfigError::InvalidUrl {
            what: "redirect",
            value: redirect_uri.clone(),
            reason: error.to_string(),
        })?;
        Ok(Self {
            redirect_uri,
            registration: Registration::Dynamic {
                client_name: "opkit".to_owned(),
                metadata_url: None,
            },
            scopes: Vec::new(),
            authorize: Arc::new(authorize),
            max_step_ups: DEFAULT_MAX_STEP_UPS,
            dpop: false,
            trusted_issuers: Vec::new(),
            any_issuer: false,
        })
    }

    /// The authorization servers (issuers, compared without a trailing `/`) a
    /// [pre-registered](Self::preregistered) client's secret may be sent to. The server is
    /// the one the MCP server's metadata names; a secret goes only to the token endpoint of a
    /// server listed here whose metadata names it so, over `https` (or loopback `http`).
    /// Without a secret (a public client: PKCE, dynamic registration) discovery needs no
    /// listing.
    #[must_use]
    pub fn trusted_issuers<I, S>(mut self, issuers: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.trusted_issuers
            .extend(issuers.into_iter().map(Into::into));
        self
    }

    /// Sends a pre-registered client's secret to whichever authorization server the MCP
    /// server names: whoever controls its metadata then receives the secret. Only for
    /// servers trusted as much as the secret (a test harness, a conformance suite).
    #[must_use]
    pub fn trust_any_issuer(mut self) -> Self {
        self.any_issuer = true;
        self
    }

    /// The name a dynamically registered client registers under (default `opkit`).
    #[must_use]
    pub fn client_name(mut self, name: impl Into<String>) -> Self {
        match &mut self.registration {
            Registration::Dynamic { client_name, .. } => *client_name = name.into(),
            Registration::Preregistered { .. } => {
                self.registration = Registration::Dynamic {
                    client_name: name.into(),
                    metadata_url: None,
                }
            }
        }
        self
    }

    /// The HTTPS URL of the client's Client ID Metadata Document: used as its `client_id`
    /// where the authorization server advertises `client_id_metadata_document_supported`
    /// (others get Dynamic Client Registration). It must be `https` with a path.
    pub fn client_metadata_url(mut self, url: impl Into<String>) -> Result<Self, OAuthConfigError> {
        let url = url.into();
        let invalid = |reason: &str| OAuthConfigError::InvalidUrl {
            what: "client metadata document",
            value: url.clone(),
            reason: reason.to_owned(),
        };
        let parsed = url::Url::parse(&url).map_err(|error| invalid(&error.to_string()))?;
        if parsed.scheme() != "https" {
            return Err(invalid("not an https URL"));
        }
        if parsed.path() == "/" || parsed.path().is_empty() {
            return Err(invalid("it has no path"));
        }
        let client_name = match self.registration {
            Registration::Dynamic { client_name, .. } => client_name,
            Registration::Preregistered { .. } => "opkit".to_owned(),
        };
        self.registration = Registration::Dynamic {
            client_name,
            metadata_url: Some(url),
        };
        Ok(self)
    }

    /// A client registered with the authorization server beforehand: its id and, for a
    /// confidential client, its secret. No registration happens. A secret is sent only to a
    /// [trusted issuer](Self::trusted_issuers)'s token endpoint.
    #[must_use]
    pub fn preregistered(
        mut self,
        client_id: impl Into<String>,
        client_secret: Option<String>,
    ) -> Self {
        self.registration = Registration::Preregistered {
            client_id: client_id.into(),
            client_secret,
        };
        self
    }

    /// The scopes to ask for at the first sign-in (default: chosen from the server's
    /// challenge and metadata, see above).
    #[must_use]
    pub fn scopes<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// DPoP (RFC 9449): the connection makes a P-256 key, and where the authorization server
    /// offers DPoP with ES256 (`dpop_signing_alg_values_supported`), its token requests carry
    /// proofs, the token is bound to the key, and each request to the server presents it as
    /// `Authorization: DPoP` with a fresh proof; a `use_dpop_nonce` answer is followed with
    /// the server's nonce. Off by default. With it on (or with a pre-registered secret), the
    /// sign-in's requests go through the import's own HTTP client, which refuses link-local
    /// addresses and cloud metadata hosts
    /// but not other private addresses (rmcp's default client, used otherwise, also holds
    /// discovered URLs to the server URL's address class).
    #[must_use]
    pub fn dpop(mut self, on: bool) -> Self {
        self.dpop = on;
        self
    }

    /// How many scope step-ups one connection makes at most (default
    /// [`DEFAULT_MAX_STEP_UPS`]; 0: a `403` is final).
    #[must_use]
    pub fn max_step_ups(mut self, max: u32) -> Self {
        self.max_step_ups = max;
        self
    }
}
