//! Authorization server discovery: the OpenID Connect (`/.well-known/openid-configuration`)
//! or OAuth (RFC 8414, `/.well-known/oauth-authorization-server`) metadata of an issuer.

use super::error::FetchError;
use super::fetch::Fetcher;
use serde_json::Value;

/// Where an issuer's metadata is looked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Discovery {
    /// OpenID Connect discovery first, then RFC 8414 (what MCP clients do too).
    #[default]
    Auto,
    /// Only `<issuer>/.well-known/openid-configuration`.
    OpenIdConnect,
    /// Only RFC 8414: `<origin>/.well-known/oauth-authorization-server<issuer path>`.
    OAuth,
}

/// The parts of an authorization server's metadata that opkit uses.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct AuthorizationServerMetadata {
    /// `issuer`: the same as the configured issuer (checked).
    pub issuer: String,
    /// `jwks_uri`: the signing keys.
    pub jwks_uri: Option<String>,
    /// `token_endpoint`: where clients get tokens.
    pub token_endpoint: Option<String>,
    /// `introspection_endpoint` (RFC 7662).
    pub introspection_endpoint: Option<String>,
    /// `scopes_supported`.
    pub scopes_supported: Vec<String>,
    /// The document as fetched.
    pub document: Value,
}

impl AuthorizationServerMetadata {
    /// The metadata in `document`, checked against `issuer` (RFC 8414 §3.3: they must be
    /// the same string).
    pub fn from_document(issuer: &str, document: Value) -> Result<Self, FetchError> {
        let found = document
            .get("issuer")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if found != issuer {
            return Err(FetchError::IssuerMismatch {
                expected: issuer.to_owned(),
                found: found.to_owned(),
            });
        }
        let text = |field: &str| {
            document
                .get(field)
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        Ok(Self {
            issuer: issuer.to_owned(),
            jwks_uri: text("jwks_uri"),
            token_endpoint: text("token_endpoint"),
            introspection_endpoint: text("introspection_endpoint"),
            scopes_supported: document
                .get("scopes_supported")
                .and_then(Value::as_array)
                .map(|scopes| {
                    scopes
                        .iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default(),
            document,
        })
    }
}

/// The URLs at which `issuer`'s metadata may be, in the order they are tried.
pub(crate) fn well_known_urls(issuer: &str, discovery: Discovery) -> Vec<String> {
    let openid = format!(
        "{}/.well-known/openid-configuration",
        issuer.trim_end_matches('/')
    );
    let oauth = url::Url::parse(issuer).ok().map(|url| {
        let path = url.path().trim_end_matches('/');
        format!(
            "{}/.well-known/oauth-authorization-server{path}",
            url.origin().ascii_serialization()
        )
    });
    match discovery {
        Discovery::OpenIdConnect => vec![openid],
        Discovery::OAuth => oauth.into_iter().collect(),
        Discovery::Auto => std::iter::once(openid).chain(oauth).collect(),
    }
}

/// Fetches and checks `issuer`'s metadata.
pub(crate) async fn discover(
    fetcher: &Fetcher,
    issuer: &str,
    discovery: Discovery,
) -> Result<AuthorizationServerMetadata, FetchError> {
    let urls = well_known_urls(issuer, discovery);
    for url in &urls {
        if let Some(document) = fetcher.get_json(url).await? {
            return AuthorizationServerMetadata::from_document(issuer, document);
        }
    }
    Err(FetchError::NotDiscovered {
        issuer: issuer.to_owned(),
        tried: urls.join(", "),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn well_known_urls_follow_oidc_and_rfc_8414() {
        assert_eq!(
            well_known_urls("https://id.example/realms/a", Discovery::Auto),
            [
                "https://id.example/realms/a/.well-known/openid-configuration",
                "https://id.example/.well-known/oauth-authorization-server/realms/a",
            ]
        );
        assert_eq!(
            well_known_urls("https://id.example/", Discovery::OAuth),
            ["https://id.example/.well-known/oauth-authorization-server"]
        );
    }

    #[test]
    fn a_document_for_another_issuer_is_refused() {
        let error = AuthorizationServerMetadata::from_document(
            "https://a.example",
            serde_json::json!({"issuer": "https://b.example"}),
        )
        .unwrap_err();
        assert!(matches!(error, FetchError::IssuerMismatch { .. }));
    }
}
