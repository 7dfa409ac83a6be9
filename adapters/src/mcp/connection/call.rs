//! `Client::call`: one `tools/call` within the caller's bounds, its progress and logs
//! forwarded, the server told when the caller stops waiting, the result as an envelope; an
//! input-required result answered by the caller and sent again (see `answers`), a task
//! followed to its result (see `task`).

use super::answers;
use super::cancel::{CancelOnDrop, Pending};
use super::client::Client;
use super::error::{service_error, stopped};
use crate::mcp::content::envelope_of;
use opkit::{CallError, ErrorCode, OperationContext, ResponseEnvelope};
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, ClientRequest, CustomResult, ServerResult,
};
use rmcp::service::PeerRequestOptions;
use serde_json::{Map, Value, json};

/// Rounds of input-required results answered before a call gives up.
const MAX_ROUNDS: usize = 10;

/// What one `tools/call` round answered.
enum Answer {
    /// A tool result's JSON.
    Result(Value),
    /// The server asks for input: the requests and the state to send back.
    InputRequired(Map<String, Value>, Option<String>),
    /// The server runs the call as a task with this id.
    Task(String),
}

impl Client {
    /// Sends one `tools/call` round within the caller's bounds; leaving early tells the
    /// server (`notifications/cancelled`).
    async fn send_call(
        &self,
        tool: &str,
        params: CallToolRequestParams,
        ctx: &OperationContext,
    ) -> Result<Answer, CallError> {
        let bounds = ctx.bounds();
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let handle = self
            .peer()
            .send_request_with_option(request, PeerRequestOptions::no_options())
            .await
            .map_err(|error| service_error(&self.label, tool, error))?;
        // A caller that listens to progress and logs gets the server's (see `Events`); rmcp
        // gives every request a progress token. A question the server asks in this call goes
        // to the caller.
        let events = self.service.service();
        let _listening = ctx
            .has_reporter()
            .then(|| events.listen(ctx, &handle.progress_token));
        let _asking = events.asking(ctx, &handle.id);
        // From here on, leaving early (cancellation, deadline, the future dropped) tells the server.
        let mut guard = CancelOnDrop {
            peer: self.peer().clone(),
            pending: Some(Pending::Request(handle.id.clone())),
        };
        let response = bounds
            .run(handle.await_response())
            .await
            .map_err(|stop| stopped(&self.label, tool, stop))?;
        guard.disarm();
        let raw = match response.map_err(|error| service_error(&self.label, tool, error))? {
            ServerResult::CallToolResult(result) => serde_json::to_value(result)
                .map_err(|error| CallError::execution(format!("MCP tool `{tool}`: {error}")))?,
            ServerResult::CustomResult(CustomResult(raw)) => raw,
            ServerResult::EmptyResult(_) => json!({}),
            ServerResult::InputRequiredResult(result) => serde_json::to_value(result)
                .map_err(|error| CallError::execution(format!("MCP tool `{tool}`: {error}")))?,
            ServerResult::CreateTaskResult(created) => {
                return Ok(Answer::Task(created.task.task_id.clone()));
            }
            other => {
                return Err(CallError::execution(format!(
                    "MCP tool `{tool}`: the server's answer is not a tool result: {}",
                    serde_json::to_string(&other).unwrap_or_default()
                )));
            }
        };
        if raw.get("resultType").and_then(Value::as_str) == Some("input_required") {
            let requests = raw
                .get("inputRequests")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            let state = raw
                .get("requestState")
                .and_then(Value::as_str)
                .map(str::to_owned);
            return Ok(Answer::InputRequired(requests, state));
        }
        Ok(Answer::Result(raw))
    }

    /// Calls one tool and builds its envelope (see the module docs for errors).
    pub(super) async fn call(
        &self,
        tool: &str,
        arguments: Value,
        ctx: &OperationContext,
        output_schema: Option<&Value>,
        wrapped: Option<&str>,
    ) -> Result<ResponseEnvelope, CallError> {
        let mut arguments = object_arguments(tool, arguments)?;
        let bounds = ctx.bounds();
        bounds
            .check()
            .map_err(|stop| stopped(&self.label, tool, stop))?;
        // An input-required result (a call in rounds) is of the 2026-07-28 era, whose rounds
        // each send the arguments again: only there are they kept for another round. A legacy
        // session's server asks its questions as requests of its own, within the one round.
        let rounds_possible = self
            .peer()
            .peer_info()
            .is_some_and(|info| !info.protocol_version.has_initialize());
        let mut responses: Option<Map<String, Value>> = None;
        let mut request_state: Option<String> = None;
        let mut round = 0;
        let raw = loop {
            round += 1;
            let sent = if rounds_possible {
                arguments.clone()
            } else {
                arguments.take()
            };
            let mut params = round_params(tool, sent, ctx);
            params.input_responses = responses.take().map(|map| map.into_iter().collect());
            params.request_state = request_state.take();
            match self.send_call(tool, params, ctx).await? {
                Answer::Result(raw) => break raw,
                Answer::Task(id) => {
                    return self
                        .follow_task(tool, id, ctx, output_schema, wrapped)
                        .await;
                }
                Answer::InputRequired(..) if !rounds_possible => {
                    return Err(CallError::execution(format!(
                        "MCP tool `{tool}`: the server answered with an input-required result \
                         in a session of the 2025 era, which has no such results"
                    )));
                }
                Answer::InputRequired(requests, state) => {
                    if round >= MAX_ROUNDS {
                        return Err(CallError::execution(format!(
                            "MCP tool `{tool}` still asked for input after {MAX_ROUNDS} rounds"
                        )));
                    }
                    let given = ctx
                        .bounds()
                        .run(answers::answer_all(ctx, tool, &requests))
                        .await
                        .map_err(|stop| stopped(&self.label, tool, stop))??;
                    responses = Some(given);
                    request_state = state;
                }
            }
        };
        Ok(envelope_of(
            complete(tool, raw)?,
            output_schema,
            self.parse_json_text,
            wrapped,
        ))
    }
}

/// A call's arguments: a JSON object, or none (`null`).
fn object_arguments(tool: &str, arguments: Value) -> Result<Option<Map<String, Value>>, CallError> {
    match arguments {
        Value::Object(arguments) => Ok(Some(arguments)),
        Value::Null => Ok(None),
        other => Err(CallError::new(
            ErrorCode::ValidationError,
            format!("the arguments of MCP tool `{tool}` must be a JSON object, found {other}"),
        )),
    }
}

/// The parameters of one round of a `tools/call`: the tool, its arguments and the caller's
/// trace context.
fn round_params(
    tool: &str,
    arguments: Option<Map<String, Value>>,
    ctx: &OperationContext,
) -> CallToolRequestParams {
    let mut params = CallToolRequestParams::new(tool.to_owned());
    if let Some(arguments) = arguments {
        params = params.with_arguments(arguments);
    }
    if let Some(trace) = ctx.trace() {
        // W3C trace context in `_meta` (the MCP convention, SEP-414).
        let mut meta = rmcp::model::MetaObject::new();
        meta.set_traceparent(trace.traceparent());
        if let Some(state) = trace.tracestate() {
            meta.set_tracestate(state);
        }
        params.meta = Some(rmcp::model::RequestMetaObject(meta));
    }
    params
}

/// `raw` when it is a complete tool result: an object whose `resultType` (if any) is
/// `complete`.
fn complete(tool: &str, raw: Value) -> Result<Value, CallError> {
    if !raw.is_object() {
        return Err(CallError::execution(format!(
            "MCP tool `{tool}`: the server's answer is not a tool result: {raw}"
        )));
    }
    if let Some(kind) = raw.get("resultType").and_then(Value::as_str)
        && kind != "complete"
    {
        return Err(CallError::execution(format!(
            "MCP tool `{tool}`: unsupported result type {kind:?}"
        )));
    }
    Ok(raw)
}
