//! Errors of the OpenAPI import: documents that cannot be used, and operations that are skipped.

use std::fmt;

/// Why a document could not be imported at all.
///
/// Every variant that is about the document's content names the JSON pointer (RFC 6901) of
/// the problem, `""` being the document root.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OpenApiError {
    /// The document file could not be read.
    #[error("cannot read the OpenAPI document {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The document URL could not be fetched.
    #[error("cannot fetch the OpenAPI document {url}: {message}")]
    Fetch {
        /// The URL.
        url: String,
        /// What went wrong (connection, status, ...).
        message: String,
    },
    /// The text is neither valid JSON nor valid YAML.
    #[error("the OpenAPI document is not valid {format}: {message}")]
    Parse {
        /// `"JSON"` or `"YAML"`.
        format: &'static str,
        /// The parser's message (with line and column).
        message: String,
    },
    /// The document is parsed but cannot be used: wrong shape or unsupported version.
    #[error("invalid OpenAPI document at {}: {message}", display_pointer(pointer))]
    Invalid {
        /// JSON pointer of the problem.
        pointer: String,
        /// What is wrong there.
        message: String,
    },
    /// The document needs more schema work than the import's budget allows: its shared
    /// schemas reach so much from so many operations that bundling them would exceed
    /// [`OpenApiOptions::max_schema_nodes`](super::OpenApiOptions::max_schema_nodes).
    #[error(
        "the OpenAPI document exceeds the import's schema budget of {limit} schema nodes (after {operations} operations); raise OpenApiOptions::max_schema_nodes to import it"
    )]
    SchemaBudget {
        /// The budget, in schema nodes.
        limit: usize,
        /// The operations mapped before the budget ran out.
        operations: usize,
    },
    /// The import options are unusable (bad namespace, base URL, ...).
    #[error("invalid OpenAPI import options: {0}")]
    Options(String),
}

impl OpenApiError {
    pub(crate) fn invalid(pointer: impl Into<String>, message: impl Into<String>) -> Self {
        Self::Invalid {
            pointer: pointer.into(),
            message: message.into(),
        }
    }

    /// The JSON pointer of the problem, for errors about the document's content.
    pub fn pointer(&self) -> Option<&str> {
        match self {
            Self::Invalid { pointer, .. } => Some(pointer),
            _ => None,
        }
    }
}

/// Shows the root pointer `""` as `/` (the empty string reads as nothing in a message).
pub(crate) fn display_pointer(pointer: &str) -> &str {
    if pointer.is_empty() { "/" } else { pointer }
}

/// An HTTP operation of the document that was not imported, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedOperation {
    /// The HTTP method, upper case (`GET`).
    pub method: String,
    /// The path template (`/pets/{petId}`).
    pub path: String,
    /// JSON pointer of the problem in the document.
    pub pointer: String,
    /// Why the operation was skipped.
    pub reason: String,
}

impl fmt::Display for SkippedOperation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} skipped: {} (at {})",
            self.method,
            self.path,
            self.reason,
            display_pointer(&self.pointer)
        )
    }
}

/// A problem found while mapping one operation: where (JSON pointer) and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MapError {
    pub pointer: String,
    pub message: String,
}

impl MapError {
    pub(crate) fn new(pointer: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            pointer: pointer.into(),
            message: message.into(),
        }
    }
}
