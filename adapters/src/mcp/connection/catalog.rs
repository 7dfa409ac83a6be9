//! An imported server's resources, resource templates and prompts as operations (queries),
//! listed when the connection is made and on each refresh.
//!
//! | listed | operation | input | data |
//! |---|---|---|---|
//! | a resource | `<namespace>.resources.<name>` | none | the `contents` of `resources/read` |
//! | a resource template | `<namespace>.resources.<name>` | one string field per URI variable | the `contents` of the expanded URI |
//! | a prompt | `<namespace>.prompts.<name>` | one string field per argument | `{description?, messages}` of `prompts/get` |
//!
//! Names are sanitized like tool names. The envelope is an MCP envelope: a read's contents
//! are also its content blocks (embedded resources), a prompt's messages' contents too. The
//! resource's URI (or template) and the prompt's name are kept in the spec's extensions
//! `mcp.resourceUri`, `mcp.resourceTemplate` and `mcp.promptName`.

use super::client::Client;
use super::error::{McpError, service_error};
use crate::mcp::names;
use opkit::envelope::{McpContentBlock, McpMeta, mcp_envelope};
use opkit::{CallError, Handler, OperationContext, OperationKind, OperationSpec};
use rmcp::model::{
    ClientRequest, GetPromptRequest, GetPromptRequestParams, ReadResourceRequest,
    ReadResourceRequestParams, ServerResult,
};
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::sync::Arc;

/// What an imported operation reads.
#[derive(Debug, Clone)]
pub(super) enum Source {
    /// A resource at this URI.
    Resource(String),
    /// A resource template.
    Template(String),
    /// A prompt by this name.
    Prompt(String),
}

/// One imported resource, template or prompt.
#[derive(Debug, Clone)]
pub(super) struct Imported {
    pub spec: OperationSpec,
    pub source: Source,
}

/// The server's resources, templates and prompts, when it offers them.
pub(super) async fn list(client: &Client, namespace: &str) -> Result<Vec<Imported>, McpError> {
    let Some(info) = client.peer().peer_info() else {
        return Ok(Vec::new());
    };
    let mut imported = Vec::new();
    if info.capabilities.resources.is_some() {
        let resources = client.list_all("resources/list", "resources").await?;
        let templates = client
            .list_all("resources/templates/list", "resourceTemplates")
            .await?;
        let namespace = format!("{namespace}.resources");
        let listed: Vec<(String, Value, Source)> = resources
            .into_iter()
            .filter_map(|item| {
                let uri = item.get("uri")?.as_str()?.to_owned();
                Some((name_of(&item, &uri), item, Source::Resource(uri)))
            })
            .chain(templates.into_iter().filter_map(|item| {
                let template = item.get("uriTemplate")?.as_str()?.to_owned();
                Some((name_of(&item, &template), item, Source::Template(template)))
            }))
            .collect();
        imported.extend(specs(&namespace, &client.label, listed));
    }
    if info.capabilities.prompts.is_some() {
        let prompts = client.list_all("prompts/list", "prompts").await?;
        let namespace = format!("{namespace}.prompts");
        let listed: Vec<(String, Value, Source)> = prompts
            .into_iter()
            .filter_map(|item| {
                let name = item.get("name")?.as_str()?.to_owned();
                Some((name.clone(), item, Source::Prompt(name)))
            })
            .collect();
        imported.extend(specs(&namespace, &client.label, listed));
    }
    Ok(imported)
}

/// The name a listed resource goes by: its `name`, else its URI.
fn name_of(item: &Value, uri: &str) -> String {
    item.get("name")
        .and_then(Value::as_str)
        .unwrap_or(uri)
        .to_owned()
}

/// The specs of listed items (first of each name wins).
fn specs(namespace: &str, label: &str, listed: Vec<(String, Value, Source)>) -> Vec<Imported> {
    let mut by_name: HashMap<String, (Value, Source)> = HashMap::new();
    for (name, item, source) in listed {
        by_name.entry(name).or_insert((item, source));
    }
    let assigned = names::assign(by_name.keys().map(String::as_str), &HashMap::new());
    let mut imported: Vec<Imported> = by_name
        .into_iter()
        .map(|(name, (item, source))| Imported {
            spec: spec(namespace, &assigned[&name], label, &item, &source),
            source,
        })
        .collect();
    imported.sort_by_key(|item| item.spec.id());
    imported
}

/// The spec of one listed item.
fn spec(namespace: &str, name: &str, label: &str, item: &Value, source: &Source) -> OperationSpec {
    let description = item
        .get("description")
        .or_else(|| item.get("title"))
        .and_then(Value::as_str)
        .filter(|text| !text.is_empty())
        .map(str::to_owned);
    let Shape {
        fields,
        required,
        origin,
        extension,
    } = shape(label, item, source);
    let properties: Map<String, Value> = fields
        .into_iter()
        .map(|(name, description)| {
            let mut field = json!({"type": "string"});
            if let Some(description) = description {
                field["description"] = json!(description);
            }
            (name, field)
        })
        .collect();
    let mut spec = OperationSpec::new(namespace, name, OperationKind::Query)
        .input_schema(json!({
            "type": "object",
            "properties": properties,
            "required": required,
        }))
        .origin(origin)
        .extension(extension.0, extension.1);
    spec.description = description;
    spec
}

/// An item's input fields (name, description), the required ones, its origin and its
/// extension.
struct Shape {
    fields: Vec<(String, Option<String>)>,
    required: Vec<String>,
    origin: String,
    extension: (&'static str, Value),
}

/// The [`Shape`] of one listed item.
fn shape(label: &str, item: &Value, source: &Source) -> Shape {
    let (fields, required, origin, extension) = match source {
        Source::Resource(uri) => (
            Vec::new(),
            Vec::new(),
            format!("mcp server {label} resource {uri}"),
            ("mcp.resourceUri", json!(uri)),
        ),
        Source::Template(template) => {
            let variables = variables(template);
            (
                variables.iter().map(|name| (name.clone(), None)).collect(),
                variables,
                format!("mcp server {label} resource template {template}"),
                ("mcp.resourceTemplate", json!(template)),
            )
        }
        Source::Prompt(prompt) => {
            let arguments = item
                .get("arguments")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            let fields = arguments
                .iter()
                .filter_map(|argument| {
                    let name = argument.get("name")?.as_str()?.to_owned();
                    let description = argument
                        .get("description")
                        .and_then(Value::as_str)
                        .map(str::to_owned);
                    Some((name, description))
                })
                .collect();
            let required = arguments
                .iter()
                .filter(|argument| argument.get("required") == Some(&Value::Bool(true)))
                .filter_map(|argument| Some(argument.get("name")?.as_str()?.to_owned()))
                .collect();
            (
                fields,
                required,
                format!("mcp server {label} prompt {prompt}"),
                ("mcp.promptName", json!(prompt)),
            )
        }
    };
    Shape {
        fields,
        required,
        origin,
        extension,
    }
}

/// The variables of a URI template (`{name}` and `{+name}`), in order.
fn variables(template: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let after = &rest[open + 1..];
        let Some(close) = after.find('}') else { break };
        let name = after[..close].trim_start_matches('+');
        if !name.is_empty() && !names.iter().any(|known| known == name) {
            names.push(name.to_owned());
        }
        rest = &after[close + 1..];
    }
    names
}

/// The URI of a template with `input`'s fields: `{name}` percent-encoded, `{+name}` as is.
fn expand(template: &str, input: &Value) -> String {
    let mut uri = String::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        uri.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let Some(close) = after.find('}') else {
            uri.push_str(&rest[open..]);
            return uri;
        };
        let (name, reserved) = match after[..close].strip_prefix('+') {
            Some(name) => (name, true),
            None => (&after[..close], false),
        };
        let value = match input.get(name) {
            Some(Value::String(text)) => text.clone(),
            Some(other) => other.to_string(),
            None => String::new(),
        };
        if reserved {
            uri.push_str(&value);
        } else {
            uri.extend(percent_encoding::utf8_percent_encode(
                &value,
                percent_encoding::NON_ALPHANUMERIC,
            ));
        }
        rest = &after[close + 1..];
    }
    uri.push_str(rest);
    uri
}

/// The handler of one imported resource, template or prompt.
pub(super) fn handler(client: &Arc<Client>, item: &Imported) -> Handler {
    let client = client.clone();
    let source = item.source.clone();
    Handler::unary_envelope(move |input, ctx: OperationContext| {
        let client = client.clone();
        let source = source.clone();
        async move {
            let (what, request) = match &source {
                Source::Resource(uri) => (uri.clone(), read(uri)),
                Source::Template(template) => {
                    let uri = expand(template, &input);
                    (uri.clone(), read(&uri))
                }
                Source::Prompt(name) => {
                    let arguments: Map<String, Value> = input
                        .as_object()
                        .into_iter()
                        .flatten()
                        .map(|(key, value)| {
                            let text = match value {
                                Value::String(text) => text.clone(),
                                other => other.to_string(),
                            };
                            (key.clone(), Value::String(text))
                        })
                        .collect();
                    let params =
                        GetPromptRequestParams::new(name.clone()).with_arguments(arguments);
                    (
                        format!("prompt {name}"),
                        ClientRequest::GetPromptRequest(GetPromptRequest::new(params)),
                    )
                }
            };
            let answer = ctx
                .bounds()
                .run(client.peer().send_request(request))
                .await
                .map_err(|stop| super::error::stopped(&client.label, &what, stop))?
                .map_err(|error| service_error(&client.label, &what, error))?;
            let raw = match answer {
                ServerResult::ReadResourceResult(result) => serde_json::to_value(result),
                ServerResult::GetPromptResult(result) => serde_json::to_value(result),
                other => serde_json::to_value(other),
            }
            .map_err(|error| CallError::execution(format!("{what}: {error}")))?;
            Ok(envelope(&source, raw))
        }
    })
}

/// The `resources/read` request of `uri`.
fn read(uri: &str) -> ClientRequest {
    ClientRequest::ReadResourceRequest(ReadResourceRequest::new(ReadResourceRequestParams::new(
        uri,
    )))
}

/// The MCP envelope of a read's or a prompt's result.
fn envelope(source: &Source, raw: Value) -> opkit::ResponseEnvelope {
    let (data, blocks): (Value, Vec<Value>) = match source {
        Source::Prompt(_) => {
            let messages = raw.get("messages").cloned().unwrap_or_else(|| json!([]));
            let blocks = messages
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|message| message.get("content").cloned())
                .collect();
            let mut data = json!({ "messages": messages });
            if let Some(description) = raw.get("description") {
                data["description"] = description.clone();
            }
            (data, blocks)
        }
        Source::Resource(_) | Source::Template(_) => {
            let contents = raw.get("contents").cloned().unwrap_or_else(|| json!([]));
            let blocks = contents
                .as_array()
                .into_iter()
                .flatten()
                .map(|resource| json!({"type": "resource", "resource": resource}))
                .collect();
            (contents, blocks)
        }
    };
    let content: Vec<McpContentBlock> = blocks
        .into_iter()
        .filter_map(|block| serde_json::from_value(block).ok())
        .collect();
    mcp_envelope(
        data,
        McpMeta {
            is_error: false,
            content,
            structured_content: None,
            meta: raw.get("_meta").cloned(),
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_expand_and_name_their_variables() {
        let template = "notes://{owner}/{+path}";
        assert_eq!(variables(template), ["owner", "path"]);
        let uri = expand(template, &json!({"owner": "ann lee", "path": "a/b"}));
        assert_eq!(uri, "notes://ann%20lee/a/b");
    }

    #[test]
    fn prompts_take_their_arguments_as_string_fields() {
        let item = json!({"name": "greet", "arguments": [
            {"name": "who", "description": "Whom", "required": true}, {"name": "tone"}
        ]});
        let spec = spec(
            "ns.prompts",
            "greet",
            "s",
            &item,
            &Source::Prompt("greet".into()),
        );
        assert_eq!(spec.id(), "ns.prompts.greet");
        assert_eq!(
            spec.input_schema["properties"]["who"]["description"],
            "Whom"
        );
        assert_eq!(spec.input_schema["required"], json!(["who"]));
        assert_eq!(spec.kind, OperationKind::Query);
    }
}
