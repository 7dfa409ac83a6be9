//! MCP import: every tool, resource, resource template and prompt of an MCP server becomes
//! an operation whose calls return [`mcp_envelope`](opkit::envelope::mcp_envelope)s.
//!
//! Built on the official Rust SDK [`rmcp`] (client role). A [`McpConnection`] talks to one
//! server, over **stdio** ([`McpConnection::connect_stdio`]: a child process with arguments and
//! environment) or **Streamable HTTP** ([`McpConnection::connect_http`]: a URL, extra headers,
//! a bearer token). On connect it lists every tool (following `nextCursor`) and builds one
//! [`OperationSpec`](opkit::OperationSpec) per tool; [`McpConnection::register_into`] adds them
//! to a registry, [`McpConnection::refresh`] re-lists and updates every registry they were
//! added to.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use opkit::{OperationContext, OperationRegistry};
//! use opkit_adapters::mcp::{McpConnection, McpOptions};
//! use serde_json::json;
//!
//! let server = McpConnection::connect_stdio(
//!     "node",
//!     ["server-everything/dist/index.js", "stdio"],
//!     [("LOG_LEVEL", "warn")],
//!     McpOptions::new("everything"),
//! )
//! .await?;
//! let registry = OperationRegistry::new();
//! server.register_into(&registry)?;
//! // `echo` is the tool, `everything.echo` the operation.
//! let envelope = registry
//!     .execute("everything.echo", json!({"message": "hi"}), &OperationContext::default())
//!     .await?;
//! println!("{}", serde_json::to_string_pretty(&envelope)?);
//! assert_eq!(server.tool_name("everything.echo").as_deref(), Some("echo"));
//! # Ok(()) }
//! ```
//!
//! # Operations
//!
//! See [`tools`] for how a tool becomes a spec: the namespace comes from
//! [`McpOptions::namespace`], the name is the tool name sanitized to `[A-Za-z_][A-Za-z0-9_]*`
//! (see [`sanitize_tool_name`]; collisions get `_2`, `_3` suffixes) with the real name kept
//! in `spec.extensions["mcp.toolName"]` and through [`McpConnection::tool_name`]; the input
//! schema is the tool's `inputSchema` (its `$schema` picks the dialect, so draft-07 and
//! 2020-12 both work), the output schema its `outputSchema` or Unknown; `readOnlyHint: true`
//! makes a Query, anything else a Mutation; the annotations are kept in
//! `spec.extensions["mcp.annotations"]`. A schema the validator cannot compile (an unknown
//! dialect, a remote `$ref`) is replaced by an open one with a warning, and the original kept
//! in `mcp.inputSchema` / `mcp.outputSchema`; the server still validates its own input.
//!
//! Resources, resource templates and prompts (listed once, when connecting) become queries
//! `<namespace>.resources.<name>` and `<namespace>.prompts.<name>`: a template's URI
//! variables and a prompt's arguments are string input fields, the data the read's
//! `contents` or the prompt's `{description?, messages}`.
//!
//! # Questions and tasks
//!
//! The import declares the `elicitation` capability and the tasks extension. A question the
//! server asks during a call — `elicitation/create` in the call (before 2026-07-28) or an
//! input-required result (2026-07-28, answered and sent again with the server's
//! `requestState`, at most 10 rounds) — is asked of the importing operation's own caller
//! with [`OperationContext::elicit_raw`](opkit::OperationContext::elicit_raw), under the
//! server's key: an opkit server in front of an asking server asks its own client. A caller
//! that cannot be asked fails the call with the reason; sampling and roots requests are
//! refused. A tool the server runs as a task is polled with `tasks/get` to its result within
//! the caller's deadline (its status messages become progress), its questions answered with
//! `tasks/update`, and cancelled (`tasks/cancel`) when the caller stops waiting.
//!
//! # Results
//!
//! See [`content`]: `data` is `structuredContent` (cast to the output schema) when present
//! and not `null`, else the content blocks mapped into [`McpContentBlock`]s; `meta` is
//! [`McpMeta`] with `isError`, every block mapped 1:1 (unknown block types become a text
//! block holding their JSON), `structuredContent` and `_meta`. A result with
//! `isError: true` is an envelope, not an error (the registry's pipeline passes such an
//! envelope through without casting its data to the output schema). A successful result
//! without `structuredContent` from a tool that declares an `outputSchema` breaks a MUST of
//! the spec; its content blocks are the data and the pipeline casts them to the schema like
//! any other output (with a validation warning).
//!
//! A tool error from an opkit server carries its [`CallError`](opkit::CallError) in the
//! result's `_meta["opkit/error"]`: the envelope's data is that error's wire JSON and
//! [`call_error`] gives it back typed.
//!
//! **JSON as text.** Many servers send `JSON.stringify`'d data in a text block instead of
//! `structuredContent`. With [`McpOptions::parse_json_text`] (off by default) a successful
//! result without `structuredContent` whose only block is a text block holding JSON has that
//! JSON as its data, cast to the tool's output schema when it has one; `meta.content` keeps
//! the original block.
//!
//! **Raw decoding.** rmcp decodes a `tools/call` result into its typed `CallToolResult`, which
//! fails as a whole on an unknown content type. The call is therefore sent as a plain
//! `ClientRequest` and its `ServerResult` taken apart by hand: a result rmcp could type is
//! turned back into JSON, and one it could not (an unknown block type) arrives as rmcp's
//! catch-all `CustomResult` — the raw JSON — so both go through the same JSON mapping.
//!
//! # Errors
//!
//! | what happened | [`CallError`](opkit::CallError) |
//! |---|---|
//! | the server answered with a JSON-RPC error | `EXECUTION_ERROR` with the server's message; `details: {code, data?}` |
//! | an answer that is not a tool result (a task handle, an MRTR `input_required`) | `EXECUTION_ERROR` |
//! | the connection is lost or the server exited (pending and later calls) | `TRANSPORT_ERROR` |
//! | the context's deadline passed / it was cancelled | `TIMEOUT` / `ABORTED`, and the server is told |
//!
//! **Cancellation.** A call whose context is cancelled, whose deadline passes, or whose
//! future is dropped (the registry drops it on its own deadline) sends
//! `notifications/cancelled` for the request (over Streamable HTTP in the 2026-07-28 era
//! rmcp turns that into closing the request's response stream, as the spec asks).
//!
//! # Protocol eras
//!
//! Both eras are supported. [`McpLifecycle::Auto`] (the default) uses rmcp's
//! `ClientLifecycleMode::Auto`: it probes `server/discover` (2026-07-28, stateless) and falls
//! back to the `initialize` handshake (up to 2025-11-25) when the server answers like a legacy
//! server; when the probe fails in a way rmcp does not classify (some legacy HTTP servers
//! answer a sessionless request with an uncorrelated error), the connection is opened again
//! with the handshake. [`McpLifecycle::Legacy`] and [`McpLifecycle::Modern`] pin one era.
//! The `initialize` request offers `2025-11-25` (the latest revision with a handshake) in
//! both `Legacy` and `Auto`'s fallback; `server/discover` offers `2026-07-28`.
//! A server that does not answer `server/discover` at all (neither a result nor an error)
//! delays [`McpLifecycle::Auto`] by rmcp's 10 s probe timeout; pin `Legacy` for such servers.
//! In the 2026-07-28 era `tools/list_changed` only arrives on a `subscriptions/listen`
//! stream, so the client opens one when the server announces `tools.listChanged`.
//!
//! `tools/list` is always sent to the server (following `nextCursor`, `""` included, with a
//! bound on the number of pages and a check against repeated cursors): rmcp's response cache
//! (`ttlMs`) is bypassed so that [`McpConnection::refresh`] sees the current list.
//!
//! # Living with real servers
//!
//! Notifications that arrive mid-call (progress, logging, `list_changed`) are consumed by the
//! client and never disturb a call; log messages and the child's stderr go to `tracing`
//! (target `opkit_adapters::mcp`). A call whose context has a
//! [`Reporter`](opkit::report::Reporter) (an opkit MCP server re-serving the tool attaches
//! one) sends a `progressToken`: the server's progress for that call goes to the context's
//! [`progress`](opkit::OperationContext::progress), and its log messages to the context's
//! [`log_record`](opkit::OperationContext::log_record) — to every such call in flight on the
//! connection, since MCP log messages name no request. The import does not send
//! `logging/setLevel`. `notifications/tools/list_changed` is counted
//! ([`McpConnection::tool_list_changes`]); with [`McpOptions::auto_refresh`] it triggers a
//! [`McpConnection::refresh`]. When the server exits or the connection drops, pending calls
//! fail with `TRANSPORT_ERROR` and later calls fail at once.
//!
//! # Tracing
//!
//! Each call of an imported tool runs in a client span (`opkit.path = "mcp"`, see
//! [`opkit::trace`]), a child of the calling context's span, sent to the server as
//! `_meta.traceparent` / `_meta.tracestate` (the MCP convention for W3C trace context).

pub mod content;
mod names;
pub mod tools;

mod connection;

pub use crate::mcp_meta::META_ERROR;
pub use connection::{McpConnection, McpError, McpLifecycle, McpOptions, RefreshReport};
pub use content::{call_error, map_content_block, result_envelope};
pub use names::{is_valid_name as is_valid_operation_name, sanitize as sanitize_tool_name};
pub use opkit::envelope::{McpContentBlock, McpMeta};
