//! The axum application: routes of its own (`/health`, `/whoami`, using the app's own
//! `State`), its own API-key middleware — or, with [`app_with_oidc`], OAuth access tokens of
//! an OpenID provider — and opkit's HTTP and MCP routes mounted at `/api` and `/mcp`.

use axum::extract::{Request, State};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use opkit::{Identity, OperationRegistry};
use opkit_adapters::http_server::HttpServer;
use opkit_adapters::mcp_server::McpServer;
use opkit_adapters::oauth::{OAuthAuthenticator, OAuthConfigError};
use serde_json::json;
use std::collections::HashMap;
use std::sync::Arc;

/// The header that carries an API key.
pub const API_KEY_HEADER: &str = "x-api-key";

/// The application's API keys and who each one is.
#[derive(Debug, Clone, Default)]
pub struct ApiKeys {
    keys: Arc<HashMap<String, Identity>>,
}

impl ApiKeys {
    /// The table `key -> identity`.
    pub fn new(keys: impl IntoIterator<Item = (String, Identity)>) -> Self {
        Self {
            keys: Arc::new(keys.into_iter().collect()),
        }
    }

    /// Reads `key=id[:scope,scope..]` entries separated by `;`.
    pub fn parse(text: &str) -> Self {
        Self::new(
            text.split(';')
                .filter(|entry| !entry.is_empty())
                .filter_map(|entry| {
                    let (key, who) = entry.split_once('=')?;
                    let (id, scopes) = who.split_once(':').unwrap_or((who, ""));
                    let scopes = scopes.split(',').filter(|scope| !scope.is_empty());
                    Some((key.to_owned(), Identity::new(id).with_scopes(scopes)))
                }),
        )
    }

    fn get(&self, key: &str) -> Option<&Identity> {
        self.keys.get(key)
    }
}

/// The application's own state, used by its own routes.
#[derive(Clone)]
struct AppState {
    name: String,
}

/// The application's authentication: a known `x-api-key` puts its [`Identity`] into the
/// request's extensions (where opkit's servers find it); an unknown one is refused here
/// with `401`; none leaves the request anonymous.
async fn api_key_auth(State(keys): State<ApiKeys>, mut request: Request, next: Next) -> Response {
    let Some(value) = request.headers().get(API_KEY_HEADER) else {
        return next.run(request).await;
    };
    let identity = value.to_str().ok().and_then(|key| keys.get(key)).cloned();
    match identity {
        Some(identity) => {
            request.extensions_mut().insert(identity);
            next.run(request).await
        }
        None => (
            http::StatusCode::UNAUTHORIZED,
            Json(json!({"error": format!("unknown API key in `{API_KEY_HEADER}`")})),
        )
            .into_response(),
    }
}

async fn health() -> &'static str {
    "ok"
}

/// Who the app thinks is calling: the same identity opkit's routes see.
async fn whoami(State(app): State<AppState>, request: Request) -> Json<serde_json::Value> {
    let who = request
        .extensions()
        .get::<Identity>()
        .map(|identity| identity.id.clone());
    Json(json!({"app": app.name, "caller": who}))
}

/// The whole application: its own routes, opkit under `/api` (HTTP + OpenAPI + SSE) and
/// `/mcp` (MCP Streamable HTTP), all behind the app's API-key middleware.
///
/// # Panics
///
/// When the registry lacks application state its operations read (a startup error).
pub fn app(registry: &OperationRegistry, keys: ApiKeys, name: &str) -> Router {
    let http = HttpServer::new(registry.clone())
        .info("notes", env!("CARGO_PKG_VERSION"))
        .explorer("/explorer")
        .explorer_mcp_link("/mcp");
    let mcp = McpServer::new(registry.clone()).name("notes");
    Router::new()
        .route("/health", get(health))
        .route("/whoami", get(whoami))
        .with_state(AppState {
            name: name.to_owned(),
        })
        .nest("/api", http.router())
        .nest("/mcp", mcp.router())
        .layer(middleware::from_fn_with_state(keys, api_key_auth))
}

/// Sign-in with an OpenID provider instead of API keys.
#[derive(Debug, Clone)]
pub struct Oidc {
    /// The provider's issuer URL (its discovery document is at
    /// `<issuer>/.well-known/openid-configuration`).
    pub issuer: String,
    /// Where clients reach this app (`http://127.0.0.1:3000`): the API's resource is
    /// `<public_url>/api`, the MCP endpoint's `<public_url>/mcp` — what tokens must name as
    /// their audience (the `resource` a client asks its token for).
    pub public_url: String,
    /// The token claim holding roles, when the provider sends some (`roles`,
    /// `realm_access.roles`).
    pub roles_claim: Option<String>,
}

impl Oidc {
    fn authenticator(&self, path: &str) -> Result<OAuthAuthenticator, OAuthConfigError> {
        let resource = format!("{}{path}", self.public_url.trim_end_matches('/'));
        let mut builder = OAuthAuthenticator::builder(self.issuer.clone(), resource)
            .scopes_supported(["notes:admin"])
            .resource_name("notes");
        if let Some(claim) = &self.roles_claim {
            builder = builder.roles_claim(claim.clone());
        }
        builder.build()
    }
}

/// [`app`] signed in through an OpenID provider instead of API keys: `/api` and `/mcp` take
/// `Authorization: Bearer <access token>` issued for their resource (see [`Oidc`]), publish
/// their Protected Resource Metadata at `/.well-known/oauth-protected-resource/api` and
/// `/.well-known/oauth-protected-resource/mcp`, and point clients there from their `401`s.
/// An MCP client that follows the MCP authorization spec signs in by itself.
pub fn app_with_oidc(
    registry: &OperationRegistry,
    oidc: &Oidc,
    name: &str,
) -> Result<Router, OAuthConfigError> {
    let api_auth = oidc.authenticator("/api")?;
    let mcp_auth = oidc.authenticator("/mcp")?;
    let api_metadata = api_auth.protected_resource().router();
    let http = HttpServer::new(registry.clone())
        .info("notes", env!("CARGO_PKG_VERSION"))
        .explorer("/explorer")
        .explorer_mcp_link("/mcp")
        .authenticator(api_auth);
    let mcp = McpServer::new(registry.clone())
        .name("notes")
        .authenticator(mcp_auth);
    Ok(Router::new()
        .route("/health", get(health))
        .route("/whoami", get(whoami))
        .with_state(AppState {
            name: name.to_owned(),
        })
        .nest("/api", http.router())
        .nest("/mcp", mcp.router())
        .merge(api_metadata)
        .merge(mcp.well_known_router()))
}
