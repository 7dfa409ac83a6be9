//! Import options: namespace, base URL, credentials, timeout, extra headers, SSE event limit
//! and resumption, schema budget, normalization of replies.

use super::normalize::Normalization;
use super::sse::DEFAULT_MAX_SSE_EVENT_BYTES;
use std::collections::BTreeMap;
use std::time::Duration;

/// How to import a document: where the operations go and how their requests are sent.
///
/// ```
/// use opkit_adapters::openapi::{OpenApiAuth, OpenApiOptions};
/// use std::time::Duration;
/// let options = OpenApiOptions::new("petstore")
///     .base_url("http://127.0.0.1:4010")
///     .auth(OpenApiAuth::new().api_key("special-key").bearer("token"))
///     .timeout(Duration::from_secs(10))
///     .header("x-client", "opkit");
/// assert_eq!(options.namespace, "petstore");
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct OpenApiOptions {
    /// Namespace of every imported operation (`namespace.name`); segments of
    /// `[A-Za-z_][A-Za-z0-9_]*` separated by `.`.
    pub namespace: String,
    /// Replaces the document's `servers` for every operation (an absolute URL; the path
    /// templates are appended to it).
    pub base_url: Option<String>,
    /// Values for server variables (`{region}` in a server URL); others use their `default`.
    pub server_variables: BTreeMap<String, String>,
    /// Credentials, matched to the document's security schemes.
    pub auth: OpenApiAuth,
    /// Per-request timeout (connect to end of body; for SSE, until the response headers).
    /// The context's deadline applies too; the earlier of the two wins.
    pub timeout: Option<Duration>,
    /// Headers sent with every request (after the document's own parameters).
    pub headers: BTreeMap<String, String>,
    /// The HTTP client to use; when `None`, reqwest's default but for its redirects, which
    /// are followed only on the origin the request was sent to ([`default_client`]).
    pub client: Option<reqwest::Client>,
    /// The largest SSE event a subscription accepts, in bytes: its data plus the line being
    /// read ([`DEFAULT_MAX_SSE_EVENT_BYTES`], 16 MiB, unless set). A larger event ends the
    /// subscription with `EXECUTION_ERROR` naming the limit and closes the connection.
    pub max_sse_event_bytes: usize,
    /// The largest response body a query or mutation reads, in bytes
    /// ([`DEFAULT_MAX_RESPONSE_BYTES`], 64 MiB, unless set): past it (by `Content-Length`, or
    /// as it arrives) the call fails with `EXECUTION_ERROR` naming the limit (`details.limit:
    /// "maxResponseBytes"`) and the rest is not read.
    pub max_response_bytes: usize,
    /// The schema budget of one import, in schema nodes built or copied into operation
    /// schemas (see [`OpenApiError::SchemaBudget`](super::OpenApiError::SchemaBudget));
    /// `None` (the default) is automatic: [`SCHEMA_BUDGET_FACTOR`] × the nodes of the
    /// document, at least [`MIN_SCHEMA_BUDGET`].
    pub max_schema_nodes: Option<usize>,
    /// What happens to the API's replies: cast to the output schema with a warning when
    /// that changes them (the default), validated only, or left alone (see [`Normalization`]).
    pub normalization: Normalization,
    /// How an SSE subscription whose connection drops is resumed (idempotent methods only;
    /// see [`SseReconnect`]).
    pub sse_reconnect: SseReconnect,
    /// Who may call the imported operations on the application's edges: internal (no one
    /// from outside) unless given (see [`OpenApiOptions::access`]).
    pub access: crate::ImportAccess,
}

/// Resumption of SSE subscriptions whose connection drops, with `Last-Event-ID`, the way an
/// `EventSource` resumes them. Only for idempotent methods (GET, HEAD, PUT, DELETE,
/// OPTIONS, TRACE, QUERY): a POST is never sent twice.
///
/// ```
/// use opkit_adapters::openapi::{OpenApiOptions, SseReconnect};
/// use std::time::Duration;
/// let options = OpenApiOptions::new("api")
///     .sse_reconnect(SseReconnect::default().max_attempts(5).default_delay(Duration::from_secs(1)));
/// assert_eq!(options.sse_reconnect.max_attempts, 5);
/// let off = OpenApiOptions::new("api").sse_reconnect(SseReconnect::off());
/// assert_eq!(off.sse_reconnect.max_attempts, 0);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct SseReconnect {
    /// Reconnection attempts in a row (without an event in between) before the stream ends
    /// with the error; `0` turns resumption off. Default 3.
    pub max_attempts: u32,
    /// The delay before reconnecting when the stream set no `retry`. Default 3 s.
    pub default_delay: Duration,
    /// The longest delay honoured: a larger `retry` is cut to it. Default 30 s.
    pub max_delay: Duration,
}

impl Default for SseReconnect {
    fn default() -> Self {
        Self {
            max_attempts: 3,
            default_delay: Duration::from_secs(3),
            max_delay: Duration::from_secs(30),
        }
    }
}

impl SseReconnect {
    /// No resumption: a dropped connection ends the subscription with `TRANSPORT_ERROR`.
    pub fn off() -> Self {
        Self {
            max_attempts: 0,
            ..Self::default()
        }
    }

    /// Sets the attempts in a row.
    #[must_use]
    pub fn max_attempts(mut self, attempts: u32) -> Self {
        self.max_attempts = attempts;
        self
    }

    /// Sets the delay used when the stream set no `retry`.
    #[must_use]
    pub fn default_delay(mut self, delay: Duration) -> Self {
        self.default_delay = delay;
        self
    }

    /// Sets the longest delay honoured.
    #[must_use]
    pub fn max_delay(mut self, delay: Duration) -> Self {
        self.max_delay = delay;
        self
    }
}

/// The automatic schema budget allows this many times the document's own nodes.
pub const SCHEMA_BUDGET_FACTOR: usize = 256;
/// The largest response body an imported query or mutation reads unless
/// [`OpenApiOptions::max_response_bytes`] says otherwise: 64 MiB.
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 64 << 20;

/// The automatic schema budget is at least this many nodes.
pub const MIN_SCHEMA_BUDGET: usize = 2_000_000;

/// The automatic schema budget of a document.
pub(crate) fn automatic_schema_budget(root: &serde_json::Value) -> usize {
    fn count(value: &serde_json::Value) -> usize {
        // The document's depth is bounded by its parser (or by the caller for a `Value`).
        let mut total = 0;
        let mut stack = vec![value];
        while let Some(value) = stack.pop() {
            total += 1;
            match value {
                serde_json::Value::Array(items) => stack.extend(items),
                serde_json::Value::Object(map) => stack.extend(map.values()),
                _ => {}
            }
        }
        total
    }
    count(root)
        .saturating_mul(SCHEMA_BUDGET_FACTOR)
        .max(MIN_SCHEMA_BUDGET)
}

impl OpenApiOptions {
    /// Options with a namespace and nothing else: the document's servers, no credentials,
    /// no timeout besides the context's deadline.
    pub fn new(namespace: impl Into<String>) -> Self {
        Self {
            namespace: namespace.into(),
            base_url: None,
            server_variables: BTreeMap::new(),
            auth: OpenApiAuth::default(),
            timeout: None,
            headers: BTreeMap::new(),
            client: None,
            max_sse_event_bytes: DEFAULT_MAX_SSE_EVENT_BYTES,
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
            max_schema_nodes: None,
            normalization: Normalization::default(),
            sse_reconnect: SseReconnect::default(),
            access: crate::ImportAccess::new(),
        }
    }

    /// Who may call every imported operation that has no rule of its own (see
    /// [`ImportAccess`](crate::ImportAccess)): the requests carry this import's credentials
    /// ([`auth`](Self::auth), [`header`](Self::header)), so until a rule is given the
    /// operations are internal — in-process code calls them, every edge refuses them. An
    /// opkit server's own rule (`x-opkit-access` on the operation) is kept over this one.
    ///
    /// ```
    /// use opkit::AccessRule;
    /// use opkit_adapters::openapi::OpenApiOptions;
    /// let options = OpenApiOptions::new("billing")
    ///     .access(AccessRule::scopes(["billing:read"]))
    ///     .operation_access("refund", AccessRule::roles(["finance"]));
    /// ```
    #[must_use]
    pub fn access(mut self, rule: opkit::AccessRule) -> Self {
        self.access = self.access.all(rule);
        self
    }

    /// The rule of the imported operation named `name` (its registry name, without the
    /// namespace), over every other.
    #[must_use]
    pub fn operation_access(mut self, name: impl Into<String>, rule: opkit::AccessRule) -> Self {
        self.access = self.access.operation(name, rule);
        self
    }

    /// Sends every request to `base_url` instead of the document's servers.
    #[must_use]
    pub fn base_url(mut self, base_url: impl Into<String>) -> Self {
        self.base_url = Some(base_url.into());
        self
    }

    /// Sets a server variable.
    #[must_use]
    pub fn server_variable(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.server_variables.insert(name.into(), value.into());
        self
    }

    /// Sets the credentials.
    #[must_use]
    pub fn auth(mut self, auth: OpenApiAuth) -> Self {
        self.auth = auth;
        self
    }

    /// Sets the per-request timeout.
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Adds a header sent with every request.
    #[must_use]
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.insert(name.into(), value.into());
        self
    }

    /// Sets the largest SSE event a subscription accepts, in bytes.
    #[must_use]
    pub fn max_sse_event_bytes(mut self, bytes: usize) -> Self {
        self.max_sse_event_bytes = bytes;
        self
    }

    /// Sets the largest response body a query or mutation reads, in bytes (see the field).
    #[must_use]
    pub fn max_response_bytes(mut self, bytes: usize) -> Self {
        self.max_response_bytes = bytes;
        self
    }

    /// Sets the schema budget of an import, in schema nodes (see
    /// [`max_schema_nodes`](Self::max_schema_nodes)).
    #[must_use]
    pub fn max_schema_nodes(mut self, nodes: usize) -> Self {
        self.max_schema_nodes = Some(nodes);
        self
    }

    /// Chooses what happens to the API's replies (see [`Normalization`]).
    #[must_use]
    pub fn normalization(mut self, normalization: Normalization) -> Self {
        self.normalization = normalization;
        self
    }

    /// Sets how dropped SSE subscriptions are resumed (see [`SseReconnect`]).
    #[must_use]
    pub fn sse_reconnect(mut self, reconnect: SseReconnect) -> Self {
        self.sse_reconnect = reconnect;
        self
    }

    /// Uses this HTTP client (connection pool, TLS and proxy settings, redirects) for every
    /// request, in place of [`default_client`]'s.
    #[must_use]
    pub fn client(mut self, client: reqwest::Client) -> Self {
        self.client = Some(client);
        self
    }
}

/// One credential, applied the way the security scheme it is matched to says.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Credential {
    /// A token: `Authorization: Bearer <token>` for `http`/`bearer`, `oauth2` and
    /// `openIdConnect` schemes; the key itself for `apiKey` schemes.
    Bearer(String),
    /// A user and password: `Authorization: Basic base64(user:password)`.
    Basic {
        /// The user name.
        username: String,
        /// The password.
        password: String,
    },
    /// An API key: sent where the `apiKey` scheme says (header, query or cookie); as a bearer
    /// token for token schemes.
    ApiKey(String),
}

impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print secrets.
        f.write_str(match self {
            Self::Bearer(_) => "Credential::Bearer(***)",
            Self::Basic { .. } => "Credential::Basic(***)",
            Self::ApiKey(_) => "Credential::ApiKey(***)",
        })
    }
}

/// Credentials for the imported API, matched to the document's security schemes.
///
/// A credential given for a scheme *by name* ([`OpenApiAuth::scheme`]) wins; otherwise the
/// kind decides: [`bearer`](Self::bearer) serves `http`/`bearer`, `oauth2` and `openIdConnect`
/// schemes, [`basic`](Self::basic) serves `http`/`basic`, [`api_key`](Self::api_key) serves
/// `apiKey` schemes. For each operation the first alternative of its `security` list whose
/// schemes are all satisfied is applied (an empty alternative `{}` is used only when no other
/// one is satisfied); when none is, the request goes out without credentials.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OpenApiAuth {
    pub(crate) schemes: BTreeMap<String, Credential>,
    pub(crate) bearer: Option<String>,
    pub(crate) basic: Option<(String, String)>,
    pub(crate) api_key: Option<String>,
}

impl OpenApiAuth {
    /// No credentials.
    pub fn new() -> Self {
        Self::default()
    }

    /// A bearer token for token schemes (`http`/`bearer`, `oauth2`, `openIdConnect`).
    #[must_use]
    pub fn bearer(mut self, token: impl Into<String>) -> Self {
        self.bearer = Some(token.into());
        self
    }

    /// A user and password for `http`/`basic` schemes.
    #[must_use]
    pub fn basic(mut self, username: impl Into<String>, password: impl Into<String>) -> Self {
        self.basic = Some((username.into(), password.into()));
        self
    }

    /// A key for `apiKey` schemes (placed in the header, query or cookie the scheme names).
    #[must_use]
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(key.into());
        self
    }

    /// A credential for the security scheme named `name` in `components/securitySchemes`.
    #[must_use]
    pub fn scheme(mut self, name: impl Into<String>, credential: Credential) -> Self {
        self.schemes.insert(name.into(), credential);
        self
    }
}

/// The most redirects the default client follows for one request.
pub const DEFAULT_MAX_REDIRECTS: usize = crate::redirects::MAX_REDIRECTS;

/// The HTTP client of an import made without [`OpenApiOptions::client`]: reqwest's default,
/// but a redirect is followed only while it stays on the origin (scheme, host and port) the
/// request was sent to, at most [`DEFAULT_MAX_REDIRECTS`] in a row. A redirect to another
/// origin is the call's answer, not followed: reqwest leaves out only `Authorization` and
/// cookies when it follows one elsewhere, and would send the import's API key header, its
/// `headers` and the operation's own parameters to wherever the API points it.
pub fn default_client() -> reqwest::Client {
    crate::redirects::client(
        reqwest::Client::builder(),
        crate::redirects::Follow::Any,
        "OpenAPI import's HTTP client",
    )
}
