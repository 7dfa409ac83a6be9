//! Following a remote task: a tool the server runs as a task (the
//! `io.modelcontextprotocol/tasks` extension, which the import negotiates) is polled with
//! `tasks/get` to its result, within the caller's bounds; its questions are asked of the
//! caller (see `answers`) and answered with `tasks/update`; a caller that stops waiting
//! cancels it (`tasks/cancel`).

use super::answers;
use super::cancel::{CancelOnDrop, Pending};
use super::client::Client;
use super::error::stopped;
use crate::mcp::content::envelope_of;
use opkit::{CallError, OperationContext, ResponseEnvelope};
use rmcp::model::{GetTaskParams, UpdateTaskParams};
use serde_json::Value;
use std::time::Duration;

/// The shortest and longest pause between two `tasks/get` (the server's `pollIntervalMs`,
/// kept within these).
const POLL: (Duration, Duration) = (Duration::from_millis(20), Duration::from_secs(5));

impl Client {
    /// Polls the task `id` of tool `tool` to its end and builds its envelope.
    pub(super) async fn follow_task(
        &self,
        tool: &str,
        id: String,
        ctx: &OperationContext,
        output_schema: Option<&Value>,
        wrapped: Option<&str>,
    ) -> Result<ResponseEnvelope, CallError> {
        let failed =
            |message: String| CallError::execution(format!("MCP tool `{tool}`: {message}"));
        let mut guard = CancelOnDrop {
            peer: self.peer().clone(),
            pending: Some(Pending::Task(id.clone())),
        };
        let mut last_message: Option<String> = None;
        loop {
            let task = ctx
                .bounds()
                .run(self.peer().get_task(GetTaskParams::new(id.clone())))
                .await
                .map_err(|stop| stopped(&self.label, tool, stop))?
                .map_err(|error| failed(format!("tasks/get of its task {id}: {error}")))?;
            let mut task = serde_json::to_value(task).map_err(|error| failed(error.to_string()))?;
            if let Some(message) = task.get("statusMessage").and_then(Value::as_str)
                && last_message.as_deref() != Some(message)
            {
                ctx.progress(0.0, None, Some(message));
                last_message = Some(message.to_owned());
            }
            match task.get("status").and_then(Value::as_str) {
                Some("completed") => {
                    guard.disarm();
                    let result = task.get_mut("result").map(Value::take).unwrap_or_default();
                    return Ok(envelope_of(
                        result,
                        output_schema,
                        self.parse_json_text,
                        wrapped,
                    ));
                }
                Some("failed") => {
                    guard.disarm();
                    let error = task.get("error").cloned().unwrap_or_default();
                    return Err(failed(format!("its task {id} failed: {error}")));
                }
                Some("cancelled") => {
                    guard.disarm();
                    return Err(CallError::aborted(format!(
                        "MCP tool `{tool}`: its task {id} was cancelled by the server"
                    )));
                }
                Some("input_required") => {
                    let requests = task
                        .get("inputRequests")
                        .and_then(Value::as_object)
                        .cloned()
                        .unwrap_or_default();
                    let answers = ctx
                        .bounds()
                        .run(answers::answer_all(ctx, tool, &requests))
                        .await
                        .map_err(|stop| stopped(&self.label, tool, stop))??;
                    let update = UpdateTaskParams::new(id.clone(), answers.into_iter().collect());
                    ctx.bounds()
                        .run(self.peer().update_task(update))
                        .await
                        .map_err(|stop| stopped(&self.label, tool, stop))?
                        .map_err(|error| {
                            failed(format!("tasks/update of its task {id}: {error}"))
                        })?;
                }
                _ => {
                    let pause = task
                        .get("pollIntervalMs")
                        .and_then(Value::as_u64)
                        .map_or(POLL.0, Duration::from_millis)
                        .clamp(POLL.0, POLL.1);
                    ctx.bounds()
                        .run(tokio::time::sleep(pause))
                        .await
                        .map_err(|stop| stopped(&self.label, tool, stop))?;
                }
            }
        }
    }
}
