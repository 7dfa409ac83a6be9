//! Imported tools: a server's `tools/list` as operation specs (names kept across
//! refreshes, schemas the validator cannot compile opened up) and each tool's handler.

use super::client::Client;
use crate::mcp::names;
use crate::mcp::tools::{self, tool_spec};
use opkit::schema::CompiledSchema;
use opkit::trace::{CallSpan, SpanKind};
use opkit::{Handler, OperationContext, OperationSpec};
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use tracing::Instrument;

/// One imported tool: its real name, the spec of its operation, and what a call of it reads
/// of the spec, kept from the start (a call clones two `Arc`s, not the spec).
#[derive(Clone)]
pub(super) struct ImportedTool {
    pub tool_name: String,
    pub spec: OperationSpec,
    /// The output schema its results are checked against (`None`: the tool declares none).
    pub output_schema: Arc<Option<Value>>,
    /// The key its non-object results come wrapped under ([`wrapped_key`]).
    pub wrapped: Option<Arc<str>>,
}

impl ImportedTool {
    fn new(tool_name: String, spec: OperationSpec) -> Self {
        let output_schema = Arc::new(
            Some(spec.output_schema.clone().into_value())
                .filter(|schema| !opkit::schema::is_unknown(schema)),
        );
        let wrapped = wrapped_key(&spec).map(Arc::from);
        Self {
            tool_name,
            spec,
            output_schema,
            wrapped,
        }
    }
}

/// Builds the imported tools from a raw `tools/list`, keeping previous operation names.
pub(super) fn build_tools(
    namespace: &str,
    label: &str,
    raw: &[Value],
    previous: &HashMap<String, String>,
) -> Vec<ImportedTool> {
    let mut by_name: BTreeMap<&str, &Value> = BTreeMap::new();
    for tool in raw {
        match tools::tool_name(tool) {
            Some(name) if !by_name.contains_key(name) => {
                by_name.insert(name, tool);
            }
            Some(name) => {
                tracing::warn!(target: "opkit_adapters::mcp", server = %label, tool = %name,
                "the server lists this tool twice; the first definition is used")
            }
            None => tracing::warn!(target: "opkit_adapters::mcp", server = %label, tool = %tool,
                "skipping a tool without a name"),
        }
    }
    let assigned = names::assign(by_name.keys().copied(), previous);
    by_name
        .into_iter()
        .map(|(tool_name, tool)| {
            let spec = tool_spec(namespace, &assigned[tool_name], label, tool);
            ImportedTool::new(tool_name.to_owned(), usable_schemas(spec, label))
        })
        .collect()
}

/// Gives each imported operation its access rule: by its name under `namespace` (a
/// resource's or prompt's with its `resources.`/`prompts.` prefix), else the opkit rule its
/// server declared in its `_meta`, else the import's (see [`ImportAccess`](crate::ImportAccess)).
pub(super) fn govern<'a>(
    namespace: &str,
    access: &crate::ImportAccess,
    specs: impl IntoIterator<Item = &'a mut OperationSpec>,
) {
    for spec in specs {
        let id = spec.id();
        let name = id
            .strip_prefix(namespace)
            .and_then(|rest| rest.strip_prefix('.'))
            .unwrap_or(&spec.name)
            .to_owned();
        let declared = spec
            .extensions
            .get(tools::EXT_META)
            .and_then(|meta| meta.get(crate::mcp_meta::META_ACCESS));
        spec.access = access.rule_for(&name, declared);
    }
}

/// Replaces a schema the validator cannot compile by an open one (the server still checks).
fn usable_schemas(mut spec: OperationSpec, label: &str) -> OperationSpec {
    let tool = spec
        .extensions
        .get(tools::EXT_TOOL_NAME)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    if let Err(error) = CompiledSchema::compile(&spec.input_schema) {
        tracing::warn!(target: "opkit_adapters::mcp", server = %label, tool = %tool, %error,
            "the tool's inputSchema does not compile; the operation accepts any object");
        let original = std::mem::replace(&mut spec.input_schema, json!({"type": "object"}).into());
        spec = spec.extension("mcp.inputSchema", original.into_value());
    }
    if !opkit::schema::is_unknown(&spec.output_schema)
        && let Err(error) = CompiledSchema::compile(&spec.output_schema)
    {
        tracing::warn!(target: "opkit_adapters::mcp", server = %label, tool = %tool, %error,
            "the tool's outputSchema does not compile; the operation's output is Unknown");
        let original = std::mem::replace(&mut spec.output_schema, Value::Bool(true).into());
        spec = spec.extension("mcp.outputSchema", original.into_value());
    }
    spec
}

/// The `structuredContent` property holding a wrapped tool's data (see `tools`).
fn wrapped_key(spec: &OperationSpec) -> Option<&str> {
    spec.extensions
        .get(tools::EXT_WRAPPED)
        .and_then(Value::as_str)
}

/// The handler of one tool's operation.
pub(super) fn tool_handler(client: &Arc<Client>, tool: &ImportedTool) -> Handler {
    let client = client.clone();
    let tool_name: Arc<str> = Arc::from(tool.tool_name.as_str());
    let output_schema = tool.output_schema.clone();
    let wrapped = tool.wrapped.clone();
    let operation_id: Arc<str> = Arc::from(tool.spec.id().as_str());
    Handler::unary_envelope(move |input, ctx: OperationContext| {
        let client = client.clone();
        let tool_name = tool_name.clone();
        let operation_id = operation_id.clone();
        let output_schema = output_schema.clone();
        let wrapped = wrapped.clone();
        async move {
            let mut span = CallSpan::start(SpanKind::Client, "mcp", &operation_id, &ctx);
            let ctx = span.apply(ctx);
            let calling = client.call(
                &tool_name,
                input,
                &ctx,
                output_schema.as_ref().as_ref(),
                wrapped.as_deref(),
            );
            let result = if span.is_active() {
                calling.instrument(span.span().clone()).await
            } else {
                calling.await
            };
            span.finish_with(&result);
            result
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use opkit::OperationRegistry;

    fn names(tools: &[ImportedTool]) -> Vec<(String, String)> {
        tools
            .iter()
            .map(|tool| (tool.tool_name.clone(), tool.spec.id()))
            .collect()
    }

    #[test]
    fn builds_one_spec_per_named_tool() {
        let raw = vec![
            json!({"name": "get-sum", "inputSchema": {"type": "object"}}),
            json!({"name": "get-sum", "inputSchema": {"type": "object", "title": "again"}}),
            json!({"inputSchema": {"type": "object"}}),
            json!({"name": "echo", "inputSchema": {"type": "object"}}),
        ];
        let tools = build_tools("ns", "server", &raw, &HashMap::new());
        assert_eq!(
            names(&tools),
            [
                ("echo".to_owned(), "ns.echo".to_owned()),
                ("get-sum".to_owned(), "ns.get_sum".to_owned())
            ]
        );
        // The first of two definitions with one name wins.
        assert_eq!(tools[1].spec.input_schema, json!({"type": "object"}));
        assert_eq!(
            tools[1].spec.origin.as_deref(),
            Some("mcp server tool get-sum")
        );
    }

    #[test]
    fn keeps_operation_names_across_a_refresh() {
        let first = build_tools(
            "ns",
            "s",
            &[json!({"name": "a.b", "inputSchema": {"type": "object"}})],
            &HashMap::new(),
        );
        let previous: HashMap<String, String> = first
            .iter()
            .map(|tool| (tool.tool_name.clone(), tool.spec.name.clone()))
            .collect();
        let second = build_tools(
            "ns",
            "s",
            &[
                json!({"name": "a-b", "inputSchema": {"type": "object"}}),
                json!({"name": "a.b", "inputSchema": {"type": "object"}}),
            ],
            &previous,
        );
        assert_eq!(
            names(&second),
            [
                ("a-b".to_owned(), "ns.a_b_2".to_owned()),
                ("a.b".to_owned(), "ns.a_b".to_owned())
            ]
        );
    }

    #[test]
    fn schemas_that_do_not_compile_are_opened_up_and_kept() {
        let bad_input = json!({"type": "object", "properties": {"n": {"type": 5}}});
        let bad_output = json!({"type": "nonsense"});
        let tools = build_tools(
            "ns",
            "s",
            &[json!({"name": "t", "inputSchema": bad_input, "outputSchema": bad_output})],
            &HashMap::new(),
        );
        let spec = &tools[0].spec;
        assert_eq!(spec.input_schema, json!({"type": "object"}));
        assert!(spec.has_unknown_output());
        assert_eq!(spec.extensions["mcp.inputSchema"], bad_input);
        assert_eq!(spec.extensions["mcp.outputSchema"], bad_output);
        // And the result registers.
        let registry = OperationRegistry::new();
        registry
            .register(
                spec.clone(),
                Handler::unary(|_, _| async { Ok(Value::Null) }),
            )
            .unwrap();
    }
}
