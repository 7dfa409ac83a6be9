//! A remote server's questions, asked of the importing operation's own caller.
//!
//! An imported tool's server may ask for input: in the call (`elicitation/create`, servers
//! before 2026-07-28, received by [`Events`](super::events::Events)), as an input-required
//! result (2026-07-28, answered here and sent again with the call), or through a task
//! (`tasks/get` reports `input_required`, answered with `tasks/update`). Each question is
//! asked with [`OperationContext::elicit_raw`] under the server's own key, so an opkit proxy
//! in front of a server that asks questions still asks them — of whoever called the proxy,
//! by whatever means that caller's edge has. Other requests (sampling, roots) go the same
//! way through [`OperationContext::client_request`]. A caller that cannot be asked gets the
//! remote's call failing with that error.

use opkit::elicit::{ClientRequest, ElicitAction, ElicitRequest, ElicitResponse};
use opkit::{CallError, OperationContext};
use serde_json::{Map, Value, json};

/// The answers to a map of input requests (`{key: {method, params}}`), asked in key order.
pub(super) async fn answer_all(
    ctx: &OperationContext,
    tool: &str,
    requests: &Map<String, Value>,
) -> Result<Map<String, Value>, CallError> {
    let mut answers = Map::new();
    for (key, request) in requests {
        answers.insert(key.clone(), answer(ctx, tool, key, request).await?);
    }
    Ok(answers)
}

/// The answer (an `ElicitResult`) to one input request.
pub(super) async fn answer(
    ctx: &OperationContext,
    tool: &str,
    key: &str,
    request: &Value,
) -> Result<Value, CallError> {
    let method = request.get("method").and_then(Value::as_str).unwrap_or("");
    let params = request.get("params").cloned().unwrap_or_default();
    if method == "elicitation/create" {
        return ask(ctx, Some(key), &params).await;
    }
    // Sampling, roots: whatever the caller's edge can forward.
    let _ = tool;
    ctx.client_request(ClientRequest::new(method, params).with_key(key))
        .await
}

/// Asks the caller the question `params` (an `elicitation/create`'s params) carry.
pub(super) async fn ask(
    ctx: &OperationContext,
    key: Option<&str>,
    params: &Value,
) -> Result<Value, CallError> {
    let message = params
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let schema = params
        .get("requestedSchema")
        .cloned()
        .unwrap_or_else(|| json!({"type": "object"}));
    let mut question = ElicitRequest::new(message, schema);
    if let Some(key) = key {
        question = question.with_key(key);
    }
    Ok(result_of(ctx.elicit_raw(question).await?))
}

/// An answer as an `ElicitResult`.
pub(super) fn result_of(response: ElicitResponse) -> Value {
    let action = match response.action {
        ElicitAction::Accept => "accept",
        ElicitAction::Decline => "decline",
        ElicitAction::Cancel => "cancel",
    };
    let mut result = json!({ "action": action });
    if let Some(content) = response.content {
        result["content"] = content;
    }
    result
}
