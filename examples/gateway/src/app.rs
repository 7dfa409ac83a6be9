//! The served surface: the gateway's one registry under `/api` (HTTP + OpenAPI + SSE) and
//! `/mcp` (MCP Streamable HTTP) in one axum app, behind the configured sign-in, with the
//! configured rate limits as registry middleware (one budget per caller on every edge).

use crate::config::{Config, SignIn};
use crate::error::GatewayError;
use crate::sign_in::{ApiKeys, api_key_auth, oidc_authenticator};
use axum::Router;
use axum::middleware;
use axum::routing::get;
use opkit::OperationRegistry;
use opkit::middleware::{RateLimit, RateLimitKey, Scope};
use opkit_adapters::http_server::HttpServer;
use opkit_adapters::mcp_server::McpServer;
use std::time::Duration;

/// Adds a rate limit per rule that gives one, scoped to the rule's namespace or operation.
pub fn add_rate_limits(config: &Config, registry: &OperationRegistry) {
    for rule in &config.rules {
        let Some(limit) = rule.rate_limit else {
            continue;
        };
        let scope = match (&rule.namespace, &rule.operation) {
            (Some(namespace), _) => Scope::namespace(namespace.clone()),
            (None, Some(operation)) => Scope::operation(operation.clone()),
            (None, None) => continue,
        };
        let key = if limit.per_caller {
            RateLimitKey::Identity
        } else {
            RateLimitKey::Global
        };
        let policy = RateLimit::new(limit.calls, Duration::from_secs(limit.seconds)).keyed_by(key);
        registry.add_middleware(scope, policy);
    }
}

/// The whole app: `/health`, `/api` and `/mcp`, signed in as the configuration says.
pub fn router(config: &Config, registry: &OperationRegistry) -> Result<Router, GatewayError> {
    let http = HttpServer::new(registry.clone())
        .info(config.name.clone(), env!("CARGO_PKG_VERSION"))
        .explorer("/explorer")
        .explorer_mcp_link("/mcp");
    let mcp = McpServer::new(registry.clone()).name(config.name.clone());
    let base = Router::new().route("/health", get(|| async { "ok" }));
    match &config.sign_in {
        SignIn {
            oidc: Some(oidc), ..
        } => {
            let api_auth = oidc_authenticator(oidc, "/api", &config.name)?;
            let mcp_auth = oidc_authenticator(oidc, "/mcp", &config.name)?;
            let api_metadata = api_auth.protected_resource().router();
            let mcp = mcp.authenticator(mcp_auth);
            Ok(base
                .nest("/api", http.authenticator(api_auth).router())
                .merge(api_metadata)
                .merge(mcp.well_known_router())
                .nest("/mcp", mcp.router()))
        }
        SignIn { api_keys, .. } => {
            let keys = ApiKeys::from_config(api_keys.as_deref().unwrap_or_default())?;
            Ok(base
                .nest("/api", http.router())
                .nest("/mcp", mcp.router())
                .layer(middleware::from_fn_with_state(keys, api_key_auth)))
        }
    }
}
