//! The axum application: routes of its own (`/health`, `/whoami`, using the app's own
//! `State`), its own API-key middleware, and opkit's HTTP and MCP routes mounted at `/api`
//! and `/mcp`.

use axum::extract::{Request, State};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use opkit::{Identity, OperationRegistry};
use opkit_adapters::http_server::HttpServer;
use opkit_adapters::mcp_server::McpServer;
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
