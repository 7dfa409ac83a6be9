//! Asking the caller's user for input while an operation runs:
//! [`OperationContext::elicit`](crate::OperationContext::elicit).
//!
//! An operation writes `ctx.elicit::<Confirm>("Delete 40 notes?")`; the edge the call came
//! through decides how the question reaches the user. It does so by putting an
//! [`Elicitor`] on the context: the MCP server asks the client (`elicitation/create` for
//! 2025-11-25 clients, an input-required result for 2026-07-28 clients). A call through an
//! edge with no way to ask (HTTP, the call protocol, an in-process call without an elicitor)
//! gets [`CallError::unavailable`] naming the edge, with `details.elicitation: false`: the
//! operation decides what "nobody can answer" means (usually: refuse the destructive part).
//!
//! Over MCP 2026-07-28 (no requests from server to client) the question ends the call with
//! an input-required result, and the client calls again with the answer: the operation
//! **runs again from the start**, and each `elicit` it reaches returns the answer given to
//! it in an earlier round. So ask before doing anything that must not happen twice, and ask
//! the same questions in the same order.
//!
//! The schema sent with the question is derived from the answer's type: a flat object of
//! strings, numbers, integers, booleans and string enums (what MCP clients render as a
//! form), with `$ref`s inlined and `null` dropped from optional fields.

use crate::CallError;
use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// What the user did with a question.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ElicitAction {
    /// The user answered (the answer is in [`ElicitResponse::content`]).
    Accept,
    /// The user said no.
    Decline,
    /// The user dismissed the question without choosing.
    Cancel,
}

/// A question for the user: a message and the JSON Schema of the answer.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ElicitRequest {
    /// What to ask.
    pub message: String,
    /// The schema of the answer (a flat object; see the module docs).
    pub schema: Value,
    /// A name for the question, unique within the call. Edges that ask over several round
    /// trips (MCP 2026-07-28) name the question with it; without one they number it.
    pub key: Option<String>,
}

impl ElicitRequest {
    /// A question with its answer's schema.
    pub fn new(message: impl Into<String>, schema: Value) -> Self {
        Self {
            message: message.into(),
            schema,
            key: None,
        }
    }

    /// Names the question (see [`ElicitRequest::key`]).
    #[must_use]
    pub fn with_key(mut self, key: impl Into<String>) -> Self {
        self.key = Some(key.into());
        self
    }
}

/// The user's answer, as the edge received it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ElicitResponse {
    /// Accepted, declined or cancelled.
    pub action: ElicitAction,
    /// The answer (an object) when accepted.
    pub content: Option<Value>,
}

impl ElicitResponse {
    /// A response.
    pub fn new(action: ElicitAction, content: Option<Value>) -> Self {
        Self { action, content }
    }
}

/// What [`OperationContext::elicit`](crate::OperationContext::elicit) returns: the typed
/// answer, or what the user did instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Elicited<T> {
    /// The user answered.
    Accepted(T),
    /// The user said no.
    Declined,
    /// The user dismissed the question.
    Cancelled,
}

impl<T> Elicited<T> {
    /// The answer, when the user gave one.
    pub fn accepted(self) -> Option<T> {
        match self {
            Self::Accepted(value) => Some(value),
            Self::Declined | Self::Cancelled => None,
        }
    }
}

/// How an edge asks its caller's user a question. Set on a context with
/// [`OperationContext::with_elicitor`](crate::OperationContext::with_elicitor).
pub trait Elicitor: Send + Sync + 'static {
    /// Asks; resolves when the user answers (or the edge gives up, with an error).
    fn elicit(
        &self,
        request: ElicitRequest,
    ) -> BoxFuture<'static, Result<ElicitResponse, CallError>>;

    /// Any other request for the caller's client, e.g. MCP's `sampling/createMessage` (the
    /// client's model) or `roots/list` (deprecated from 2026-07-28, served for older
    /// clients); resolves with the client's result as JSON. By default the edge cannot.
    fn request(&self, request: ClientRequest) -> BoxFuture<'static, Result<Value, CallError>> {
        Box::pin(std::future::ready(Err(missing_capability(
            &request.method,
            capability_of(&request.method),
        ))))
    }
}

/// A request for the caller's client other than a question for its user (see
/// [`Elicitor::request`]): the protocol method and its params, and an optional name unique
/// within the call (as [`ElicitRequest::key`]).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ClientRequest {
    /// The method, e.g. `sampling/createMessage`.
    pub method: String,
    /// Its params.
    pub params: Value,
    /// A name for the request, unique within the call.
    pub key: Option<String>,
}

impl ClientRequest {
    /// A request.
    pub fn new(method: impl Into<String>, params: Value) -> Self {
        Self {
            method: method.into(),
            params,
            key: None,
        }
    }

    /// Names the request.
    #[must_use]
    pub fn with_key(mut self, key: impl Into<String>) -> Self {
        self.key = Some(key.into());
        self
    }
}

/// The client capability a request needs (`sampling`, `roots`, `elicitation`).
pub fn capability_of(method: &str) -> &str {
    method.split('/').next().unwrap_or(method)
}

/// The error of a request the caller's client cannot take: it did not declare `capability`
/// (or the edge has no client). `details.requiredCapability` names it, which an MCP server
/// answers with `-32021` (missing required client capability) when the operation returns it.
pub fn missing_capability(method: &str, capability: &str) -> CallError {
    CallError::unavailable(format!(
        "this operation sends `{method}` to the caller's client, which did not declare the `{capability}` capability (or there is no client to ask)"
    ))
    .with_details(serde_json::json!({"requiredCapability": capability}))
}

/// The error of a call that asked a question through an edge that cannot ask.
pub(crate) fn unavailable(edge: Option<&str>) -> CallError {
    let edge = edge.unwrap_or("an in-process call");
    CallError::unavailable(format!(
        "this operation asks the user a question (elicitation), and {edge} has no way to ask: \
         call it over MCP, or give the context an Elicitor"
    ))
    .with_details(serde_json::json!({"elicitation": false, "edge": edge}))
}

/// `true` when `error` says the call's edge has no way to ask its user (it came through
/// HTTP, the call protocol, or an MCP client without the elicitation capability), as
/// opposed to a question that was asked and failed. An operation that asks for a
/// confirmation decides what that means, e.g. that the caller chose by calling.
pub fn cannot_ask(error: &CallError) -> bool {
    error.kind == Some(crate::ErrorKind::Unavailable)
        && error
            .details
            .as_ref()
            .and_then(|details| details.get("elicitation"))
            == Some(&Value::Bool(false))
}

/// The typed answer of a response (`Accepted` content that does not match `T` is a
/// validation error naming the field).
pub(crate) fn typed<T: DeserializeOwned>(
    response: ElicitResponse,
) -> Result<Elicited<T>, CallError> {
    match response.action {
        ElicitAction::Decline => Ok(Elicited::Declined),
        ElicitAction::Cancel => Ok(Elicited::Cancelled),
        ElicitAction::Accept => {
            let content = response
                .content
                .unwrap_or_else(|| Value::Object(Map::new()));
            serde_json::from_value(content)
                .map(Elicited::Accepted)
                .map_err(|error| {
                    CallError::validation(
                        "elicitation answer",
                        vec![crate::Violation {
                            path: String::new(),
                            message: error.to_string(),
                        }],
                    )
                })
        }
    }
}

/// The schema of an answer of type `T`, flattened for an elicitation form.
pub fn answer_schema<T: JsonSchema + ?Sized>() -> Value {
    flatten(crate::schema::input_schema_for::<T>())
}

/// A schema made flat for an elicitation form: `$ref`s into `$defs` inlined, `$schema` and
/// `$defs` dropped, `["T", "null"]` types made `"T"`.
pub fn flatten(mut schema: Value) -> Value {
    let defs = schema
        .as_object_mut()
        .and_then(|object| object.remove("$defs"))
        .unwrap_or(Value::Null);
    if let Some(object) = schema.as_object_mut() {
        object.remove("$schema");
        if let Some(Value::Object(properties)) = object.get_mut("properties") {
            for property in properties.values_mut() {
                inline(property, &defs);
            }
        }
    }
    schema
}

/// Inlines one property's `$ref` (and a one-element `allOf`/`anyOf` of a `$ref` with a null),
/// and drops `null` from its type.
fn inline(property: &mut Value, defs: &Value) {
    let Some(object) = property.as_object_mut() else {
        return;
    };
    // `Option<Enum>`: `anyOf: [{$ref}, {type: null}]`.
    if let Some(Value::Array(variants)) = object.get("anyOf") {
        let non_null: Vec<&Value> = variants
            .iter()
            .filter(|variant| variant.get("type") != Some(&Value::String("null".into())))
            .collect();
        if let [only] = non_null.as_slice() {
            let only = (*only).clone();
            object.remove("anyOf");
            for (key, value) in only.as_object().into_iter().flatten() {
                object.entry(key.clone()).or_insert_with(|| value.clone());
            }
        }
    }
    if let Some(Value::String(reference)) = object.remove("$ref") {
        let name = reference.rsplit('/').next().unwrap_or_default();
        if let Some(Value::Object(target)) = defs.get(name) {
            for (key, value) in target {
                object.entry(key.clone()).or_insert_with(|| value.clone());
            }
        }
    }
    if let Some(Value::Array(types)) = object.get("type") {
        let kept: Vec<Value> = types
            .iter()
            .filter(|kind| kind.as_str() != Some("null"))
            .cloned()
            .collect();
        if let [one] = kept.as_slice() {
            object.insert("type".to_owned(), one.clone());
        }
    }
    if let Some(Value::Array(values)) = object.get_mut("enum") {
        values.retain(|value| !value.is_null());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(Debug, Deserialize, JsonSchema)]
    #[allow(dead_code)]
    enum Color {
        Red,
        Blue,
    }

    #[derive(Debug, Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Answer {
        /// Sure?
        confirm: bool,
        color: Option<Color>,
        note: Option<String>,
        count: u8,
    }

    #[test]
    fn the_answer_schema_is_a_flat_form() {
        let schema = answer_schema::<Answer>();
        assert!(schema.get("$defs").is_none() && schema.get("$schema").is_none());
        let properties = &schema["properties"];
        assert_eq!(properties["confirm"]["type"], "boolean");
        assert_eq!(properties["color"]["type"], "string");
        assert_eq!(properties["color"]["enum"], json!(["Red", "Blue"]));
        assert_eq!(properties["note"]["type"], "string");
        assert_eq!(properties["count"]["type"], "integer");
        assert_eq!(properties["count"]["maximum"], 255);
    }

    #[test]
    fn answers_become_typed_or_a_named_violation() {
        let ok = typed::<Answer>(ElicitResponse::new(
            ElicitAction::Accept,
            Some(json!({"confirm": true, "count": 3})),
        ))
        .unwrap();
        assert!(matches!(
            ok,
            Elicited::Accepted(Answer { confirm: true, .. })
        ));
        let declined = typed::<Answer>(ElicitResponse::new(ElicitAction::Decline, None));
        assert!(matches!(declined, Ok(Elicited::Declined)));
        let bad = typed::<Answer>(ElicitResponse::new(
            ElicitAction::Accept,
            Some(json!({"confirm": "yes"})),
        ))
        .unwrap_err();
        assert_eq!(bad.code, crate::ErrorCode::ValidationError);
    }
}
