//! The MCP tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663) for operations that
//! allow it (`#[operation(mcp(task))]`, [`TaskSupport`](super::TaskSupport)), on rmcp's
//! [`TaskManager`].
//!
//! For a client that negotiated the extension, `tools/call` of such an operation answers at
//! once with the task (`resultType: "task"`) and the operation runs on: `tasks/get` reports
//! it (its progress messages become the task's status message), an `elicit` in it puts the
//! task in `input_required` until `tasks/update` brings the answer, `tasks/cancel` reaches
//! the operation's cancellation, and the result is kept for `tasks/get` until the task's TTL
//! ends. A [`CallError`](opkit::CallError) the operation returns is a completed task with a
//! tool error (`isError: true`); a panic is a failed task. The server's call timeout does not
//! apply to a task (its TTL does; the operation's own `timeout` still applies).
//!
//! An `after_input` operation (`#[operation(mcp(task = "after_input"))]`) gathers its input
//! first: for a 2026-07-28 client that negotiated tasks, a call that brings no answers runs
//! in the request as a plain call does, so a question ends it with an input-required result
//! (no task); the call that brings answers (`inputResponses`, with the round's sealed
//! `requestState`) answers with the task, in which the operation runs again from the start
//! and its questions get those answers first (`answered.rs`). A `requestState` that does not
//! open is refused with invalid params before any task is made.
//!
//! Tasks belong to the server, not to a session: a client that reconnects polls the same
//! task by its id. Each task belongs to the identity that started it (or to "anonymous"):
//! `tasks/get`, `tasks/update` and `tasks/cancel` from any other caller are answered as for
//! an unknown task (`-32602`), so a second identity can neither read a task's result, nor
//! answer its questions, nor cancel it.

use super::answered::AnsweredElicitor;
use super::elicitation::Rounds;
use super::names::Served;
use super::session::McpHandler;
use futures::future::BoxFuture;
use opkit::elicit::{ClientRequest, ElicitRequest, ElicitResponse, Elicitor, capability_of};
use opkit::middleware::Outcome;
use opkit::report::{LogRecord, Progress, Reporter};
use opkit::{CallError, OperationContext};
use rmcp::ErrorData as McpError;
use rmcp::model::{CreateTaskResult, InputRequest};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::task_manager::{TaskContext, TaskExit, TaskManager, TaskOptions};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio_util::sync::CancellationToken;

/// `true` when the request's client negotiated the tasks extension.
pub(crate) fn negotiated(context: &RequestContext<RoleServer>) -> bool {
    context.client_capabilities().is_some_and(|capabilities| {
        capabilities
            .extensions
            .as_ref()
            .is_some_and(|extensions| extensions.contains_key(rmcp::model::TASKS_EXTENSION_ID))
    })
}

/// Whether an operation runs as a task for clients that negotiated tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Support {
    /// A task for those clients, a plain call for others.
    Optional,
    /// A task; other clients are refused.
    Required,
    /// For those clients on 2026-07-28: questions by input-required rounds first, then a task
    /// from the call that brings the answers (see `after_input.rs`); a plain call for others.
    AfterInput,
}

/// The task support `spec` declares.
pub(crate) fn support(spec: &opkit::OperationSpec) -> Option<Support> {
    match super::options::option(spec, "task")? {
        Value::String(support) if support == "required" => Some(Support::Required),
        Value::String(support) if support == "after_input" => Some(Support::AfterInput),
        _ => Some(Support::Optional),
    }
}

/// The error of a call that must run as a task from a client that did not negotiate tasks
/// (-32021, naming the capability).
pub(crate) fn required() -> McpError {
    McpError::missing_required_client_capability(
        rmcp::model::ClientCapabilities::builder()
            .enable_tasks()
            .build(),
    )
}

/// The server's tasks and who started each.
#[derive(Clone, Default)]
pub(crate) struct Tasks {
    manager: TaskManager,
    /// Task id → the id of the identity that started it (`None`: anonymous).
    owners: Arc<parking_lot::Mutex<std::collections::HashMap<String, Option<String>>>>,
}

/// Past this many owners remembered, those of tasks the manager forgot are dropped.
const OWNERS_BEFORE_PRUNING: usize = 4096;

impl Tasks {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Records `owner` as the owner of `task_id`.
    fn own(&self, task_id: &str, owner: Option<String>) {
        let mut owners = self.owners.lock();
        if owners.len() >= OWNERS_BEFORE_PRUNING {
            owners.retain(|id, _| self.manager.get_task(id).is_ok());
        }
        owners.insert(task_id.to_owned(), owner);
    }

    /// The manager, for the task `task_id` when `caller` owns it; the error of an unknown
    /// task otherwise (a caller learns nothing of another's tasks).
    pub(crate) fn of(
        &self,
        task_id: &str,
        caller: Option<&opkit::Identity>,
    ) -> Result<&TaskManager, McpError> {
        let caller = caller.map(|identity| identity.id.as_str());
        match self.owners.lock().get(task_id) {
            Some(owner) if owner.as_deref() == caller => Ok(&self.manager),
            _ => Err(McpError::invalid_params(
                format!("unknown task: {task_id}"),
                None,
            )),
        }
    }
}

impl McpHandler {
    /// The manager of the task `task_id` when the request's caller owns it (`tasks/get`,
    /// `tasks/update`, `tasks/cancel`); the error of an unknown task otherwise.
    pub(super) async fn task_of(
        &self,
        task_id: &str,
        context: &RequestContext<RoleServer>,
    ) -> Result<&TaskManager, McpError> {
        let caller = self.caller(context).await?;
        self.inner.tasks.of(task_id, caller.as_ref())
    }

    /// Starts `served` as a task with `input` and the call's context (its cancellation is
    /// the task's, not the request's), and answers the task. `answered` holds the answers an
    /// `after_input` operation gathered by rounds before: its questions get them first.
    pub(super) fn start_task(
        &self,
        served: Arc<Served>,
        input: Value,
        ctx: OperationContext,
        modern: bool,
        answered: Option<Arc<Rounds>>,
    ) -> CreateTaskResult {
        let handler = self.clone();
        let owner = ctx.identity().map(|identity| identity.id.clone());
        let task = self
            .inner
            .tasks
            .manager
            .spawn(TaskOptions::new(), move |task| {
                Box::pin(async move {
                    let token = CancellationToken::new();
                    let asks_task: Arc<dyn Elicitor> = Arc::new(TaskElicitor {
                        task: task.clone(),
                        asked: AtomicUsize::new(0),
                    });
                    let elicitor: Arc<dyn Elicitor> = match answered {
                        Some(rounds) => Arc::new(AnsweredElicitor::new(rounds, asks_task)),
                        None => asks_task,
                    };
                    let ctx = ctx
                        .with_cancellation(token.clone())
                        .with_reporter(Arc::new(TaskReporter(task.clone())))
                        .with_elicitor(elicitor);
                    let cancel_on_request = {
                        let task = task.clone();
                        let token = token.clone();
                        tokio::spawn(async move {
                            task.cancelled().await;
                            token.cancel();
                        })
                    };
                    let outcome = handler.inner.registry.serve(&served.id, input, ctx).await;
                    cancel_on_request.abort();
                    match outcome {
                        Ok(Outcome::Unary(reply)) => Ok(super::replies::unary_result(
                            &served,
                            reply,
                            modern,
                            handler.inner.local_meta,
                        )),
                        Ok(Outcome::Stream(_)) => Err(TaskExit::Error(McpError::internal_error(
                            "a subscription cannot run as a task",
                            None,
                        ))),
                        Err(_) if task.is_cancel_requested() => Err(TaskExit::Cancelled),
                        Err(error) if panicked(&error) => {
                            Err(TaskExit::Error(McpError::internal_error(
                                error.message.clone(),
                                serde_json::to_value(&error).ok(),
                            )))
                        }
                        Err(error) => Ok(super::results::failure(&error)),
                    }
                })
            });
        self.inner.tasks.own(&task.task_id, owner);
        CreateTaskResult::new(task)
    }
}

/// `true` for the error of an operation that panicked.
fn panicked(error: &CallError) -> bool {
    error
        .details
        .as_ref()
        .and_then(|details| details.get("panicked"))
        == Some(&Value::Bool(true))
}

/// A task's progress messages become its status message; its logs go to tracing.
struct TaskReporter(TaskContext);

impl Reporter for TaskReporter {
    fn progress(&self, progress: Progress) {
        let message = progress.message.unwrap_or_else(|| match progress.total {
            Some(total) => format!("{} of {total}", progress.progress),
            None => format!("{}", progress.progress),
        });
        self.0.set_status_message(message);
    }

    fn log(&self, record: LogRecord) {
        tracing::debug!(task = self.0.task_id(), record = ?record, "a task's log record");
    }
}

/// Asks a task's client through `tasks/get` (`input_required`) and `tasks/update`.
struct TaskElicitor {
    task: TaskContext,
    asked: AtomicUsize,
}

impl Elicitor for TaskElicitor {
    fn request(&self, request: ClientRequest) -> BoxFuture<'static, Result<Value, CallError>> {
        let task = self.task.clone();
        let index = self.asked.fetch_add(1, Ordering::SeqCst);
        Box::pin(async move {
            let key = request
                .key
                .clone()
                .unwrap_or_else(|| format!("{}-{index}", capability_of(&request.method)));
            let input = json!({"method": request.method, "params": request.params});
            let input: InputRequest = serde_json::from_value(input).map_err(|error| {
                CallError::execution(format!(
                    "`{}` cannot be an MCP input request: {error}",
                    request.method
                ))
            })?;
            match task.request_input(key, input).await {
                Ok(answer) => Ok(answer),
                Err(TaskExit::Cancelled) => Err(CallError::aborted("the task was cancelled")),
                Err(TaskExit::Error(error)) => Err(CallError::execution(error.message.to_string())),
            }
        })
    }

    fn elicit(
        &self,
        request: ElicitRequest,
    ) -> BoxFuture<'static, Result<ElicitResponse, CallError>> {
        let params = super::elicitation::form_params(&request);
        let mut input = ClientRequest::new("elicitation/create", params);
        input.key = request.key;
        let answer = self.request(input);
        Box::pin(async move { Ok(super::elicitation::response_of(&answer.await?)) })
    }
}
