//! The gateway's errors: [`ConfigError`] for a configuration that cannot be used (each
//! variant names what was wrong and where), [`GatewayError`] for a source or sign-in that
//! fails at start.

use std::path::PathBuf;

/// What is wrong with a configuration file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read the gateway configuration {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not TOML of the gateway's shape (the message names the key and line).
    #[error("the gateway configuration is not valid: {message}")]
    Parse {
        /// The TOML parser's message, with the line, column and key.
        message: String,
    },
    /// No `[[sources]]` entry.
    #[error("the gateway configuration lists no sources: add a `[[sources]]` entry")]
    NoSources,
    /// Two sources share a namespace.
    #[error("two sources use the namespace `{namespace}`: give each its own")]
    DuplicateNamespace {
        /// The namespace.
        namespace: String,
    },
    /// A namespace that is not a dotless identifier.
    #[error(
        "the namespace `{namespace}` is not an identifier (letters, digits, `_`, not starting with a digit)"
    )]
    BadNamespace {
        /// The namespace.
        namespace: String,
    },
    /// A source that gives not exactly one of `openapi`, `mcp_command`, `mcp_url`.
    #[error(
        "source `{namespace}` must give exactly one of `openapi`, `mcp_command`, `mcp_url` (it gives {given})"
    )]
    SourceLocation {
        /// The source's namespace.
        namespace: String,
        /// What it gives (`none`, or the keys).
        given: String,
    },
    /// A rule that names a namespace no source has.
    #[error(
        "rule {index} names `{name}`, but no source has the namespace `{namespace}` (sources: {known})"
    )]
    UnknownNamespace {
        /// The rule's position in `[[rules]]`, from 1.
        index: usize,
        /// The namespace or operation it names.
        name: String,
        /// The namespace looked for.
        namespace: String,
        /// The sources' namespaces.
        known: String,
    },
    /// A rule that names neither or both of `namespace` and `operation`.
    #[error("rule {index} must name exactly one of `namespace` and `operation`")]
    RuleTarget {
        /// The rule's position in `[[rules]]`, from 1.
        index: usize,
    },
    /// A rule that is both `public` and requires scopes or roles.
    #[error(
        "rule {index} (`{name}`) is `access = \"{access}\"` and also lists scopes or roles: pick one"
    )]
    ConflictingAccess {
        /// The rule's position in `[[rules]]`, from 1.
        index: usize,
        /// What it names.
        name: String,
        /// Its `access`.
        access: String,
    },
    /// A rate limit of zero calls or a zero period.
    #[error("rule {index} (`{name}`) has a rate limit of zero calls or zero seconds")]
    ZeroRateLimit {
        /// The rule's position in `[[rules]]`, from 1.
        index: usize,
        /// What it names.
        name: String,
    },
    /// A secret read from an environment variable that is not set.
    #[error("{what} is read from the environment variable `{var}`, which is not set")]
    MissingEnv {
        /// The variable.
        var: String,
        /// What the secret is for.
        what: String,
    },
    /// `[sign_in]` gives neither or both of `api_keys` and `oidc`.
    #[error("`[sign_in]` must give exactly one of `api_keys` and `oidc`")]
    SignIn,
    /// The listening address does not parse.
    #[error("`listen = \"{value}\"` is not a socket address (e.g. 127.0.0.1:8080)")]
    Listen {
        /// The value given.
        value: String,
    },
}

/// What stops the gateway from starting or refreshing.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GatewayError {
    /// The configuration.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// An OpenAPI source could not be imported.
    #[error("source `{namespace}`: {source}")]
    OpenApi {
        /// The source's namespace.
        namespace: String,
        /// Why.
        source: opkit_adapters::openapi::OpenApiError,
    },
    /// An MCP source could not be reached or listed.
    #[error("source `{namespace}`: {source}")]
    Mcp {
        /// The source's namespace.
        namespace: String,
        /// Why.
        source: opkit_adapters::mcp::McpError,
    },
    /// An operation could not be registered (two sources gave the same id).
    #[error("source `{namespace}`: {source}")]
    Registry {
        /// The source's namespace.
        namespace: String,
        /// Why.
        source: opkit::RegistryError,
    },
    /// The OIDC sign-in is not usable.
    #[error("sign-in: {0}")]
    OAuth(#[from] opkit_adapters::oauth::OAuthConfigError),
    /// The listening socket.
    #[error("cannot listen: {0}")]
    Io(#[from] std::io::Error),
}
