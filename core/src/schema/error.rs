//! [`SchemaError`]: why a schema could not be compiled.

/// A schema could not be compiled into a validator.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid JSON Schema at {path}: {message}")]
pub struct SchemaError {
    /// JSON pointer into the schema.
    pub path: String,
    /// What is wrong.
    pub message: String,
}
