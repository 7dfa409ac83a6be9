//! The configuration file: its TOML shape ([`Config`]), read with [`Config::load`] or
//! [`Config::parse`] and checked as a whole ([`Config::check`]) so that a mistake is a
//! [`ConfigError`] naming what was wrong before anything starts.

use crate::error::ConfigError;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;

/// The whole configuration.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Where the gateway listens (`127.0.0.1:8080` unless given; `--addr` overrides it).
    #[serde(default)]
    pub listen: Option<String>,
    /// The name of the served API (OpenAPI title, MCP server name).
    #[serde(default = "default_name")]
    pub name: String,
    /// How callers sign in.
    pub sign_in: SignIn,
    /// The APIs and MCP servers served.
    #[serde(default)]
    pub sources: Vec<Source>,
    /// Who may call what, and how often.
    #[serde(default)]
    pub rules: Vec<Rule>,
}

fn default_name() -> String {
    "gateway".to_owned()
}

/// A secret: given in the file (`{ value = "..." }`) or read from the environment
/// (`{ env = "NAME" }`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub enum Secret {
    /// The secret itself.
    Value(String),
    /// The environment variable holding it.
    Env(String),
}

impl Secret {
    /// The secret's value; `what` names it in the error when its variable is not set.
    pub fn resolve(&self, what: &str) -> Result<String, ConfigError> {
        match self {
            Secret::Value(value) => Ok(value.clone()),
            Secret::Env(var) => std::env::var(var).map_err(|_| ConfigError::MissingEnv {
                var: var.clone(),
                what: what.to_owned(),
            }),
        }
    }
}

/// How callers sign in: API keys or an OpenID provider's access tokens.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SignIn {
    /// API keys, sent as `x-api-key: <key>` or `Authorization: Bearer <key>`.
    #[serde(default)]
    pub api_keys: Option<Vec<ApiKey>>,
    /// An OpenID provider.
    #[serde(default)]
    pub oidc: Option<OidcSignIn>,
}

/// One API key and who it is.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApiKey {
    /// The caller's identity.
    pub id: String,
    /// The key.
    pub key: Secret,
    /// The caller's scopes.
    #[serde(default)]
    pub scopes: Vec<String>,
    /// The caller's roles.
    #[serde(default)]
    pub roles: Vec<String>,
}

/// Sign-in with an OpenID provider.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OidcSignIn {
    /// The issuer URL.
    pub issuer: String,
    /// Where clients reach the gateway: tokens must be for `<public_url>/api` or `/mcp`.
    pub public_url: String,
    /// The claim holding roles, when the provider sends some.
    #[serde(default)]
    pub roles_claim: Option<String>,
}

/// One API or MCP server.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Source {
    /// The namespace of its operations (`<namespace>.<name>`).
    pub namespace: String,
    /// An OpenAPI document: a URL (`http://`, `https://`) or a file.
    #[serde(default)]
    pub openapi: Option<String>,
    /// Where an OpenAPI source's requests go, instead of the document's servers.
    #[serde(default)]
    pub base_url: Option<String>,
    /// An MCP server started as a child process (stdio): the program and its arguments.
    #[serde(default)]
    pub mcp_command: Option<Vec<String>>,
    /// Environment variables of the child process.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// An MCP server over Streamable HTTP.
    #[serde(default)]
    pub mcp_url: Option<String>,
    /// A bearer token sent to the source.
    #[serde(default)]
    pub bearer: Option<Secret>,
    /// Headers sent to the source with every request (an API key header, ...).
    #[serde(default)]
    pub headers: BTreeMap<String, Secret>,
}

/// Where a source is, once checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location<'a> {
    /// An OpenAPI document (URL or file).
    OpenApi(&'a str),
    /// An MCP server started as a child process.
    McpCommand(&'a [String]),
    /// An MCP server over Streamable HTTP.
    McpUrl(&'a str),
}

impl Source {
    /// The one location the source gives.
    pub fn location(&self) -> Result<Location<'_>, ConfigError> {
        let mut given = Vec::new();
        if let Some(document) = &self.openapi {
            given.push(("openapi", Location::OpenApi(document)));
        }
        if let Some(command) = self.mcp_command.as_deref().filter(|c| !c.is_empty()) {
            given.push(("mcp_command", Location::McpCommand(command)));
        }
        if let Some(url) = &self.mcp_url {
            given.push(("mcp_url", Location::McpUrl(url)));
        }
        if given.len() == 1 {
            return Ok(given.remove(0).1);
        }
        let keys: Vec<&str> = given.iter().map(|(key, _)| *key).collect();
        Err(ConfigError::SourceLocation {
            namespace: self.namespace.clone(),
            given: if keys.is_empty() {
                "none".to_owned()
            } else {
                keys.join(" and ")
            },
        })
    }
}

/// Who may call a namespace or one operation, and how often.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    /// Every operation of a source.
    #[serde(default)]
    pub namespace: Option<String>,
    /// One operation, by id (`<namespace>.<name>`).
    #[serde(default)]
    pub operation: Option<String>,
    /// `"public"` (anyone) or `"internal"` (no caller from outside); otherwise the scopes
    /// and roles decide.
    #[serde(default)]
    pub access: Option<AccessKind>,
    /// Scopes the caller must all hold.
    #[serde(default)]
    pub scopes: Vec<String>,
    /// Roles of which the caller must hold one.
    #[serde(default)]
    pub roles: Vec<String>,
    /// A budget of calls.
    #[serde(default)]
    pub rate_limit: Option<RateLimitConfig>,
}

/// The named access rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AccessKind {
    /// Anyone may call.
    Public,
    /// No caller from outside may call.
    Internal,
}

/// `calls` per `seconds`, per caller (or shared by every caller with `per_caller = false`).
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RateLimitConfig {
    /// Calls allowed in one period.
    pub calls: u32,
    /// The period, in seconds.
    pub seconds: u64,
    /// One budget per caller (the default) or one for everyone.
    #[serde(default = "yes")]
    pub per_caller: bool,
}

fn yes() -> bool {
    true
}

impl Config {
    /// Reads and checks the file at `path`.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_owned(),
            source,
        })?;
        Self::parse(&text)
    }

    /// Parses and checks TOML text.
    pub fn parse(text: &str) -> Result<Self, ConfigError> {
        let config: Self = toml::from_str(text).map_err(|error| ConfigError::Parse {
            message: error.to_string(),
        })?;
        config.check()?;
        Ok(config)
    }

    /// The listening address, `override_addr` first.
    pub fn listen_addr(
        &self,
        override_addr: Option<&str>,
    ) -> Result<std::net::SocketAddr, ConfigError> {
        let value = override_addr
            .or(self.listen.as_deref())
            .unwrap_or("127.0.0.1:8080");
        value.parse().map_err(|_| ConfigError::Listen {
            value: value.to_owned(),
        })
    }

    /// Checks everything that can be checked without starting anything.
    pub fn check(&self) -> Result<(), ConfigError> {
        crate::check::check(self)
    }
}
