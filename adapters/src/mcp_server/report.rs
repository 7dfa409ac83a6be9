//! Progress and log records of a running call → `notifications/progress` and
//! `notifications/message`.
//!
//! Each call gets a [`CallReporter`] (an [`opkit::report::Reporter`] on its context) that
//! queues reports without blocking the handler, and a [`Forwarder`] whose task (started by
//! the first report, so a call that reports nothing costs no task) sends them in order. Progress goes to the request's `progressToken` (no token: no progress is sent); a
//! report whose `progress` does not exceed the previous one is dropped, since MCP requires
//! progress to increase. Log records go out when their level is at least the one the client
//! set with `logging/setLevel` (all of them until it sets one). The call's result is sent
//! after every report queued before the handler returned.

use opkit::report::{LogRecord, Progress, Reporter};
use rmcp::Peer;
use rmcp::RoleServer;
#[allow(deprecated)]
use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam};
use rmcp::model::{ProgressNotificationParam, ProgressToken};
use std::sync::{Arc, Mutex, RwLock};
use tokio::sync::{mpsc, oneshot};

/// The minimum log level a session asked for (`None`: everything).
#[allow(deprecated)]
pub(crate) type LevelCell = Arc<RwLock<Option<LoggingLevel>>>;

enum Report {
    Progress(Progress),
    Log(LogRecord),
}

/// Queues the reports of one call; the first report starts the forwarding task.
pub(crate) struct CallReporter {
    queue: mpsc::UnboundedSender<Report>,
    forwarding: Arc<Forwarding>,
}

impl CallReporter {
    fn queue(&self, report: Report) {
        // Started before the report is queued: `Forwarder::finish` then always finds the
        // task of every report made before it.
        self.forwarding.start();
        let _ = self.queue.send(report);
    }
}

impl Reporter for CallReporter {
    fn progress(&self, progress: Progress) {
        self.queue(Report::Progress(progress));
    }

    fn log(&self, record: LogRecord) {
        self.queue(Report::Log(record));
    }
}

/// What the forwarding task needs, until it is started.
struct Idle {
    sender: Sender,
    reports: mpsc::UnboundedReceiver<Report>,
    finished: oneshot::Receiver<()>,
}

/// The forwarding task of one call: not started (most calls report nothing, and a task per
/// call would cost every call), or running.
///
/// Invariant: `idle` is `Some` until the first report, which takes it and stores the task in
/// `task` under the same lock, so a reader of `task` after a report finds the task.
struct Forwarding {
    state: Mutex<(Option<Idle>, Option<tokio::task::JoinHandle<()>>)>,
}

impl Forwarding {
    fn lock(
        &self,
    ) -> std::sync::MutexGuard<'_, (Option<Idle>, Option<tokio::task::JoinHandle<()>>)> {
        // Each field is replaced in one assignment: a panic cannot leave it half-written.
        self.state.lock().unwrap_or_else(|error| error.into_inner())
    }

    /// Starts the task if it is not running yet.
    fn start(&self) {
        let mut state = self.lock();
        if let Some(idle) = state.0.take() {
            state.1 = Some(tokio::spawn(forward(idle)));
        }
    }

    /// The task, when a report started it.
    fn take_task(&self) -> Option<tokio::task::JoinHandle<()>> {
        self.lock().1.take()
    }
}

/// Sends reports in order until the call is finished, then what is still queued.
async fn forward(idle: Idle) {
    let Idle {
        mut sender,
        mut reports,
        mut finished,
    } = idle;
    loop {
        tokio::select! {
            biased;
            report = reports.recv() => match report {
                Some(report) => sender.send(report).await,
                None => break,
            },
            _ = &mut finished => {
                while let Ok(report) = reports.try_recv() {
                    sender.send(report).await;
                }
                break;
            }
        }
    }
}

/// Sends the queued reports of one call.
pub(crate) struct Forwarder {
    done: oneshot::Sender<()>,
    forwarding: Arc<Forwarding>,
}

impl Forwarder {
    /// Sends what is still queued, then stops (reports made later are dropped).
    pub(crate) async fn finish(self) {
        let _ = self.done.send(());
        if let Some(task) = self.forwarding.take_task() {
            let _ = task.await;
        }
    }
}

/// A reporter and its forwarder for one call.
pub(crate) fn start(
    peer: Peer<RoleServer>,
    token: Option<ProgressToken>,
    level: LevelCell,
) -> (Arc<CallReporter>, Forwarder) {
    let (queue, reports) = mpsc::unbounded_channel();
    let (done, finished) = oneshot::channel::<()>();
    let idle = Idle {
        sender: Sender {
            peer,
            token,
            level,
            last: None,
        },
        reports,
        finished,
    };
    let forwarding = Arc::new(Forwarding {
        state: Mutex::new((Some(idle), None)),
    });
    (
        Arc::new(CallReporter {
            queue,
            forwarding: forwarding.clone(),
        }),
        Forwarder { done, forwarding },
    )
}

struct Sender {
    peer: Peer<RoleServer>,
    token: Option<ProgressToken>,
    level: LevelCell,
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
        let minimum = *self
            .level
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
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
