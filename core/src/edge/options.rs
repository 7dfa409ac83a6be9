//! [`EdgeOptionsError`]: an operation's options for one edge that the edge cannot read.

use std::fmt;

/// The options an operation gives one edge (`#[operation(mcp(..))]`,
/// [`OperationSpec::with_edge_options`](crate::OperationSpec::with_edge_options)) do not read
/// as that edge's options: an unknown key, a value of the wrong type. The edge refuses to
/// start with it, naming the operation and the edge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EdgeOptionsError {
    operation: String,
    edge: String,
    reason: String,
}

impl EdgeOptionsError {
    /// The error of `operation`'s options for `edge`, and why.
    pub fn new(
        operation: impl Into<String>,
        edge: impl Into<String>,
        reason: impl Into<String>,
    ) -> Self {
        Self {
            operation: operation.into(),
            edge: edge.into(),
            reason: reason.into(),
        }
    }

    /// The operation's id.
    pub fn operation(&self) -> &str {
        &self.operation
    }

    /// The edge's name.
    pub fn edge(&self) -> &str {
        &self.edge
    }

    /// What is wrong.
    pub fn reason(&self) -> &str {
        &self.reason
    }
}

impl fmt::Display for EdgeOptionsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "operation `{}`: its `{}(..)` options cannot be read: {}",
            self.operation, self.edge, self.reason
        )
    }
}

impl std::error::Error for EdgeOptionsError {}
