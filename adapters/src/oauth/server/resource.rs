//! This server as an OAuth protected resource: its metadata document (RFC 9728), where that
//! document is served, and the `WWW-Authenticate` challenges that point clients to it.

use crate::oauth::error::OAuthConfigError;
use crate::oauth::fetch::parse_url;
use axum::Router;
use http::HeaderValue;
use serde_json::{Value, json};
use url::Url;

/// The well-known path of Protected Resource Metadata (RFC 9728 §3).
pub const WELL_KNOWN_PATH: &str = crate::http_server::well_known::PROTECTED_RESOURCE_PATH;

/// A protected resource's identity and what its metadata document says: the resource's URI
/// (what tokens must name as their audience), the authorization servers that issue them, and
/// the scopes it knows.
///
/// ```
/// use opkit_adapters::oauth::ProtectedResource;
/// let resource =
///     ProtectedResource::new("https://api.example/mcp", ["https://id.example"]).unwrap();
/// assert_eq!(
///     resource.metadata_url(),
///     "https://api.example/.well-known/oauth-protected-resource/mcp"
/// );
/// assert_eq!(resource.document()["authorization_servers"][0], "https://id.example");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtectedResource {
    /// The identifier as configured (what `aud` must hold).
    id: String,
    resource: Url,
    authorization_servers: Vec<String>,
    scopes_supported: Vec<String>,
    name: Option<String>,
    documentation: Option<String>,
}

impl ProtectedResource {
    /// The resource at `resource` (an absolute `http`/`https` URI without a fragment),
    /// protected by tokens of `authorization_servers` (issuer URLs).
    pub fn new<S: Into<String>>(
        resource: &str,
        authorization_servers: impl IntoIterator<Item = S>,
    ) -> Result<Self, OAuthConfigError> {
        let parsed = parse_url("resource", resource)?;
        if parsed.fragment().is_some() {
            return Err(OAuthConfigError::InvalidUrl {
                what: "resource",
                value: resource.to_owned(),
                reason: "a resource identifier has no fragment (RFC 8707)".to_owned(),
            });
        }
        Ok(Self {
            id: resource.to_owned(),
            resource: parsed,
            authorization_servers: authorization_servers.into_iter().map(Into::into).collect(),
            scopes_supported: Vec::new(),
            name: None,
            documentation: None,
        })
    }

    /// The scopes the resource knows (`scopes_supported`).
    #[must_use]
    pub fn scopes_supported<S: Into<String>>(
        mut self,
        scopes: impl IntoIterator<Item = S>,
    ) -> Self {
        self.scopes_supported = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// A name for people (`resource_name`).
    #[must_use]
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// A page describing the resource for developers (`resource_documentation`).
    #[must_use]
    pub fn documentation(mut self, url: impl Into<String>) -> Self {
        self.documentation = Some(url.into());
        self
    }

    /// The resource's URI, as tokens name it in `aud` (RFC 8707 resource indicator).
    pub fn resource(&self) -> &str {
        &self.id
    }

    /// The authorization servers (issuers).
    pub fn authorization_servers(&self) -> &[String] {
        &self.authorization_servers
    }

    /// The metadata document (RFC 9728 §2).
    pub fn document(&self) -> Value {
        let mut document = json!({
            "resource": self.resource(),
            "authorization_servers": self.authorization_servers,
            "bearer_methods_supported": ["header"],
        });
        if !self.scopes_supported.is_empty() {
            document["scopes_supported"] = json!(self.scopes_supported);
        }
        if let Some(name) = &self.name {
            document["resource_name"] = json!(name);
        }
        if let Some(documentation) = &self.documentation {
            document["resource_documentation"] = json!(documentation);
        }
        document
    }

    /// The path of the metadata document on the resource's host:
    /// `/.well-known/oauth-protected-resource` followed by the resource's path (RFC 9728 §3.1).
    pub fn metadata_path(&self) -> String {
        let path = self.resource.path().trim_end_matches('/');
        format!("{WELL_KNOWN_PATH}{path}")
    }

    /// The absolute URL of the metadata document (the `resource_metadata` of challenges).
    pub fn metadata_url(&self) -> String {
        format!(
            "{}{}",
            self.resource.origin().ascii_serialization(),
            self.metadata_path()
        )
    }

    /// The challenge of a `401`: `Bearer resource_metadata="…"`, with
    /// `error="invalid_token"` when a token was presented and refused (RFC 6750 §3).
    pub fn unauthorized_challenge(&self, refused: bool) -> HeaderValue {
        let metadata = quoted(&self.metadata_url());
        let text = if refused {
            format!("Bearer error=\"invalid_token\", resource_metadata={metadata}")
        } else {
            format!("Bearer resource_metadata={metadata}")
        };
        header_value(text)
    }

    /// The challenge of a `403` for a token that lacks scopes: `error="insufficient_scope"`
    /// and the `scope` the operation needs (RFC 6750 §3.1).
    pub fn insufficient_scope_challenge(&self, scopes: &[String]) -> HeaderValue {
        header_value(format!(
            "Bearer error=\"insufficient_scope\", scope={}, resource_metadata={}",
            quoted(&scopes.join(" ")),
            quoted(&self.metadata_url())
        ))
    }

    /// A route serving the metadata document at [`metadata_path`](Self::metadata_path) (the
    /// RFC 9728 location), to be merged at the root of the resource's host
    /// (`Router::merge`): for an application that mounts a server itself, or serves several
    /// resources on one host (each at its own path). The HTTP and MCP servers serve their
    /// authenticator's document by themselves (see each server's docs for where), at this path
    /// and at the bare [`WELL_KNOWN_PATH`] too.
    pub fn router(&self) -> Router {
        crate::http_server::well_known::protected_resource_router(self.document(), false)
    }
}

/// An RFC 7230 quoted-string (`"` and `\` escaped; other characters that cannot be in a
/// header are dropped).
fn quoted(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for character in text.chars() {
        match character {
            '"' | '\\' => {
                out.push('\\');
                out.push(character);
            }
            ' ' | '!'..='~' => out.push(character),
            _ => {}
        }
    }
    out.push('"');
    out
}

fn header_value(text: String) -> HeaderValue {
    HeaderValue::from_str(&text).unwrap_or_else(|_| HeaderValue::from_static("Bearer"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenges_point_to_the_metadata() {
        let resource = ProtectedResource::new("http://127.0.0.1:9/mcp", ["http://i"]).unwrap();
        assert_eq!(
            resource.unauthorized_challenge(true),
            "Bearer error=\"invalid_token\", resource_metadata=\"http://127.0.0.1:9/.well-known/oauth-protected-resource/mcp\""
        );
        assert_eq!(
            resource.insufficient_scope_challenge(&["a:b".into(), "c".into()]),
            "Bearer error=\"insufficient_scope\", scope=\"a:b c\", resource_metadata=\"http://127.0.0.1:9/.well-known/oauth-protected-resource/mcp\""
        );
        let root = ProtectedResource::new("https://api.example", ["http://i"]).unwrap();
        assert_eq!(root.metadata_path(), WELL_KNOWN_PATH);
    }

    #[test]
    fn a_resource_with_a_fragment_is_refused() {
        assert!(ProtectedResource::new("https://a.example/#x", ["http://i"]).is_err());
        assert!(ProtectedResource::new("ftp://a.example/", ["http://i"]).is_err());
    }
}
