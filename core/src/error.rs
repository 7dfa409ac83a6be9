//! `CallError` and `ErrorCode`: the one error type every call returns.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;

/// What went wrong with a call. Wire form: SCREAMING_SNAKE_CASE (`"OPERATION_NOT_FOUND"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ErrorCode {
    /// No operation with the requested id is registered.
    OperationNotFound,
    /// The input (or a wire message) did not match its schema; details list every violation.
    ValidationError,
    /// The caller's identity does not satisfy the operation's access rule.
    AccessDenied,
    /// The handler failed (returned an error or panicked).
    ExecutionError,
    /// The call's deadline passed before a result arrived.
    Timeout,
    /// The call was cancelled.
    Aborted,
    /// The transport between caller and handler failed.
    TransportError,
}

impl ErrorCode {
    /// The wire form of the code, e.g. `"VALIDATION_ERROR"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::OperationNotFound => "OPERATION_NOT_FOUND",
            Self::ValidationError => "VALIDATION_ERROR",
            Self::AccessDenied => "ACCESS_DENIED",
            Self::ExecutionError => "EXECUTION_ERROR",
            Self::Timeout => "TIMEOUT",
            Self::Aborted => "ABORTED",
            Self::TransportError => "TRANSPORT_ERROR",
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The error of a call: a code, a human-readable message and optional structured details.
///
/// Serializes to the wire form `{"code": .., "message": .., "details"?: ..}`.
///
/// ```
/// use opkit::{CallError, ErrorCode};
/// let err = CallError::new(ErrorCode::ExecutionError, "disk full")
///     .with_details(serde_json::json!({"free": 0}));
/// assert_eq!(err.to_string(), "EXECUTION_ERROR: disk full");
/// ```
#[derive(
    Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema, thiserror::Error,
)]
#[error("{code}: {message}")]
pub struct CallError {
    /// What kind of failure this is.
    pub code: ErrorCode,
    /// A message for humans.
    pub message: String,
    /// Structured details (for `VALIDATION_ERROR`, a list of [`Violation`]s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
}

impl CallError {
    /// Builds an error with a code and a message.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            details: None,
        }
    }

    /// Adds structured details.
    #[must_use]
    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }

    /// `OPERATION_NOT_FOUND` for `id`.
    pub fn not_found(id: &str) -> Self {
        Self::new(
            ErrorCode::OperationNotFound,
            format!("no operation `{id}` is registered"),
        )
    }

    /// `VALIDATION_ERROR` listing every violation in `details`.
    pub fn validation(what: &str, violations: Vec<Violation>) -> Self {
        let message = match violations.as_slice() {
            [one] => format!("{what} is invalid: {one}"),
            many => format!(
                "{what} is invalid ({} violations): {}",
                many.len(),
                join(many)
            ),
        };
        let details = serde_json::to_value(&violations).unwrap_or(Value::Null);
        Self::new(ErrorCode::ValidationError, message).with_details(details)
    }

    /// `EXECUTION_ERROR` with a message.
    pub fn execution(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::ExecutionError, message)
    }

    /// `ACCESS_DENIED` with a message.
    pub fn access_denied(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::AccessDenied, message)
    }

    /// `TIMEOUT` with a message.
    pub fn timeout(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::Timeout, message)
    }

    /// `ABORTED` with a message.
    pub fn aborted(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::Aborted, message)
    }

    /// `TRANSPORT_ERROR` with a message.
    pub fn transport(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::TransportError, message)
    }
}

fn join(violations: &[Violation]) -> String {
    let shown: Vec<String> = violations.iter().take(5).map(ToString::to_string).collect();
    let mut text = shown.join("; ");
    if violations.len() > shown.len() {
        text.push_str("; …");
    }
    text
}

impl From<String> for CallError {
    /// A plain message becomes an `EXECUTION_ERROR`.
    fn from(message: String) -> Self {
        Self::execution(message)
    }
}

impl From<&str> for CallError {
    /// A plain message becomes an `EXECUTION_ERROR`.
    fn from(message: &str) -> Self {
        Self::execution(message)
    }
}

impl From<std::convert::Infallible> for CallError {
    fn from(never: std::convert::Infallible) -> Self {
        match never {}
    }
}

impl From<Box<dyn std::error::Error + Send + Sync>> for CallError {
    /// Any boxed error becomes an `EXECUTION_ERROR` carrying its message.
    fn from(error: Box<dyn std::error::Error + Send + Sync>) -> Self {
        Self::execution(error.to_string())
    }
}

/// One schema violation: where (a JSON pointer into the checked value) and what.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Violation {
    /// JSON pointer (RFC 6901) to the offending value; `""` is the root.
    pub path: String,
    /// What is wrong there.
    pub message: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = if self.path.is_empty() {
            "/"
        } else {
            &self.path
        };
        write!(f, "at {path}: {}", self.message)
    }
}
