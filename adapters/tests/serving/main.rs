//! The serving tests: a registry served over HTTP (REST routes, SSE, OpenAPI document, limits) and
//! as an MCP server (stdio and Streamable HTTP), checked by hand-written clients and by the
//! official SDKs and validators.
//!
//! One test binary (linked once) of the modules below; each module is the suite of one
//! file, gated on the features it needs.

#[cfg(feature = "http-server")]
#[path = "../serve_support/mod.rs"]
mod serve_support;

mod example;
mod http;
mod limits;
mod mcp;
mod mcp_after_input;
mod mcp_client_http;
mod mcp_hosts;
mod mcp_ownership;
mod mcp_surface;
mod peers;
mod rest;
mod rest_streaming;
mod roundtrip;
mod sdk_clients;
mod serialize_once;
mod shutdown;
mod task_client;
