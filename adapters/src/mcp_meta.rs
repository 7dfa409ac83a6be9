//! The `_meta` keys opkit puts on MCP tools and results, read back by its MCP import: one
//! definition for the server ([`crate::mcp_server`]) and the import ([`crate::mcp`]).

/// `_meta` key of a failed call's [`CallError`](opkit::CallError) wire JSON.
pub const META_ERROR: &str = "opkit/error";
/// `_meta` key of a plain envelope's meta: an imported HTTP API's always, a local one's when
/// the server asks ([`McpServer::local_meta`](crate::mcp_server::McpServer::local_meta)); the
/// import does not read it back.
#[cfg(feature = "mcp-server")]
pub const META_ENVELOPE: &str = "opkit/meta";
/// Tool `_meta` key naming the `structuredContent` property that holds the data, on a tool
/// whose output is wrapped as `{"result": data}` for a client before 2026-07-28.
pub const META_WRAPPED: &str = "opkit/wrapped";
/// Tool `_meta` key of the operation's access rule, when it is not public: what an opkit
/// server requires of callers, kept by the import in front of it.
pub const META_ACCESS: &str = "opkit/access";
