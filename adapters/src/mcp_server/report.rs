//! Progress and log records of a running call → `notifications/progress` and
//! `notifications/message`.
//!
//! Each call gets a [`CallReporter`] (an [`opkit::report::Reporter`] on its context) that
//! queues reports without blocking the handler, and a [`Forwarder`] whose task sends them in
//! order. The queue and the task are made by the first report, so a call that reports
//! nothing costs neither. Progress goes to the request's `progressToken` (no token: no progress is sent); a
//! report whose `progress` does not exceed the previous one is dropped, since MCP requires
//! progress to increase. Log records go out when their level is at least the one the client
//! asked for ([`LogGate`]): for a client before 2026-07-28 the one it set with
//! `logging/setLevel` (all of them until it sets one); for a 2026-07-28 client the one the
//! request carries in `_meta["io.modelcontextprotocol/logLevel"]`, and none when it carries
//! none (SEP-2575: such a client did not opt in). The call's result is sent after every
//! report queued before the handler returned.

use opkit::report::{LogRecord, Progress, Reporter};
use parking_lot::{Mutex, RwLock};
use rmcp::Peer;
use rmcp::RoleServer;
#[allow(deprecated)]
use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam};
use rmcp::model::{ProgressNotificationParam, ProgressToken};
use std::sync::Arc;
use tokio::sync::mpsc;

/// The minimum log level a session asked for (`None`: everything).
#[allow(deprecated)]
pub(crate) type LevelCell = Arc<RwLock<Option<LoggingLevel>>>;

/// Which log records of a call the client asked for.
pub(crate) enum LogGate {
    /// A client before 2026-07-28: its session's `logging/setLevel` (everything until set).
    Session(LevelCell),
    /// A 2026-07-28 client: the request's `_meta["io.modelcontextprotocol/logLevel"]`
    /// (nothing without it).
    #[allow(deprecated)]
    Request(Option<LoggingLevel>),
}

impl LogGate {
    /// The minimum level to send: `Some(None)` for every record, `None` for none.
    #[allow(deprecated)]
    fn minimum(&self) -> Option<Option<LoggingLevel>> {
        match self {
            Self::Session(cell) => Some(*cell.read()),
            Self::Request(level) => level.map(Some),
        }
    }
}

enum Report {
    Progress(Progress),
    Log(LogRecord),
}

/// Queues the reports of one call; the first report starts the forwarding. (The
/// forwarding itself, so a call allocates one shared state, not two.)
pub(crate) type CallReporter = Forwarding;

impl Reporter for Forwarding {
    fn progress(&self, progress: Progress) {
        self.queue(Report::Progress(progress));
    }

    fn log(&self, record: LogRecord) {
        self.queue(Report::Log(record));
    }
}

/// The forwarding of one call's reports.
enum State {
    /// Nothing reported yet: no queue and no task (most calls report nothing, and a queue
    /// and a task per call would cost every call).
    Idle(Sender),
    /// Reports go into `queue`; `task` sends them in order.
    Running {
        queue: mpsc::UnboundedSender<Report>,
        task: tokio::task::JoinHandle<()>,
    },
    /// The call is over: later reports are dropped.
    Finished,
}

/// Invariant: every report is queued under the lock, and [`Forwarder::finish`] takes the
/// state under the same lock, so a report is either queued before the queue is closed (and
/// sent before the call's result) or made after the call ended (and dropped).
pub(crate) struct Forwarding {
    state: Mutex<State>,
}

impl Forwarding {
    fn queue(&self, report: Report) {
        let mut state = self.state.lock();
        *state = match std::mem::replace(&mut *state, State::Finished) {
            State::Idle(sender) => {
                let (queue, reports) = mpsc::unbounded_channel();
                State::Running {
                    queue,
                    task: tokio::spawn(forward(sender, reports)),
                }
            }
            other => other,
        };
        if let State::Running { queue, .. } = &*state {
            let _ = queue.send(report);
        }
    }
}

/// Sends reports in order until the queue is closed and empty.
async fn forward(mut sender: Sender, mut reports: mpsc::UnboundedReceiver<Report>) {
    while let Some(report) = reports.recv().await {
        sender.send(report).await;
    }
}

/// Ends the forwarding of one call.
pub(crate) struct Forwarder {
    forwarding: Arc<Forwarding>,
}

impl Forwarder {
    /// Sends what is still queued, then stops (reports made later are dropped).
    pub(crate) async fn finish(self) {
        let state = std::mem::replace(&mut *self.forwarding.state.lock(), State::Finished);
        if let State::Running { queue, task } = state {
            // Closing the queue lets the task drain it and end.
            drop(queue);
            let _ = task.await;
        }
    }
}

/// A reporter and its forwarder for one call.
pub(crate) fn start(
    peer: Arc<Peer<RoleServer>>,
    token: Option<ProgressToken>,
    level: LogGate,
) -> (Arc<CallReporter>, Forwarder) {
    let forwarding = Arc::new(Forwarding {
        state: Mutex::new(State::Idle(Sender {
            peer,
            token,
            level,
            last: None,
        })),
    });
    (forwarding.clone(), Forwarder { forwarding })
}

struct Sender {
    peer: Arc<Peer<RoleServer>>,
    token: Option<ProgressToken>,
    level: LogGate,
    last: Option<f64>,
}

impl Sender {
    async fn send(&mut self, report: Report) {
        let outcome = match report {
            Report::Progress(progress) => {
                let Some(token) = &self.token else { return };
                if self.last.is_some_and(|last| progress.progress <= last) {
                    tracing::debug!(
                        progress = progress.progress,
                        "progress that does not increase is not sent"
                    );
                    return;
                }
                self.last = Some(progress.progress);
                let mut param = ProgressNotificationParam::new(token.clone(), progress.progress);
                if let Some(total) = progress.total {
                    param = param.with_total(total);
                }
                if let Some(message) = progress.message {
                    param = param.with_message(message);
                }
                self.peer.notify_progress(param).await
            }
            Report::Log(record) => {
                let Some(param) = self.log_param(record) else {
                    return;
                };
                #[allow(deprecated)]
                self.peer.notify_logging_message(param).await
            }
        };
        if let Err(error) = outcome {
            tracing::debug!(%error, "a progress or log notification was not delivered");
        }
    }

    /// The notification of a record the client wants, if it wants it.
    #[allow(deprecated)]
    fn log_param(&self, record: LogRecord) -> Option<LoggingMessageNotificationParam> {
        let level: LoggingLevel =
            serde_json::from_value(serde_json::to_value(record.level).ok()?).ok()?;
        let minimum = self.level.minimum()?;
        if minimum.is_some_and(|minimum| rank(level) < rank(minimum)) {
            return None;
        }
        let mut param = LoggingMessageNotificationParam::new(level, record.data);
        param.logger = record.logger;
        Some(param)
    }
}

/// The severity order of MCP log levels.
#[allow(deprecated)]
fn rank(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}
