//! The trace tests: one trace through the HTTP server, the MCP server, a WebSocket hub, and across
//! three processes.
//!
//! One test binary (linked once) of the modules below; each module is the suite of one
//! file, gated on the features it needs.

#[cfg(all(feature = "redis", feature = "http-server", feature = "openapi"))]
#[path = "../redis_support/mod.rs"]
mod redis_support;
#[cfg(any(feature = "http-server", all(feature = "mcp", feature = "mcp-server")))]
#[path = "../serve_support/mod.rs"]
mod serve_support;

mod http;
mod mcp;
mod processes;
mod websocket;
