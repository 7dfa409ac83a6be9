//! The MCP import tests against real servers: the reference servers (`everything`, `filesystem`),
//! the Python SDK, a scripted server, and imported tools served again.
//!
//! One test binary (linked once) of the modules below; each module is the suite of one
//! file, gated on the features it needs.

#[cfg(feature = "mcp")]
#[path = "../mcp_support/mod.rs"]
mod mcp_support;
#[cfg(feature = "mcp-server")]
#[path = "../serve_support/mod.rs"]
mod serve_support;

mod everything;
mod filesystem;
mod late_stream;
mod python;
mod reserve;
mod scripted;
mod skills;
