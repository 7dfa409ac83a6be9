//! Adapters that connect opkit registries to the outside world, one cargo feature each:
//!
//! | feature | module | what it does |
//! |---|---|---|
//! | `openapi` | [`openapi`] | imports an OpenAPI 3.0/3.1/3.2 API as operations |
//! | `mcp` | [`mcp`] | imports an MCP server's tools as operations |
//! | `http-server` | [`http_server`] | serves a registry over HTTP: a route per operation, SSE subscriptions, `/openapi.json` |
//! | `mcp-server` | [`mcp_server`] | serves a registry as an MCP server over stdio and Streamable HTTP (enables `http-server`) |
//! | `mcp-skills` | [`mcp_server`] | serves skills (SEP-2640) from a directory beside the operations (`McpServer::skills`; enables `mcp-server`) |
//! | `oauth` | [`oauth`] | the HTTP and MCP servers as OAuth 2.1 resource servers: JWT access tokens checked against the issuer's keys, Protected Resource Metadata, introspection (enables `http-server`) |
//! | `oauth-client` | [`oauth`] | the MCP import signs in with client-credentials tokens from an authorization server (enables `mcp`) |
//! | `typescript-client` | [`client`] | writes a typed TypeScript client (one module) from a registry's operations |
//! | `redis` | [`redis`] | the call protocol over Redis: streams consumer groups for requests, pub/sub for replies |
//! | `websocket` | [`websocket`] | the call protocol over a WebSocket hub with authenticated spokes |

#[cfg(feature = "openapi")]
pub mod openapi;

#[cfg(feature = "mcp")]
pub mod mcp;

#[cfg(feature = "http-server")]
pub mod http_server;

#[cfg(feature = "typescript-client")]
pub mod client;

#[cfg(feature = "mcp-server")]
pub mod mcp_server;

#[cfg(any(feature = "oauth", feature = "oauth-client"))]
pub mod oauth;

#[cfg(feature = "redis")]
pub mod redis;

#[cfg(any(feature = "redis", feature = "websocket"))]
mod backoff;

#[cfg(any(feature = "http-server", feature = "redis", feature = "websocket"))]
mod seeded;

#[cfg(any(feature = "openapi", feature = "mcp"))]
mod import_access;
#[cfg(any(feature = "openapi", feature = "mcp"))]
mod redirects;
#[cfg(any(feature = "openapi", feature = "mcp"))]
pub use import_access::ImportAccess;

#[cfg(any(feature = "mcp", feature = "mcp-server"))]
mod mcp_meta;

#[cfg(any(feature = "mcp", feature = "mcp-skills"))]
mod skill_text;

#[cfg(feature = "websocket")]
pub mod websocket;
