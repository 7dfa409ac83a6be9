//! Adapters that connect opkit registries to the outside world, one cargo feature each:
//!
//! | feature | module | what it does |
//! |---|---|---|
//! | `openapi` | [`openapi`] | imports an OpenAPI 3.0/3.1/3.2 API as operations |
//! | `mcp` | [`mcp`] | imports an MCP server's tools as operations |

#[cfg(feature = "openapi")]
pub mod openapi;

#[cfg(feature = "mcp")]
pub mod mcp;
