//! `prompts/list` and `prompts/get`, from the operations of the [catalog](super::catalog).
//!
//! A prompt's arguments are its input's fields (name, description, required); `prompts/get`
//! reads the arguments as the schema's types and runs the operation through the registry's
//! front door. Its data becomes the messages: a list of
//! [`PromptMessage`](opkit::envelope::PromptMessage)s as they are, an object with
//! `messages` (and an optional `description`), or a string as one user message.

use super::arguments;
use super::catalog::{Catalog, PromptEntry};
use super::listing::page_of;
use super::replies::rpc_error;
use super::session::Asked;
use super::session::McpHandler;
use opkit::middleware::Outcome;
use rmcp::ErrorData as McpError;
use rmcp::model::{GetPromptRequestParams, GetPromptResponse, GetPromptResult, ListPromptsResult};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{Value, json};
use std::sync::Arc;

/// A page of the `prompts/list` result: the prompts from `cursor` on, by name.
pub(crate) fn list(catalog: &Catalog, cursor: Option<&str>) -> ListPromptsResult {
    let named: Vec<(&String, &Arc<PromptEntry>)> = catalog.prompts.iter().collect();
    let (page, next) = page_of(&named, |(name, _)| name.as_str(), cursor);
    let prompts: Vec<Value> = page
        .iter()
        .map(|(name, entry)| {
            let arguments: Vec<Value> = arguments::fields(&entry.spec.input_schema)
                .into_iter()
                .map(|(name, description, required)| {
                    let mut argument = json!({"name": name, "required": required});
                    if let Some(description) = description {
                        argument["description"] = json!(description);
                    }
                    argument
                })
                .collect();
            let mut prompt = json!({
                "name": name,
                "description": entry.spec.description.clone().unwrap_or_else(|| format!("prompt {}", entry.id)),
                "arguments": arguments,
            });
            if let Some(title) = super::options::title(&entry.spec) {
                prompt["title"] = json!(title);
            }
            if let Some(meta) = super::options::own_meta(&entry.spec) {
                prompt["_meta"] = json!(meta);
            }
            prompt
        })
        .collect();
    let mut result = json!({ "prompts": prompts, "resultType": "complete" });
    if let Some(next) = next {
        result["nextCursor"] = json!(next);
    }
    serde_json::from_value(result).unwrap_or_default()
}

impl McpHandler {
    /// `prompts/get`.
    pub(super) async fn prompt(
        &self,
        request: GetPromptRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        let name = request.name.as_str();
        let given = request.arguments;
        let names = self.catalog()?;
        let Some(entry) = names.catalog.prompts.get(name) else {
            return Err(McpError::invalid_params(
                format!("no prompt named {name:?}"),
                Some(json!({ "name": name })),
            ));
        };
        let pairs = given.unwrap_or_default().into_iter().map(|(key, value)| {
            let text = match value {
                Value::String(text) => text,
                other => other.to_string(),
            };
            (key, text)
        });
        let input = arguments::input_from_strings(&entry.spec.input_schema, pairs);
        let subject = format!("prompt:{name}");
        let state = request.request_state.as_deref();
        let asked = self
            .serve_asking(
                &entry.id,
                input,
                &subject,
                state,
                request.input_responses,
                context,
            )
            .await?;
        let outcome = match asked {
            Asked::Done(outcome) => outcome,
            Asked::Input(questions) => return Ok(questions.into()),
        };
        let envelope = match outcome {
            Ok(Outcome::Unary(reply)) => reply.into_envelope().map_err(|e| rpc_error(&e))?,
            Ok(Outcome::Stream(_)) => {
                return Err(McpError::internal_error(
                    format!("the prompt {name:?} is a subscription"),
                    None,
                ));
            }
            Err(error) => return Err(rpc_error(&error)),
        };
        messages(name, envelope.data).map(GetPromptResponse::from)
    }
}

/// The messages of a prompt's data (see the module docs).
fn messages(name: &str, data: Value) -> Result<GetPromptResult, McpError> {
    let (description, messages) = match data {
        Value::String(text) => (
            None,
            json!([{"role": "user", "content": {"type": "text", "text": text}}]),
        ),
        Value::Array(messages) => (None, Value::Array(messages)),
        Value::Object(mut object) if object.contains_key("messages") => (
            object.remove("description"),
            object.remove("messages").unwrap_or_default(),
        ),
        other => (
            None,
            json!([{"role": "user", "content": {"type": "text", "text": other.to_string()}}]),
        ),
    };
    let mut result = json!({ "messages": messages, "resultType": "complete" });
    if let Some(description) = description {
        result["description"] = description;
    }
    serde_json::from_value(result).map_err(|error| {
        McpError::internal_error(
            format!("the prompt {name:?} returned data that are not prompt messages: {error}"),
            None,
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_arrays_and_objects_become_messages() {
        let one = messages("p", json!("Summarize")).unwrap();
        assert_eq!(one.messages.len(), 1);
        let typed = serde_json::to_value(vec![
            opkit::envelope::PromptMessage::user("hi"),
            opkit::envelope::PromptMessage::assistant("hello"),
        ])
        .unwrap();
        assert_eq!(messages("p", typed).unwrap().messages.len(), 2);
        let described = messages(
            "p",
            json!({"description": "d", "messages": [{"role": "user", "content": {"type": "text", "text": "x"}}]}),
        )
        .unwrap();
        assert_eq!(described.description.as_deref(), Some("d"));
        let bad = messages("p", json!([{"role": "nobody"}])).unwrap_err();
        assert!(bad.message.contains("not prompt messages"), "{bad:?}");
    }
}
