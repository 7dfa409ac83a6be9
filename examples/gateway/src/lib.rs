//! A gateway built with opkit: the OpenAPI APIs and MCP servers a TOML file lists, each
//! imported with its own credentials into one registry, served as one HTTP + OpenAPI + MCP
//! surface with one sign-in (API keys or an OpenID provider), the access rules and rate
//! limits of the file, and nothing imported callable from outside unless a rule says who
//! may.
//!
//! - [`config`]: the file's shape, [`check`]: its checks ([`error::ConfigError`] names
//!   what is wrong);
//! - [`sources`]: importing and connecting the sources, [`access`]: their access rules;
//! - [`refresh`]: importing again on a signal (MCP servers also refresh themselves on
//!   `list_changed`), without dropping calls in flight;
//! - [`sign_in`] and [`app`]: the axum app.
//!
//! Run it with `cargo run -p opkit-example-gateway -- --config gateway.toml`.

pub mod access;
pub mod app;
pub mod check;
pub mod config;
pub mod error;
pub mod refresh;
pub mod sign_in;
pub mod sources;

use config::Config;
use error::GatewayError;
use opkit::OperationRegistry;
use sources::Connected;
use std::sync::Arc;

/// A started gateway: its registry, its connected sources, its app.
#[derive(Clone)]
pub struct Gateway {
    /// The one registry every source's operations are in.
    pub registry: OperationRegistry,
    sources: Arc<Vec<Connected>>,
    router: axum::Router,
}

impl Gateway {
    /// Connects every source of `config` and builds the app.
    pub async fn start(config: &Config) -> Result<Self, GatewayError> {
        let registry = OperationRegistry::new();
        app::add_rate_limits(config, &registry);
        let sources = sources::connect_all(config, &registry).await?;
        let router = app::router(config, &registry)?;
        Ok(Self {
            registry,
            sources: Arc::new(sources),
            router,
        })
    }

    /// The axum app (`/health`, `/api`, `/mcp`).
    pub fn router(&self) -> axum::Router {
        self.router.clone()
    }

    /// Stops every MCP source (a child process is stopped with its connection).
    pub fn close(&self) {
        for source in self.sources.iter() {
            if let Connected::Mcp { connection, .. } = source {
                connection.close();
            }
        }
    }

    /// Refreshes every source (see [`refresh`]).
    pub async fn refresh(&self) -> Vec<(String, Result<refresh::Changes, GatewayError>)> {
        refresh::refresh_all(&self.sources, &self.registry).await
    }
}
