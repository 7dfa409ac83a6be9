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

/// What an application error means, carried beside the protocol [`ErrorCode`] so that every
/// server answers it the way its protocol expects (HTTP: the status in the table), and a
/// remote caller sees the same error as a local one.
///
/// Wire form: SCREAMING_SNAKE_CASE in the `kind` field of a [`CallError`]. Each kind has a
/// protocol code ([`ErrorKind::code`]) that peers which do not know kinds act on.
///
/// | kind | code | HTTP |
/// |---|---|---|
/// | `NOT_FOUND` | `EXECUTION_ERROR` | 404 |
/// | `CONFLICT` | `EXECUTION_ERROR` | 409 |
/// | `UNPROCESSABLE` | `VALIDATION_ERROR` | 422 |
/// | `RATE_LIMITED` | `EXECUTION_ERROR` | 429 |
/// | `UNAUTHENTICATED` | `ACCESS_DENIED` | 401 |
/// | `UNAVAILABLE` | `EXECUTION_ERROR` | 503 |
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[non_exhaustive]
pub enum ErrorKind {
    /// The thing the call is about does not exist (a note, a user). Not
    /// `OPERATION_NOT_FOUND`, which says no operation has the id.
    NotFound,
    /// The call conflicts with the current state (a duplicate name, a stale version).
    Conflict,
    /// The input is well-formed but cannot be acted on (a rule of the domain).
    Unprocessable,
    /// The caller made too many calls; it may retry later.
    RateLimited,
    /// The caller must authenticate (no or bad credentials).
    Unauthenticated,
    /// A dependency is down or the service is overloaded; it may retry later.
    Unavailable,
}

impl ErrorKind {
    /// Every kind, in declaration order.
    pub const ALL: [ErrorKind; 6] = [
        Self::NotFound,
        Self::Conflict,
        Self::Unprocessable,
        Self::RateLimited,
        Self::Unauthenticated,
        Self::Unavailable,
    ];

    /// The wire form, e.g. `"NOT_FOUND"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::NotFound => "NOT_FOUND",
            Self::Conflict => "CONFLICT",
            Self::Unprocessable => "UNPROCESSABLE",
            Self::RateLimited => "RATE_LIMITED",
            Self::Unauthenticated => "UNAUTHENTICATED",
            Self::Unavailable => "UNAVAILABLE",
        }
    }

    /// The protocol code an error of this kind carries.
    pub const fn code(self) -> ErrorCode {
        match self {
            Self::Unprocessable => ErrorCode::ValidationError,
            Self::Unauthenticated => ErrorCode::AccessDenied,
            Self::NotFound | Self::Conflict | Self::RateLimited | Self::Unavailable => {
                ErrorCode::ExecutionError
            }
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The error of a call: a code, a human-readable message, optional structured details and,
/// for application errors, an [`ErrorKind`].
///
/// Serializes to the wire form `{"code": .., "message": .., "details"?: .., "kind"?: ..}`.
///
/// Operations say what went wrong in the domain with the kind constructors; servers answer
/// them with the matching status, and the call protocol carries the kind to remote callers:
///
/// ```
/// use opkit::{CallError, ErrorCode, ErrorKind};
/// let err = CallError::not_found("note 7 does not exist");
/// assert_eq!(err.code, ErrorCode::ExecutionError);
/// assert_eq!(err.kind, Some(ErrorKind::NotFound));
/// assert_eq!(
///     serde_json::to_value(&err).unwrap(),
///     serde_json::json!({"code": "EXECUTION_ERROR", "message": "note 7 does not exist", "kind": "NOT_FOUND"})
/// );
/// ```
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
    /// What an application error means (`None` for the protocol's own errors).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<ErrorKind>,
}

impl CallError {
    /// Builds an error with a code and a message.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            details: None,
            kind: None,
        }
    }

    /// An application error of `kind`, with the kind's protocol code.
    pub fn of_kind(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self::new(kind.code(), message).with_kind(kind)
    }

    /// Sets the application error kind (the code is kept).
    #[must_use]
    pub fn with_kind(mut self, kind: ErrorKind) -> Self {
        self.kind = Some(kind);
        self
    }

    /// The thing the call is about does not exist: [`ErrorKind::NotFound`] (HTTP 404).
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::of_kind(ErrorKind::NotFound, message)
    }

    /// The call conflicts with the current state: [`ErrorKind::Conflict`] (HTTP 409).
    pub fn conflict(message: impl Into<String>) -> Self {
        Self::of_kind(ErrorKind::Conflict, message)
    }

    /// The input breaks a rule of the domain: [`ErrorKind::Unprocessable`] (HTTP 422).
    pub fn unprocessable(message: impl Into<String>) -> Self {
        Self::of_kind(ErrorKind::Unprocessable, message)
    }

    /// Too many calls: [`ErrorKind::RateLimited`] (HTTP 429).
    pub fn rate_limited(message: impl Into<String>) -> Self {
        Self::of_kind(ErrorKind::RateLimited, message)
    }

    /// The caller must authenticate: [`ErrorKind::Unauthenticated`] (HTTP 401).
    pub fn unauthenticated(message: impl Into<String>) -> Self {
        Self::of_kind(ErrorKind::Unauthenticated, message)
    }

    /// A dependency is down: [`ErrorKind::Unavailable`] (HTTP 503).
    pub fn unavailable(message: impl Into<String>) -> Self {
        Self::of_kind(ErrorKind::Unavailable, message)
    }

    /// Adds structured details.
    #[must_use]
    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }

    /// `OPERATION_NOT_FOUND` for `id`: no operation has this id. (An operation whose own
    /// subject is missing answers [`CallError::not_found`].)
    pub fn operation_not_found(id: &str) -> Self {
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
