//! Compiled JSON Schema validation that reports every violation with a JSON-pointer path.

use crate::error::Violation;
use serde_json::Value;
use std::fmt;

/// A schema could not be compiled into a validator.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid JSON Schema at {path}: {message}")]
pub struct SchemaError {
    /// JSON pointer into the schema.
    pub path: String,
    /// What is wrong.
    pub message: String,
}

/// A validator compiled once from a schema and reused for every call.
///
/// ```
/// use opkit::schema::CompiledSchema;
/// use serde_json::json;
/// let schema = CompiledSchema::compile(&json!({
///     "type": "object",
///     "properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
///     "required": ["a", "b"]
/// })).unwrap();
/// let violations = schema.validate(&json!({"a": "x"})).unwrap_err();
/// assert_eq!(violations.len(), 2); // `a` has the wrong type and `b` is missing
/// assert!(violations.iter().any(|v| v.path == "/a"));
/// ```
pub struct CompiledSchema {
    validator: jsonschema::Validator,
}

impl fmt::Debug for CompiledSchema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CompiledSchema").finish_non_exhaustive()
    }
}

impl CompiledSchema {
    /// Compiles `schema`. Remote `$ref`s are never fetched; local `$ref`/`$defs` work.
    pub fn compile(schema: &Value) -> Result<Self, SchemaError> {
        jsonschema::options()
            .should_validate_formats(false)
            .build(schema)
            .map(|validator| Self { validator })
            .map_err(|error| SchemaError {
                path: error.schema_path().to_string(),
                message: error.to_string(),
            })
    }

    /// `true` when `value` satisfies the schema.
    pub fn is_valid(&self, value: &Value) -> bool {
        self.validator.is_valid(value)
    }

    /// Every violation of the schema by `value`, each with the JSON pointer of the offending value.
    pub fn validate(&self, value: &Value) -> Result<(), Vec<Violation>> {
        if self.validator.is_valid(value) {
            return Ok(());
        }
        let violations: Vec<Violation> = self
            .validator
            .iter_errors(value)
            .map(|error| Violation {
                path: error.instance_path().to_string(),
                message: error.to_string(),
            })
            .collect();
        if violations.is_empty() {
            Ok(())
        } else {
            Err(violations)
        }
    }
}
