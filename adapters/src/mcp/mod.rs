//! MCP import: every tool, resource, resource template and prompt of an MCP server becomes
//! an operation whose calls return [`mcp_envelope`](opkit::envelope::mcp_envelope)s.
//!
//! The manual is `adapters/docs/mcp-import.md`, included below. Reading the code:
//! `McpConnection` is in `connection/`: `client.rs` connects, `catalog.rs` lists what the
//! server offers, `call.rs` runs a call; `content.rs` maps results to envelopes.
#![doc = "\n"]
#![doc = include_str!("../../docs/mcp-import.md")]

pub mod content;
mod names;
pub mod tools;

mod connection;

pub use crate::mcp_meta::META_ERROR;
pub use connection::{
    LoadedSkill, McpConnection, McpError, McpLifecycle, McpOptions, RefreshReport, SkillError,
    SkillFile,
};
pub use content::{call_error, map_content_block, result_envelope};
pub use names::{is_valid_name as is_valid_operation_name, sanitize as sanitize_tool_name};
pub use opkit::envelope::{McpContentBlock, McpMeta};
