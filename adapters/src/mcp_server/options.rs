//! [`McpEdgeOptions`]: what an operation asks of the MCP server — its `mcp(..)` edge options
//! (`#[operation(mcp(resource = "notes://{id}"))]`, or [`McpSpec`]'s builders on a spec
//! built at run time) — read typed when the server starts ([`McpServer::check`] refuses
//! options it cannot read) and by name where a request needs one.
//!
//! [`McpServer::check`]: super::McpServer::check

use opkit::OperationSpec;
use opkit::edge::EdgeOptionsError;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// The name of the MCP server's edge options: the `mcp(..)` group.
pub const MCP_EDGE: &str = "mcp";

/// How an operation is served over MCP, beside the defaults (a tool named after its id).
///
/// ```
/// use opkit::{OperationKind, OperationSpec};
/// use opkit_adapters::mcp_server::{McpSpec, TaskSupport};
/// let spec = OperationSpec::new("notes", "summarize", OperationKind::Query)
///     .mcp_prompt()
///     .mcp_completion("topic", "notes.topics");
/// let options = spec.mcp_options().unwrap();
/// assert!(options.prompt);
/// assert_eq!(options.complete["topic"], "notes.topics");
/// assert_eq!(spec.edges["mcp"]["complete"]["topic"], "notes.topics");
/// let task = OperationSpec::new("jobs", "deploy", OperationKind::Mutation)
///     .mcp_task(TaskSupport::AfterInput);
/// assert_eq!(task.edges["mcp"]["task"], "after_input");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct McpEdgeOptions {
    /// `tool_name`: the name the operation is served under (as a tool, a resource or a
    /// prompt), instead of one [`ToolNaming`](super::ToolNaming) derives from its id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    /// `title`: the human-readable title hosts show for the tool, resource or prompt (the
    /// name stays what calls use).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// `tool_meta`: a JSON object added to the `_meta` of the operation's entry in
    /// `tools/list` (keys opkit sets itself, `opkit/…`, keep opkit's values), or in
    /// `resources/list`, `resources/templates/list` or `prompts/list` when it is served as a
    /// resource or a prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_meta: Option<Map<String, Value>>,
    /// `resource`: the operation is an MCP *resource* at this URI, or a resource template
    /// when the URI has `{variables}` (RFC 6570 level 1, each an input field). `resources/read`
    /// runs it; a subscription with the same URI backs `resources/subscribe`. Served as a
    /// resource, it is not also a tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource: Option<String>,
    /// `mime_type`: the MIME type of the resource's contents, listed with it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// `prompt`: the operation is an MCP *prompt* (`prompts/get` runs it with the prompt's
    /// arguments as input; its data is the prompt's messages, see
    /// `opkit::envelope::PromptMessage`). Served as a prompt, it is not also a tool.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub prompt: bool,
    /// `task`: the operation runs as an MCP task for clients that negotiated tasks (see
    /// [`TaskSupport`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskSupport>,
    /// `complete(argument = "ns.query", ..)`: the query that completes each argument of a
    /// prompt or variable of a resource template (`completion/complete`). The query gets
    /// `value` (what the user typed so far) and, when its input has the fields, `argument`
    /// (the argument's name) and `arguments` (the other arguments already given, an object of
    /// strings); its data is the completions, a list of strings (at most 100 are sent) or an
    /// object `{"values": [..], "total": n, "hasMore": bool}`. Arguments without one complete
    /// from the values their field's schema lists (`enum`, `const`s).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub complete: BTreeMap<String, String>,
}

/// How an operation runs as an MCP task (the `io.modelcontextprotocol/tasks` extension): the
/// call answers at once with the task, which the client polls (`tasks/get`) to its result,
/// answers the questions of (`tasks/update`) and cancels (`tasks/cancel`, which reaches the
/// operation's cancellation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum TaskSupport {
    /// `task`: a task for clients that negotiated tasks; other clients call it as usual.
    Optional,
    /// `task = "required"`: other clients are refused (-32021).
    Required,
    /// `task = "after_input"`: for a 2026-07-28 client that negotiated tasks the operation
    /// first runs in the request, and a question it asks there ends the call with an
    /// input-required result (no task yet); the call that brings the answers starts the task,
    /// in which the operation runs again from the start with those answers. Other clients
    /// call it as with `Optional`.
    AfterInput,
}

/// The MCP options of an [`OperationSpec`]: the `mcp(..)` edge options, typed, and builders
/// for specs made at run time.
pub trait McpSpec: Sized {
    /// The operation's MCP options (the defaults when it gives none); an
    /// [`EdgeOptionsError`] when they do not read as [`McpEdgeOptions`].
    fn mcp_options(&self) -> Result<McpEdgeOptions, EdgeOptionsError>;
    /// Serves the operation under the tool name `name`.
    #[must_use]
    fn mcp_tool_name(self, name: impl Into<String>) -> Self;
    /// Adds `meta` (a JSON object) to the tool's `_meta`.
    #[must_use]
    fn mcp_tool_meta(self, meta: Map<String, Value>) -> Self;
    /// Gives the tool, resource or prompt the title `title`.
    #[must_use]
    fn mcp_title(self, title: impl Into<String>) -> Self;
    /// Serves the operation as the resource (or template) at `uri`.
    #[must_use]
    fn mcp_resource(self, uri: impl Into<String>) -> Self;
    /// Serves the operation as a prompt.
    #[must_use]
    fn mcp_prompt(self) -> Self;
    /// Runs the operation as a task for clients that negotiated tasks.
    #[must_use]
    fn mcp_task(self, support: TaskSupport) -> Self;
    /// Completes the argument `argument` with the query `completer`.
    #[must_use]
    fn mcp_completion(self, argument: impl Into<String>, completer: impl Into<String>) -> Self;
}

impl McpSpec for OperationSpec {
    fn mcp_options(&self) -> Result<McpEdgeOptions, EdgeOptionsError> {
        self.edge_options(MCP_EDGE).map(Option::unwrap_or_default)
    }

    fn mcp_tool_name(self, name: impl Into<String>) -> Self {
        self.with_edge_option(MCP_EDGE, "tool_name", Value::String(name.into()))
    }

    fn mcp_tool_meta(self, meta: Map<String, Value>) -> Self {
        self.with_edge_option(MCP_EDGE, "tool_meta", Value::Object(meta))
    }

    fn mcp_title(self, title: impl Into<String>) -> Self {
        self.with_edge_option(MCP_EDGE, "title", Value::String(title.into()))
    }

    fn mcp_resource(self, uri: impl Into<String>) -> Self {
        self.with_edge_option(MCP_EDGE, "resource", Value::String(uri.into()))
    }

    fn mcp_prompt(self) -> Self {
        self.with_edge_option(MCP_EDGE, "prompt", Value::Bool(true))
    }

    fn mcp_task(self, support: TaskSupport) -> Self {
        // A unit variant always serializes to its name.
        let support = serde_json::to_value(support).unwrap_or_default();
        self.with_edge_option(MCP_EDGE, "task", support)
    }

    fn mcp_completion(self, argument: impl Into<String>, completer: impl Into<String>) -> Self {
        let mut completers = option(&self, "complete")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        completers.insert(argument.into(), Value::String(completer.into()));
        self.with_edge_option(MCP_EDGE, "complete", Value::Object(completers))
    }
}

/// One option of `spec`'s `mcp(..)` group, as written (for reads on a request's path, which
/// need one option, not the whole group; the group was checked when the server started).
pub(crate) fn option<'a>(spec: &'a OperationSpec, key: &str) -> Option<&'a Value> {
    spec.edges.get(MCP_EDGE)?.get(key)
}

/// `spec`'s title, if it gives one.
pub(crate) fn title(spec: &OperationSpec) -> Option<&str> {
    option(spec, "title").and_then(Value::as_str)
}

/// `spec`'s own `_meta` for a listing entry (`tool_meta`), if it gives an object.
pub(crate) fn own_meta(spec: &OperationSpec) -> Option<&Map<String, Value>> {
    option(spec, "tool_meta").and_then(Value::as_object)
}

/// `spec`'s own tool name, if it gives one.
pub(crate) fn tool_name(spec: &OperationSpec) -> Option<&str> {
    option(spec, "tool_name").and_then(Value::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;
    use opkit::OperationKind;
    use serde_json::json;

    #[test]
    fn options_the_server_cannot_read_are_named() {
        let spec = OperationSpec::new("a", "b", OperationKind::Query)
            .with_edge_options(MCP_EDGE, json!({"resourse": "x://y"}));
        let error = spec.mcp_options().unwrap_err().to_string();
        assert!(error.contains("unknown field `resourse`"), "{error}");
        let spec = OperationSpec::new("a", "b", OperationKind::Query)
            .with_edge_options(MCP_EDGE, json!({"task": "sometimes"}));
        let error = spec.mcp_options().unwrap_err().to_string();
        assert!(error.contains("after_input"), "{error}");
        let spec = OperationSpec::new("a", "b", OperationKind::Query)
            .with_edge_options(MCP_EDGE, json!({"tool_meta": ["no"]}));
        assert!(spec.mcp_options().is_err());
        assert_eq!(
            OperationSpec::new("a", "b", OperationKind::Query).mcp_options(),
            Ok(McpEdgeOptions::default())
        );
    }
}
