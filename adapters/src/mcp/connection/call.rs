//! `Client::call`: one `tools/call` within the caller's bounds, its progress and logs
//! forwarded, the server told when the caller stops waiting, the result as an envelope.

use super::cancel::CancelOnDrop;
use super::client::Client;
use super::error::{service_error, stopped};
use crate::mcp::content::envelope_of;
use opkit::{CallError, ErrorCode, OperationContext, ResponseEnvelope};
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, ClientRequest, CustomResult, ServerResult,
};
use rmcp::service::PeerRequestOptions;
use serde_json::{Value, json};

impl Client {
    /// Calls one tool and builds its envelope (see the module docs for errors).
    pub(super) async fn call(
        &self,
        tool: &str,
        arguments: Value,
        ctx: &OperationContext,
        output_schema: Option<&Value>,
        wrapped: Option<&str>,
    ) -> Result<ResponseEnvelope, CallError> {
        let arguments = match arguments {
            Value::Object(arguments) => Some(arguments),
            Value::Null => None,
            other => {
                return Err(CallError::new(
                    ErrorCode::ValidationError,
                    format!(
                        "the arguments of MCP tool `{tool}` must be a JSON object, found {other}"
                    ),
                ));
            }
        };
        let bounds = ctx.bounds();
        bounds
            .check()
            .map_err(|stop| stopped(&self.label, tool, stop))?;
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
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let handle = self
            .peer()
            .send_request_with_option(request, PeerRequestOptions::no_options())
            .await
            .map_err(|error| service_error(&self.label, tool, error))?;
        // A caller that listens to progress and logs gets the server's (see `Events`); rmcp
        // gives every request a progress token.
        let _listening = ctx
            .has_reporter()
            .then(|| self.service.service().listen(ctx, &handle.progress_token));
        // From here on, leaving early (cancellation, deadline, the future dropped) tells the server.
        let mut guard = CancelOnDrop {
            peer: self.peer().clone(),
            id: Some(handle.id.clone()),
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
            ServerResult::InputRequiredResult(_) => {
                return Err(CallError::execution(format!(
                    "MCP tool `{tool}` asked for more input (`input_required`), which the MCP import does not provide"
                )));
            }
            ServerResult::CreateTaskResult(_) => {
                return Err(CallError::execution(format!(
                    "MCP tool `{tool}` answered with a task handle; tasks are not supported"
                )));
            }
            other => {
                return Err(CallError::execution(format!(
                    "MCP tool `{tool}`: the server's answer is not a tool result: {}",
                    serde_json::to_string(&other).unwrap_or_default()
                )));
            }
        };
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
        Ok(envelope_of(
            &raw,
            output_schema,
            self.parse_json_text,
            wrapped,
        ))
    }
}
