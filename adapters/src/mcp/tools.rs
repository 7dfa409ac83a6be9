//! Tool definitions (`tools/list` entries, as raw JSON) → operation specs.
//!
//! One operation per tool:
//!
//! | spec field | from the tool |
//! |---|---|
//! | `namespace` | [`McpOptions::namespace`](super::McpOptions::namespace) |
//! | `name` | the tool name, sanitized ([`sanitize_tool_name`](super::sanitize_tool_name)) |
//! | `kind` | `Query` when `annotations.readOnlyHint` is `true`, else `Mutation` |
//! | `description` | `description`, else `title`, else `annotations.title` |
//! | `input_schema` | `inputSchema` as sent (draft-07 or 2020-12, per its `$schema`) |
//! | `output_schema` | `outputSchema`, or `true` (Unknown) |
//! | `extensions` | `mcp.toolName` (the real name), `mcp.annotations`, `mcp.title`, `mcp.meta` (the tool's `_meta`), `mcp.server` |
//! | `origin` | `mcp <server label> tool <real name>` |
//!
//! A tool served by opkit to a client before 2026-07-28 whose data is not an object answers
//! `{"result": data}` and says so in its `_meta["opkit/wrapped"]` (`"result"`): its output
//! schema is then the schema of `result` (with the wrapper's `$defs`), the property is
//! recorded in the `mcp.wrapped` extension, and each result's data is read from under it.

use opkit::schema::pointer;
use opkit::schema::refs::rewrite_refs;
use opkit::{OperationKind, OperationSpec};
use serde_json::{Value, json};

/// Extension key holding the real MCP tool name.
pub const EXT_TOOL_NAME: &str = "mcp.toolName";
/// Extension key holding the tool's `annotations` object, as sent.
pub const EXT_ANNOTATIONS: &str = "mcp.annotations";
/// Extension key holding the tool's `title`.
pub const EXT_TITLE: &str = "mcp.title";
/// Extension key holding the tool's `_meta` object.
pub const EXT_META: &str = "mcp.meta";
/// Extension key holding the label of the server the tool came from.
pub const EXT_SERVER: &str = "mcp.server";
/// Extension key holding the `structuredContent` property that holds the data, for a tool
/// opkit serves wrapped (see the module docs).
pub const EXT_WRAPPED: &str = "mcp.wrapped";
/// Tool `_meta` key with which opkit's MCP server marks a wrapped output.
use crate::mcp_meta::META_WRAPPED;

/// The schema of property `key` of a wrapper schema, standing alone: the wrapper's `$defs`
/// at its root and references into the wrapper made relative to it.
fn unwrap_schema(wrapper: &Value, key: &str) -> Option<Value> {
    let inner = wrapper.get("properties")?.get(key)?;
    if opkit::schema::is_unknown(inner) {
        return Some(Value::Bool(true));
    }
    let mut inner = inner.clone();
    let prefix = format!("#/properties/{}", pointer::escape(key));
    rewrite_refs(&mut inner, &mut |reference| {
        reference
            .strip_prefix(prefix.as_str())
            .map(|rest| format!("#{rest}"))
    });
    if let (Value::Object(map), Some(defs)) = (&mut inner, wrapper.get("$defs")) {
        map.insert("$defs".to_owned(), defs.clone());
    }
    Some(inner)
}

/// The real name of a `tools/list` entry, when it has one.
pub(crate) fn tool_name(tool: &Value) -> Option<&str> {
    tool.get("name").and_then(Value::as_str)
}

/// The spec of the operation that calls `tool`.
pub(crate) fn tool_spec(
    namespace: &str,
    operation_name: &str,
    server_label: &str,
    tool: &Value,
) -> OperationSpec {
    let real_name = tool_name(tool).unwrap_or_default();
    let annotations = tool.get("annotations").filter(|value| value.is_object());
    let read_only = annotations
        .and_then(|annotations| annotations.get("readOnlyHint"))
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let kind = if read_only {
        OperationKind::Query
    } else {
        OperationKind::Mutation
    };
    let text = |value: Option<&Value>| {
        value
            .and_then(Value::as_str)
            .filter(|text| !text.is_empty())
            .map(str::to_owned)
    };
    let title = text(tool.get("title"));
    let description = text(tool.get("description"))
        .or_else(|| title.clone())
        .or_else(|| text(annotations.and_then(|annotations| annotations.get("title"))));
    let input_schema = tool
        .get("inputSchema")
        .filter(|schema| schema.is_object() || schema.is_boolean())
        .cloned()
        .unwrap_or_else(|| json!({"type": "object"}));
    let mut output_schema = tool
        .get("outputSchema")
        .filter(|schema| schema.is_object() || schema.is_boolean())
        .cloned()
        .unwrap_or(Value::Bool(true));
    let wrapped = tool
        .get("_meta")
        .and_then(|meta| meta.get(META_WRAPPED))
        .and_then(Value::as_str)
        .and_then(|key| Some((key, unwrap_schema(&output_schema, key)?)));
    if let Some((_, inner)) = &wrapped {
        output_schema = inner.clone();
    }

    let mut spec = OperationSpec::new(namespace, operation_name, kind)
        .input_schema(input_schema)
        .output_schema(output_schema)
        .extension(EXT_TOOL_NAME, Value::String(real_name.to_owned()))
        .extension(EXT_SERVER, Value::String(server_label.to_owned()))
        .origin(format!("mcp {server_label} tool {real_name}"));
    if let Some((key, _)) = wrapped {
        spec = spec.extension(EXT_WRAPPED, Value::String(key.to_owned()));
    }
    if let Some(description) = description {
        spec = spec.description(description);
    }
    if let Some(annotations) = annotations {
        spec = spec.extension(EXT_ANNOTATIONS, annotations.clone());
    }
    if let Some(title) = title {
        spec = spec.extension(EXT_TITLE, Value::String(title));
    }
    if let Some(meta) = tool.get("_meta").filter(|meta| !meta.is_null()) {
        spec = spec.extension(EXT_META, meta.clone());
    }
    spec
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrapped_opkit_outputs_are_unwrapped() {
        let tool = json!({
            "name": "rt_add",
            "inputSchema": {"type": "object"},
            "outputSchema": {
                "type": "object",
                "properties": {"result": {"anyOf": [{"$ref": "#/$defs/Item"}, {"$ref": "#/properties/result/anyOf/0"}]}},
                "required": ["result"],
                "$defs": {"Item": {"type": "integer"}}
            },
            "_meta": {"opkit/wrapped": "result"}
        });
        let spec = tool_spec("ns", "rt_add", "s", &tool);
        assert_eq!(
            spec.output_schema,
            json!({"anyOf": [{"$ref": "#/$defs/Item"}, {"$ref": "#/anyOf/0"}], "$defs": {"Item": {"type": "integer"}}})
        );
        assert_eq!(spec.extensions[EXT_WRAPPED], "result");
        let unknown = json!({"name": "x", "outputSchema": {"type": "object", "properties": {"result": {}}}, "_meta": {"opkit/wrapped": "result"}});
        assert_eq!(
            tool_spec("ns", "x", "s", &unknown).output_schema,
            json!(true)
        );
        let unmarked = json!({"name": "x", "outputSchema": {"type": "object", "properties": {"result": {"type": "integer"}}}});
        let spec = tool_spec("ns", "x", "s", &unmarked);
        assert!(spec.extensions.get(EXT_WRAPPED).is_none());
        assert_eq!(
            spec.output_schema["properties"]["result"]["type"],
            "integer"
        );
    }

    #[test]
    fn read_only_tools_are_queries_and_the_rest_mutations() {
        let query = json!({"name": "get-sum", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": true}});
        let mutation = json!({"name": "write", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": false, "destructiveHint": true}});
        let plain = json!({"name": "plain", "inputSchema": {"type": "object"}});
        assert_eq!(
            tool_spec("ns", "get_sum", "s", &query).kind,
            OperationKind::Query
        );
        assert_eq!(
            tool_spec("ns", "write", "s", &mutation).kind,
            OperationKind::Mutation
        );
        assert_eq!(
            tool_spec("ns", "plain", "s", &plain).kind,
            OperationKind::Mutation
        );
    }

    #[test]
    fn keeps_schemas_names_and_annotations() {
        let tool = json!({
            "name": "get-structured-content",
            "title": "Structured",
            "description": "Returns weather",
            "inputSchema": {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "properties": {"location": {"type": "string"}}},
            "outputSchema": {"type": "object", "properties": {"temperature": {"type": "number"}}},
            "annotations": {"readOnlyHint": true, "title": "Weather"},
            "_meta": {"x": 1}
        });
        let spec = tool_spec(
            "everything",
            "get_structured_content",
            "server-everything",
            &tool,
        );
        assert_eq!(spec.id(), "everything.get_structured_content");
        assert_eq!(spec.description.as_deref(), Some("Returns weather"));
        assert_eq!(spec.input_schema, tool["inputSchema"]);
        assert_eq!(spec.output_schema, tool["outputSchema"]);
        assert_eq!(spec.extensions[EXT_TOOL_NAME], "get-structured-content");
        assert_eq!(spec.extensions[EXT_ANNOTATIONS], tool["annotations"]);
        assert_eq!(spec.extensions[EXT_TITLE], "Structured");
        assert_eq!(spec.extensions[EXT_META], json!({"x": 1}));
        assert_eq!(spec.extensions[EXT_SERVER], "server-everything");
    }

    #[test]
    fn no_output_schema_means_unknown() {
        let spec = tool_spec(
            "ns",
            "t",
            "s",
            &json!({"name": "t", "inputSchema": {"type": "object"}}),
        );
        assert!(spec.has_unknown_output());
        assert_eq!(spec.description, None);
        assert!(!spec.extensions.contains_key(EXT_ANNOTATIONS));
    }
}
