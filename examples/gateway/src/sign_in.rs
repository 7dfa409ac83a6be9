//! How callers sign in: API keys ([`ApiKeys`], an axum middleware that puts the caller's
//! [`Identity`] where opkit's servers find it) or an OpenID provider's access tokens
//! ([`oidc_authenticator`], opkit's OAuth resource server).

use crate::config::{ApiKey, OidcSignIn};
use crate::error::{ConfigError, GatewayError};
use axum::Json;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use opkit::Identity;
use opkit_adapters::oauth::OAuthAuthenticator;
use serde_json::json;
use std::collections::HashMap;
use std::sync::Arc;

/// The header that carries an API key (`Authorization: Bearer <key>` works too).
pub const API_KEY_HEADER: &str = "x-api-key";

/// The API keys and who each one is.
#[derive(Debug, Clone, Default)]
pub struct ApiKeys {
    keys: Arc<HashMap<String, Identity>>,
}

impl ApiKeys {
    /// The keys of the configuration, their secrets read.
    pub fn from_config(keys: &[ApiKey]) -> Result<Self, ConfigError> {
        let mut table = HashMap::with_capacity(keys.len());
        for key in keys {
            let secret = key.key.resolve(&format!("the API key of `{}`", key.id))?;
            let identity = Identity::new(&key.id)
                .with_scopes(key.scopes.iter().cloned())
                .with_roles(key.roles.iter().cloned());
            table.insert(secret, identity);
        }
        Ok(Self {
            keys: Arc::new(table),
        })
    }

    fn presented(request: &Request) -> Option<Option<&str>> {
        let headers = request.headers();
        if let Some(value) = headers.get(API_KEY_HEADER) {
            return Some(value.to_str().ok());
        }
        let value = headers.get(http::header::AUTHORIZATION)?;
        Some(value.to_str().ok().and_then(|v| v.strip_prefix("Bearer ")))
    }
}

/// The middleware: a known key puts its identity into the request; an unknown one is
/// refused with `401`; none leaves the request anonymous (public operations answer it).
pub async fn api_key_auth(
    State(keys): State<ApiKeys>,
    mut request: Request,
    next: Next,
) -> Response {
    let Some(presented) = ApiKeys::presented(&request) else {
        return next.run(request).await;
    };
    match presented.and_then(|key| keys.keys.get(key)).cloned() {
        Some(identity) => {
            request.extensions_mut().insert(identity);
            next.run(request).await
        }
        None => (
            http::StatusCode::UNAUTHORIZED,
            Json(json!({"error": "unknown API key"})),
        )
            .into_response(),
    }
}

/// The authenticator of the resource `<public_url><path>` (`/api` or `/mcp`).
pub fn oidc_authenticator(
    oidc: &OidcSignIn,
    path: &str,
    name: &str,
) -> Result<OAuthAuthenticator, GatewayError> {
    let resource = format!("{}{path}", oidc.public_url.trim_end_matches('/'));
    let mut builder =
        OAuthAuthenticator::builder(oidc.issuer.clone(), resource).resource_name(name.to_owned());
    if let Some(claim) = &oidc.roles_claim {
        builder = builder.roles_claim(claim.clone());
    }
    Ok(builder.build()?)
}
