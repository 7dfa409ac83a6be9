//! Schema tools: generation from Rust types, compiled validation, and normalization (cast).
//!
//! Every schema opkit produces or consumes is JSON Schema 2020-12 held as a
//! [`serde_json::Value`]; an [`OperationSpec`](crate::OperationSpec) holds its schemas as
//! [`Schema`]s, which read as one (and may share definitions with other specs' schemas, see
//! [`Schema::with_definitions`]). An output schema of `true` or `{}` is *Unknown*: results are neither
//! normalized nor validated.

mod cast;
mod closed;
mod compiled_definitions;
mod error;
mod generate;
pub mod pointer;
pub mod refs;
mod shared;
mod shared_closed;
mod shared_validate;
mod standard;
mod validate;

pub use cast::{CAST_MAX_DEPTH, cast, cast_with_root};
#[cfg(test)]
pub(crate) use closed::closed_schema;
pub use error::SchemaError;
pub use generate::{input_schema_for, schema_for};
pub use shared::{Definitions, Schema};
pub(crate) use shared_closed::closed_form;
pub use standard::standard_formats;
pub use validate::{CompileSource, CompiledSchema};

use serde_json::Value;

/// `true` for the Unknown schema: `true`, `{}`, or an object holding only annotations
/// (`$schema`, `title`, `description`, ...) and no constraint.
pub fn is_unknown(schema: &Value) -> bool {
    match schema {
        Value::Bool(accepts) => *accepts,
        Value::Object(keywords) => keywords.keys().all(|key| {
            matches!(
                key.as_str(),
                "$schema" | "$id" | "title" | "description" | "examples" | "$comment"
            )
        }),
        _ => false,
    }
}

/// The JSON type of `value` with its article (`"an object"`, `"null"`), for error messages.
///
/// ```
/// assert_eq!(opkit::schema::json_type_name(&serde_json::json!([1])), "an array");
/// ```
pub fn json_type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
