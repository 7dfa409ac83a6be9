//! Operation specs → MCP tools: names, schemas, output forms, annotations.
//!
//! Schemas are served as standard JSON Schema: numeric formats no vocabulary defines (the
//! ones schemars or an imported document put there, `uint32`, `int64`, `double`, ...) become
//! `minimum`/`maximum` ([`standard_formats`]), so hosts' validators have nothing to warn about.

use crate::http_server::refs::nest_schema;
use crate::mcp_meta::{META_ACCESS, META_WRAPPED};
use opkit::schema::standard_formats;
use opkit::{OperationKind, OperationSpec};
use rmcp::model::{JsonObject, MetaObject, Tool, ToolAnnotations};
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// How a tool's `structuredContent` relates to the operation's data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OutputForm {
    /// `structuredContent` is the data.
    Plain,
    /// `structuredContent` is `{"result": data}` (non-object data for a legacy client).
    Wrapped,
    /// A subscription: `structuredContent` is `{"items": [data, ..], "truncated": bool}`.
    Items,
    /// An imported MCP tool without an output schema: no `outputSchema`, results are its
    /// content blocks (and whatever `structuredContent` the tool sent).
    Content,
}

/// `true` for an operation that calls an MCP tool (the MCP import marks its specs).
fn is_mcp_tool(spec: &OperationSpec) -> bool {
    // The key of `opkit_adapters::mcp::tools::EXT_TOOL_NAME` (feature `mcp`).
    spec.extensions.contains_key("mcp.toolName")
}

/// `true` when the schema's root says `type: "object"`.
fn object_typed(schema: &Value) -> bool {
    match schema.get("type") {
        Some(Value::String(kind)) => kind == "object",
        _ => false,
    }
}

/// `true` when the operation's input can be an MCP argument object (it is served as a tool),
/// without building [`input_schema`].
pub(crate) fn takes_arguments(spec: &OperationSpec) -> bool {
    // The root decides; reading it builds no self-contained copy of a shared schema.
    match spec.input_schema.root() {
        Value::Bool(true) => true,
        Value::Object(map) => match map.get("type") {
            None => true,
            Some(Value::String(kind)) => kind == "object",
            Some(Value::Array(kinds)) => kinds.iter().any(|kind| kind == "object"),
            Some(_) => false,
        },
        _ => false,
    }
}

/// The tool's `inputSchema`: the operation's, with a `type: "object"` root (MCP requires it).
/// `None` when the input cannot be an object.
pub(crate) fn input_schema(spec: &OperationSpec) -> Option<JsonObject> {
    if !takes_arguments(spec) {
        return None;
    }
    // Built for this tool only (a shared schema keeps no self-contained copy), and moved
    // rather than copied when it was built here.
    let mut schema = spec.input_schema.transient_value().into_owned();
    standard_formats(&mut schema);
    let Value::Object(mut map) = schema else {
        // `true`: any object.
        return Some(object_schema());
    };
    if map.get("type") != Some(&json!("object")) {
        // No `type`, or a list of types holding `object`: the argument object's.
        map.insert("type".to_owned(), json!("object"));
    }
    Some(map)
}

fn object_schema() -> JsonObject {
    let mut map = Map::new();
    map.insert("type".to_owned(), json!("object"));
    map
}

/// `schema` placed at `pointer` of a new root: defs hoisted, Unknown as `{}`.
fn nested(schema: &Value, pointer: &str) -> (Value, Map<String, Value>) {
    let (nested, defs) = nest_schema(schema, pointer);
    if opkit::schema::is_unknown(&nested) {
        (json!({}), defs)
    } else {
        (nested, defs)
    }
}

/// An object schema with the given (all required) properties and root `$defs`.
fn object_with(properties: Vec<(&str, Value)>, defs: Map<String, Value>) -> JsonObject {
    let mut root = object_schema();
    let required: Vec<Value> = properties.iter().map(|(name, _)| json!(name)).collect();
    let properties: Map<String, Value> = properties
        .into_iter()
        .map(|(name, schema)| (name.to_owned(), schema))
        .collect();
    root.insert("properties".to_owned(), Value::Object(properties));
    root.insert("required".to_owned(), Value::Array(required));
    if !defs.is_empty() {
        root.insert("$defs".to_owned(), Value::Object(defs));
    }
    root
}

/// `{"result": <schema>}`.
fn result_wrapper(schema: &Value) -> JsonObject {
    let (result, defs) = nested(schema, "/properties/result");
    object_with(vec![("result", result)], defs)
}

/// The output form of a tool (what [`output`] decides, without building the schema);
/// `modern` is a client on 2026-07-28 or later, which accepts any JSON as
/// `structuredContent`.
pub(crate) fn output_form(spec: &OperationSpec, modern: bool) -> OutputForm {
    if spec.kind == OperationKind::Subscription {
        OutputForm::Items
    } else if spec.has_unknown_output() {
        if is_mcp_tool(spec) {
            OutputForm::Content
        } else if modern {
            OutputForm::Plain
        } else {
            OutputForm::Wrapped
        }
    } else if spec.output_schema.root().is_object()
        && (modern || object_typed(spec.output_schema.root()))
    {
        OutputForm::Plain
    } else {
        OutputForm::Wrapped
    }
}

/// The output form and `outputSchema` of a tool (see [`output_form`]).
pub(crate) fn output(spec: &OperationSpec, modern: bool) -> (OutputForm, Option<JsonObject>) {
    let form = output_form(spec, modern);
    // Built for this tool only: a shared schema keeps no self-contained copy.
    let mut built = spec.output_schema.transient_value().into_owned();
    standard_formats(&mut built);
    let schema: &Value = &built;
    let declared = match form {
        OutputForm::Items => {
            let (item, defs) = nested(schema, "/properties/items/items");
            let truncated = json!({
                "type": "boolean",
                "description": "true when the server stopped the stream at its item limit"
            });
            Some(object_with(
                vec![
                    ("items", json!({"type": "array", "items": item})),
                    ("truncated", truncated),
                ],
                defs,
            ))
        }
        OutputForm::Content => None,
        OutputForm::Plain if spec.has_unknown_output() => None,
        OutputForm::Plain => match built {
            Value::Object(map) => Some(map),
            _ => None,
        },
        OutputForm::Wrapped => Some(result_wrapper(schema)),
    };
    (form, declared)
}

/// The tool of an operation, served as `name`, or `None` when its input cannot be an MCP
/// argument object.
pub(crate) fn tool(spec: &OperationSpec, name: &str, modern: bool) -> Option<Tool> {
    let input = input_schema(spec)?;
    let description = spec
        .description
        .clone()
        .unwrap_or_else(|| format!("{} {}", spec.kind.as_str().to_ascii_lowercase(), spec.id()));
    let description = if spec.kind == OperationKind::Subscription {
        format!(
            "{description}\n\n(A subscription: the call streams every item as a progress notification when the request carries a progressToken, and returns the items as `{{\"items\": [..]}}` when the stream ends.)"
        )
    } else {
        description
    };
    let mut tool = Tool::new(name.to_owned(), description, Arc::new(input));
    tool.title = super::options::title(spec).map(str::to_owned);
    let (form, schema) = output(spec, modern);
    if let Some(schema) = schema {
        tool = tool.with_raw_output_schema(Arc::new(schema));
    }
    let annotations = match spec.kind {
        OperationKind::Query | OperationKind::Subscription => {
            ToolAnnotations::new().read_only(true)
        }
        OperationKind::Mutation => ToolAnnotations::new().read_only(false),
    };
    // The operation's own `_meta` first: opkit's keys below win over the same ones there.
    let mut meta = match super::options::option(spec, "tool_meta") {
        Some(Value::Object(own)) => own.clone(),
        Some(_) => {
            // `McpServer::check` refuses it at start; an operation registered later is
            // served without it.
            tracing::warn!(operation = %spec.id(), "a tool _meta that is not an object is left out");
            Map::new()
        }
        None => Map::new(),
    };
    meta.insert("opkit/operationId".to_owned(), json!(spec.id()));
    meta.insert("opkit/kind".to_owned(), json!(spec.kind.as_str()));
    if form == OutputForm::Wrapped {
        // opkit's MCP import reads the data back from under `result`.
        meta.insert(META_WRAPPED.to_owned(), json!("result"));
    }
    if !spec.access.is_public() {
        meta.insert(META_ACCESS.to_owned(), json!(spec.access));
    }
    Some(
        tool.with_annotations(annotations)
            .with_meta(MetaObject(meta)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outputs_per_era() {
        let object = OperationSpec::new("a", "b", OperationKind::Query)
            .output_schema(json!({"type": "object", "properties": {"x": {"type": "integer"}}}));
        assert_eq!(output(&object, false).0, OutputForm::Plain);
        let integer = OperationSpec::new("a", "b", OperationKind::Query)
            .output_schema(json!({"type": "integer"}));
        let (form, schema) = output(&integer, false);
        assert_eq!(form, OutputForm::Wrapped);
        assert_eq!(
            Value::Object(schema.unwrap()),
            json!({"type": "object", "properties": {"result": {"type": "integer"}}, "required": ["result"]})
        );
        assert_eq!(output(&integer, true).0, OutputForm::Plain);
        let unknown = OperationSpec::new("a", "b", OperationKind::Query);
        assert_eq!(output(&unknown, true), (OutputForm::Plain, None));
        assert_eq!(output(&unknown, false).0, OutputForm::Wrapped);
        let ticks = OperationSpec::new("a", "b", OperationKind::Subscription)
            .output_schema(json!({"type": "integer"}));
        let (form, schema) = output(&ticks, false);
        assert_eq!(form, OutputForm::Items);
        assert_eq!(
            schema.unwrap()["properties"]["items"],
            json!({"type": "array", "items": {"type": "integer"}})
        );
    }

    #[test]
    fn the_operations_meta_joins_opkits() {
        let spec = OperationSpec::new("a", "b", OperationKind::Query).with_edge_option(
            super::super::MCP_EDGE,
            "tool_meta",
            json!({"ui": {"resourceUri": "ui://a/b"}, "opkit/kind": "mine"}),
        );
        let meta = tool(&spec, "a_b", false).unwrap().meta.unwrap().0;
        assert_eq!(meta["ui"], json!({"resourceUri": "ui://a/b"}));
        assert_eq!(meta["opkit/kind"], "QUERY");
        assert_eq!(meta["opkit/operationId"], "a.b");
        let odd = OperationSpec::new("a", "b", OperationKind::Query).with_edge_option(
            super::super::MCP_EDGE,
            "tool_meta",
            json!(["no"]),
        );
        let meta = tool(&odd, "a_b", false).unwrap().meta.unwrap().0;
        assert!(meta.keys().all(|key| key.starts_with("opkit/")), "{meta:?}");
    }

    #[test]
    fn standard_schemas_are_served_for_any_spec() {
        let spec = OperationSpec::new("a", "b", OperationKind::Query)
            .input_schema(json!({"type": "object", "properties": {"n": {"type": "integer", "format": "uint32"}}}))
            .output_schema(json!({"type": "number", "format": "double"}));
        let tool = tool(&spec, "a.b", false).unwrap();
        assert_eq!(
            tool.input_schema["properties"]["n"],
            json!({"type": "integer", "minimum": 0, "maximum": u32::MAX})
        );
        assert_eq!(
            tool.output_schema.unwrap()["properties"]["result"],
            json!({"type": "number"})
        );
    }

    #[test]
    fn takes_arguments_agrees_with_the_input_schema() {
        for schema in [
            json!(true),
            json!(false),
            json!({}),
            json!({"type": "object"}),
            json!({"type": ["object", "null"]}),
            json!({"type": "integer"}),
            json!({"type": ["integer", "string"]}),
            json!(3),
        ] {
            let spec =
                OperationSpec::new("a", "b", OperationKind::Query).input_schema(schema.clone());
            assert_eq!(
                takes_arguments(&spec),
                input_schema(&spec).is_some(),
                "{schema}"
            );
        }
    }

    #[test]
    fn input_roots_become_objects() {
        let open = OperationSpec::new("a", "b", OperationKind::Query).input_schema(json!(true));
        assert_eq!(input_schema(&open).unwrap()["type"], "object");
        let union = OperationSpec::new("a", "b", OperationKind::Query)
            .input_schema(json!({"oneOf": [{"type": "object"}]}));
        assert_eq!(input_schema(&union).unwrap()["type"], "object");
        let number = OperationSpec::new("a", "b", OperationKind::Query)
            .input_schema(json!({"type": "integer"}));
        assert!(input_schema(&number).is_none());
    }
}
