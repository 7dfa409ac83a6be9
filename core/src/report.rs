//! Progress and log records a running operation sends to whoever serves the call.
//!
//! A handler reports through its context ([`OperationContext::progress`],
//! [`OperationContext::log`]); a server that can forward such reports (the MCP server sends
//! them as `notifications/progress` and `notifications/message`) attaches a [`Reporter`] to
//! the context with [`OperationContext::with_reporter`]. Without one, reporting costs a
//! branch and nothing else.
//!
//! ```
//! use opkit::report::{LogLevel, LogRecord, Progress, Reporter};
//! use opkit::OperationContext;
//! use std::sync::{Arc, Mutex};
//!
//! #[derive(Default)]
//! struct Collect(Mutex<Vec<String>>);
//! impl Reporter for Collect {
//!     fn progress(&self, progress: Progress) {
//!         self.0.lock().unwrap().push(format!("{}/{:?}", progress.progress, progress.total));
//!     }
//!     fn log(&self, record: LogRecord) {
//!         self.0.lock().unwrap().push(format!("{:?}: {}", record.level, record.data));
//!     }
//! }
//!
//! let sink = Arc::new(Collect::default());
//! let ctx = OperationContext::new().with_reporter(sink.clone());
//! ctx.progress(1.0, Some(2.0), None);
//! ctx.log(LogLevel::Info, "half way");
//! assert_eq!(*sink.0.lock().unwrap(), ["1/Some(2.0)", "Info: \"half way\""]);
//! // Without a reporter nothing happens.
//! OperationContext::new().progress(1.0, None, Some("ignored"));
//! ```
//!
//! [`OperationContext::progress`]: crate::OperationContext::progress
//! [`OperationContext::log`]: crate::OperationContext::log
//! [`OperationContext::with_reporter`]: crate::OperationContext::with_reporter

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// How far a call has come: `progress` out of `total` (when known), with an optional
/// human-readable message. Both numbers may be fractional; `progress` should increase with
/// every report of one call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Progress {
    /// Work done so far.
    pub progress: f64,
    /// The total amount of work, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<f64>,
    /// What is going on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

impl Progress {
    /// A report of `progress` out of `total`.
    pub fn new(progress: f64, total: Option<f64>) -> Self {
        Self {
            progress,
            total,
            message: None,
        }
    }

    /// With a message.
    #[must_use]
    pub fn with_message(mut self, message: impl Into<String>) -> Self {
        self.message = Some(message.into());
        self
    }
}

/// The severity of a log record: the syslog levels MCP uses, from least to most severe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogLevel {
    /// Detailed debugging information.
    Debug,
    /// Normal operational messages.
    Info,
    /// Normal but significant events.
    Notice,
    /// Warning conditions.
    Warning,
    /// Error conditions.
    Error,
    /// Critical conditions.
    Critical,
    /// Action must be taken immediately.
    Alert,
    /// The system is unusable.
    Emergency,
}

/// One log record of a running call: a level, an optional logger name and any JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct LogRecord {
    /// How severe it is.
    pub level: LogLevel,
    /// Which part of the operation logged it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logger: Option<String>,
    /// The message: a string or any JSON.
    pub data: Value,
}

impl LogRecord {
    /// A record without a logger name.
    pub fn new(level: LogLevel, data: impl Into<Value>) -> Self {
        Self {
            level,
            logger: None,
            data: data.into(),
        }
    }

    /// With a logger name.
    #[must_use]
    pub fn with_logger(mut self, logger: impl Into<String>) -> Self {
        self.logger = Some(logger.into());
        self
    }
}

/// Receives the progress and log records of calls; attached to a context by the server
/// that runs the call. Methods are called from the handler's task and must not block
/// (queue the report and send it elsewhere).
pub trait Reporter: Send + Sync + 'static {
    /// A progress report.
    fn progress(&self, progress: Progress);
    /// A log record.
    fn log(&self, record: LogRecord);
}
