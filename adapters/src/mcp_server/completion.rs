//! `completion/complete`: the values offered for a prompt argument or a resource template
//! variable while the user types it.
//!
//! An argument the operation names a completer for
//! (`#[operation(mcp(complete(topic = "notes.topics")))]`,
//! [`McpEdgeOptions::complete`](super::McpEdgeOptions::complete)) gets what that query answers, run as the
//! caller through the registry's front door with `value` (what was typed), and `argument` and
//! `arguments` (the others already given) when its input has those fields. Any other argument
//! gets the values its field's schema lists (`enum`, or `const`s under `oneOf`/`anyOf`) that
//! start with what was typed, ignoring case. At most 100 values are sent either way.

use super::arguments;
use super::replies::rpc_error;
use super::session::McpHandler;
use opkit::OperationSpec;
use opkit::middleware::Outcome;
use rmcp::ErrorData as McpError;
use rmcp::model::{CompleteRequestParams, CompleteResult, CompletionInfo, Reference};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// The completions one argument gets: the values and, when known, how many there are.
#[derive(Debug)]
struct Completions {
    values: Vec<String>,
    total: Option<usize>,
    has_more: bool,
}

impl Completions {
    /// `values`, at most [`CompletionInfo::MAX_VALUES`] of them, the rest counted.
    fn capped(mut values: Vec<String>, total: Option<usize>, has_more: bool) -> Self {
        let total = total.unwrap_or(values.len()).max(values.len());
        let has_more = has_more || values.len() > CompletionInfo::MAX_VALUES;
        values.truncate(CompletionInfo::MAX_VALUES);
        Self {
            values,
            total: Some(total),
            has_more,
        }
    }
}

impl McpHandler {
    /// `completion/complete`.
    pub(super) async fn complete_argument(
        &self,
        request: &CompleteRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<CompleteResult, McpError> {
        let names = self.catalog()?;
        let spec = match &request.r#ref {
            Reference::Prompt(prompt) => names
                .catalog
                .prompts
                .get(&prompt.name)
                .map(|entry| entry.spec.clone()),
            Reference::Resource(resource) => names
                .catalog
                .templates
                .iter()
                .find(|entry| entry.template.as_str() == resource.uri)
                .map(|entry| entry.spec.clone()),
            _ => None,
        };
        let Some(spec) = spec else {
            return Err(McpError::invalid_params(
                "the completion's reference names no prompt or resource template",
                None,
            ));
        };
        let argument = &request.argument;
        let completer = super::options::option(&spec, "complete")
            .and_then(|completers| completers.get(&argument.name))
            .and_then(Value::as_str);
        let completions = match completer {
            Some(completer) => self.ask_completer(completer, request, context).await?,
            None => from_schema(&spec, &argument.name, &argument.value),
        };
        let mut completion = json!({
            "values": completions.values,
            "hasMore": completions.has_more,
        });
        if let Some(total) = completions.total {
            completion["total"] = json!(total);
        }
        serde_json::from_value(json!({ "completion": completion, "resultType": "complete" }))
            .map_err(|error| McpError::internal_error(error.to_string(), None))
    }

    /// The completions the query `completer` answers for the request's argument.
    async fn ask_completer(
        &self,
        completer: &str,
        request: &CompleteRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<Completions, McpError> {
        let completer_spec = self.inner.registry.spec(completer).ok_or_else(|| {
            McpError::internal_error(format!("the completer `{completer}` is gone"), None)
        })?;
        let given: Map<String, Value> = request
            .context
            .as_ref()
            .and_then(|context| context.arguments.as_ref())
            .map(|arguments| {
                arguments
                    .iter()
                    .map(|(name, value)| (name.clone(), Value::String(value.clone())))
                    .collect()
            })
            .unwrap_or_default();
        let input = completer_input(
            &completer_spec,
            &request.argument.name,
            &request.argument.value,
            given,
        );
        let identity = self
            .identity(context)
            .await
            .map_err(|error| rpc_error(&error))?;
        let ctx = self.timed(self.call_context(identity, context));
        let outcome = Box::pin(self.inner.registry.serve(completer, input, ctx)).await;
        let data = match outcome {
            Ok(Outcome::Unary(reply)) => reply.into_envelope().map_err(|e| rpc_error(&e))?.data,
            Ok(Outcome::Stream(_)) => {
                return Err(McpError::internal_error(
                    format!("the completer `{completer}` is a subscription"),
                    None,
                ));
            }
            Err(error) => return Err(rpc_error(&error)),
        };
        completions_of(completer, data)
    }
}

/// The completer's input: `value`, and `argument` and `arguments` where its input schema has
/// those fields (all three when it names no fields).
fn completer_input(
    spec: &Arc<OperationSpec>,
    argument: &str,
    value: &str,
    given: Map<String, Value>,
) -> Value {
    let fields = spec
        .input_schema
        .get("properties")
        .and_then(Value::as_object);
    let wants = |field: &str| fields.is_none_or(|fields| fields.contains_key(field));
    let mut input = Map::new();
    input.insert("value".to_owned(), Value::String(value.to_owned()));
    if wants("argument") {
        input.insert("argument".to_owned(), Value::String(argument.to_owned()));
    }
    if wants("arguments") {
        input.insert("arguments".to_owned(), Value::Object(given));
    }
    Value::Object(input)
}

/// A completer's data as completions: a list (strings as they are, other values as JSON
/// text) or `{"values": [..], "total"?, "hasMore"?}`.
fn completions_of(completer: &str, data: Value) -> Result<Completions, McpError> {
    let text = |value: Value| match value {
        Value::String(text) => text,
        other => other.to_string(),
    };
    match data {
        Value::Array(values) => Ok(Completions::capped(
            values.into_iter().map(text).collect(),
            None,
            false,
        )),
        Value::Object(mut object) if object.get("values").is_some_and(Value::is_array) => {
            let values = match object.remove("values") {
                Some(Value::Array(values)) => values.into_iter().map(text).collect(),
                _ => Vec::new(),
            };
            let total = object
                .get("total")
                .and_then(Value::as_u64)
                .and_then(|total| usize::try_from(total).ok());
            let has_more = object
                .get("hasMore")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            Ok(Completions::capped(values, total, has_more))
        }
        other => Err(McpError::internal_error(
            format!(
                "the completer `{completer}` answered {other}, not a list of values or an object with `values`"
            ),
            None,
        )),
    }
}

/// The values `argument`'s field lists that start with `typed` (ignoring case).
fn from_schema(spec: &OperationSpec, argument: &str, typed: &str) -> Completions {
    let typed = typed.to_lowercase();
    let matching: Vec<String> = arguments::choices(&spec.input_schema, argument)
        .into_iter()
        .filter(|choice| choice.to_lowercase().starts_with(&typed))
        .collect();
    Completions::capped(matching, None, false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use opkit::OperationKind;

    #[test]
    fn lists_and_objects_are_completions_and_more_than_100_are_cut() {
        let many: Vec<Value> = (0..150).map(|n| json!(format!("v{n}"))).collect();
        let cut = completions_of("c", Value::Array(many)).unwrap();
        assert_eq!(
            (cut.values.len(), cut.total, cut.has_more),
            (100, Some(150), true)
        );
        let object = completions_of(
            "c",
            json!({"values": ["a", 7], "total": 9, "hasMore": true}),
        )
        .unwrap();
        assert_eq!(object.values, ["a", "7"]);
        assert_eq!((object.total, object.has_more), (Some(9), true));
        let error = completions_of("notes.topics", json!(3)).unwrap_err();
        assert!(error.message.contains("notes.topics"), "{error:?}");
    }

    #[test]
    fn the_completer_gets_the_fields_its_input_has() {
        let narrow = Arc::new(
            OperationSpec::new("n", "c", OperationKind::Query).input_schema(
                json!({"type": "object", "properties": {"value": {"type": "string"}}}),
            ),
        );
        assert_eq!(
            completer_input(&narrow, "topic", "ga", Map::new()),
            json!({"value": "ga"})
        );
        let open = Arc::new(OperationSpec::new("n", "c", OperationKind::Query));
        let given = Map::from_iter([("city".to_owned(), json!("Oslo"))]);
        assert_eq!(
            completer_input(&open, "topic", "ga", given),
            json!({"value": "ga", "argument": "topic", "arguments": {"city": "Oslo"}})
        );
    }
}
