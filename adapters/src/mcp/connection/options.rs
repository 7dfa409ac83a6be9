//! [`McpOptions`] and [`McpLifecycle`]: how an MCP server is imported and connected to.

use std::fmt;

/// Which MCP lifecycle the client uses (see the [module docs](crate::mcp#protocol-eras)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum McpLifecycle {
    /// Probe `server/discover` (2026-07-28) and fall back to the `initialize` handshake.
    #[default]
    Auto,
    /// The `initialize` handshake only (protocol revisions up to 2025-11-25).
    Legacy,
    /// `server/discover` only (2026-07-28, stateless); a legacy server is an error.
    Modern,
}

/// How to import an MCP server: the namespace of its operations and connection settings.
///
/// ```
/// use opkit_adapters::mcp::{McpLifecycle, McpOptions};
/// let options = McpOptions::new("github")
///     .bearer_token("ghp_secret")
///     .header("X-Team", "tools")
///     .lifecycle(McpLifecycle::Legacy)
///     .auto_refresh(true);
/// assert_eq!(options.namespace, "github");
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub struct McpOptions {
    /// Namespace of the imported operations (`seg(.seg)*`, each `[A-Za-z_][A-Za-z0-9_]*`).
    pub namespace: String,
    /// A name for the server in logs, errors and `spec.origin` (default: the command or URL).
    pub label: Option<String>,
    /// Extra HTTP headers sent with every Streamable HTTP request.
    pub headers: Vec<(String, String)>,
    /// Bearer token for Streamable HTTP (`Authorization: Bearer <token>`).
    pub bearer_token: Option<String>,
    /// Client-credentials access tokens for Streamable HTTP (feature `oauth-client`), instead
    /// of a fixed [`bearer_token`](Self::bearer_token): see [`McpOptions::oauth`].
    #[cfg(feature = "oauth-client")]
    pub oauth: Option<std::sync::Arc<crate::oauth::ClientCredentials>>,
    /// Sign-in with a person in the loop for Streamable HTTP (feature `oauth-client`): see
    /// [`McpOptions::sign_in`]. Used when [`oauth`](Self::oauth) is not set.
    #[cfg(feature = "oauth-client")]
    pub sign_in: Option<std::sync::Arc<crate::oauth::AuthorizationCode>>,
    /// Which protocol era to speak.
    pub lifecycle: McpLifecycle,
    /// Re-list the tools, resources and prompts and update the registries when the server
    /// says one of its lists changed.
    pub auto_refresh: bool,
    /// Let a stdio server's stderr through to this process's stderr (default: to `tracing`).
    pub inherit_stderr: bool,
    /// Read a lone JSON text block as the data when a result has no `structuredContent`
    /// (default `false`; see [`McpOptions::parse_json_text`]).
    pub parse_json_text: bool,
    /// Who may call the imported operations on the application's edges: internal (no one
    /// from outside) unless given (see [`McpOptions::access`]).
    pub access: crate::ImportAccess,
}

impl fmt::Debug for McpOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let header_names: Vec<&str> = self.headers.iter().map(|(name, _)| name.as_str()).collect();
        f.debug_struct("McpOptions")
            .field("namespace", &self.namespace)
            .field("label", &self.label)
            .field("headers", &header_names)
            .field(
                "bearer_token",
                &self.bearer_token.as_ref().map(|_| "<redacted>"),
            )
            .field("lifecycle", &self.lifecycle)
            .field("auto_refresh", &self.auto_refresh)
            .field("inherit_stderr", &self.inherit_stderr)
            .field("parse_json_text", &self.parse_json_text)
            .field("access", &self.access)
            .finish()
    }
}

impl McpOptions {
    /// Options with the operations' namespace and defaults for everything else.
    pub fn new(namespace: impl Into<String>) -> Self {
        Self {
            namespace: namespace.into(),
            label: None,
            headers: Vec::new(),
            bearer_token: None,
            #[cfg(feature = "oauth-client")]
            oauth: None,
            #[cfg(feature = "oauth-client")]
            sign_in: None,
            lifecycle: McpLifecycle::Auto,
            auto_refresh: false,
            inherit_stderr: false,
            parse_json_text: false,
            access: crate::ImportAccess::new(),
        }
    }

    /// Names the server in logs, errors and `spec.origin`.
    #[must_use]
    pub fn label(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }

    /// Adds an HTTP header sent with every request (Streamable HTTP only).
    #[must_use]
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Sets the bearer token (Streamable HTTP only); give the token without `Bearer `.
    #[must_use]
    pub fn bearer_token(mut self, token: impl Into<String>) -> Self {
        self.bearer_token = Some(token.into());
        self
    }

    /// Signs in with the client-credentials grant (feature `oauth-client`): every Streamable
    /// HTTP request carries an access token from `credentials` — for the server's URL as the
    /// resource (RFC 8707) unless the credentials name another — fetched again before it
    /// expires, and a request answered with `401` is retried once with a new token. Takes
    /// the place of [`bearer_token`](Self::bearer_token).
    ///
    /// ```
    /// use opkit_adapters::mcp::McpOptions;
    /// use opkit_adapters::oauth::ClientCredentials;
    /// let credentials =
    ///     ClientCredentials::new("https://id.example", "notes-bot", "s3cret").unwrap().scope("notes:read");
    /// let options = McpOptions::new("notes").oauth(credentials);
    /// ```
    #[cfg(feature = "oauth-client")]
    #[must_use]
    pub fn oauth(mut self, credentials: crate::oauth::ClientCredentials) -> Self {
        self.oauth = Some(std::sync::Arc::new(credentials));
        self
    }

    /// Signs in with the OAuth 2.1 authorization-code flow when the server asks (feature
    /// `oauth-client`): at its first `401` the import discovers the authorization server,
    /// registers, has `sign_in`'s callback take the user through the authorization URL, and
    /// sends the request again with the token; it refreshes the token, signs in again when the
    /// server refuses it, and steps the scopes up on `403 insufficient_scope`
    /// ([`AuthorizationCode`](crate::oauth::AuthorizationCode) says how). Takes the place of
    /// [`bearer_token`](Self::bearer_token); [`oauth`](Self::oauth) wins over it.
    ///
    /// ```
    /// use opkit_adapters::mcp::McpOptions;
    /// use opkit_adapters::oauth::AuthorizationCode;
    /// let sign_in = AuthorizationCode::new("http://127.0.0.1:8765/callback", |url: String| async move {
    ///     Err(format!("open {url} in a browser").into())
    /// })
    /// .unwrap();
    /// let options = McpOptions::new("notes").sign_in(sign_in);
    /// ```
    #[cfg(feature = "oauth-client")]
    #[must_use]
    pub fn sign_in(mut self, sign_in: crate::oauth::AuthorizationCode) -> Self {
        self.sign_in = Some(std::sync::Arc::new(sign_in));
        self
    }

    /// Who may call every imported operation that has no rule of its own (see
    /// [`ImportAccess`](crate::ImportAccess)): the tools run with this connection's
    /// credentials (its token, its OAuth client, the child process's privileges), so until a
    /// rule is given they are internal — in-process code calls them, every edge refuses
    /// them. An opkit server's own rule (`_meta["opkit/access"]`) is kept over this one.
    ///
    /// ```
    /// use opkit::AccessRule;
    /// use opkit_adapters::mcp::McpOptions;
    /// let options = McpOptions::new("github")
    ///     .access(AccessRule::scopes(["github:read"]))
    ///     .operation_access("delete_repo", AccessRule::roles(["admin"]));
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

    /// Chooses the protocol era.
    #[must_use]
    pub fn lifecycle(mut self, lifecycle: McpLifecycle) -> Self {
        self.lifecycle = lifecycle;
        self
    }

    /// Refreshes automatically on `notifications/tools/list_changed`.
    #[must_use]
    pub fn auto_refresh(mut self, enabled: bool) -> Self {
        self.auto_refresh = enabled;
        self
    }

    /// Passes a stdio server's stderr through instead of logging it with `tracing`.
    #[must_use]
    pub fn inherit_stderr(mut self, enabled: bool) -> Self {
        self.inherit_stderr = enabled;
        self
    }

    /// Many servers send their data `JSON.stringify`'d in a text block instead of
    /// `structuredContent`. With this on, a successful result without `structuredContent`
    /// whose only block is a text block holding JSON has that JSON as its data, cast to the
    /// tool's output schema when it has one; `meta.content` keeps the original block. Off by
    /// default: a text that happens to be JSON is then still text.
    #[must_use]
    pub fn parse_json_text(mut self, enabled: bool) -> Self {
        self.parse_json_text = enabled;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_debug_redacts_secrets() {
        let options = McpOptions::new("ns")
            .bearer_token("s3cret")
            .header("X-Api-Key", "k3y");
        let debug = format!("{options:?}");
        assert!(
            !debug.contains("s3cret") && !debug.contains("k3y"),
            "{debug}"
        );
        assert!(debug.contains("X-Api-Key"));
    }
}
