//! Compiled JSON Schema validation that reports every violation with a JSON-pointer path.

use super::error::SchemaError;
use super::shared::{Definitions, Schema};
use crate::error::Violation;
use jsonschema::ValidationError;
use jsonschema::paths::Location;
use serde_json::Value;
use std::fmt;
use std::sync::Arc;

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
    pub(super) validator: jsonschema::Validator,
    /// The shared definitions the validator runs (see [`CompileSource`] for [`Schema`]),
    /// kept alive as long as it is.
    pub(super) _definitions: Option<Arc<Definitions>>,
}

/// What [`CompiledSchema::compile`] compiles: a schema as a [`Value`], or a spec's
/// [`Schema`].
///
/// A [`Schema`] that shares an import's [`Definitions`] compiles only its root; each
/// definition it reaches is compiled once for the whole import and shared by every
/// validator that reaches it (a self-contained copy per operation would compile the
/// definitions once per operation). Violations and their paths are the same. A schema whose
/// meaning depends on its document beyond `#/$defs/<name>` references (`$id`, anchors,
/// `unevaluatedProperties`, its own `$defs`) compiles its self-contained form, built for
/// the compiler and not kept.
pub trait CompileSource: sealed::Sealed {
    /// The validator.
    fn compile_validator(&self) -> Result<CompiledSchema, SchemaError>;
}

pub(super) mod sealed {
    pub trait Sealed {}
    impl Sealed for serde_json::Value {}
    impl Sealed for super::Schema {}
}

impl CompileSource for Value {
    fn compile_validator(&self) -> Result<CompiledSchema, SchemaError> {
        plain_options()
            .build(self)
            .map(|validator| CompiledSchema {
                validator,
                _definitions: None,
            })
            .map_err(|error| SchemaError {
                path: error.schema_path().to_string(),
                message: error.to_string(),
            })
    }
}

/// The options every validator is built with: formats are not checked, remote references
/// are not fetched.
pub(super) fn plain_options() -> jsonschema::ValidationOptions<'static> {
    jsonschema::options().should_validate_formats(false)
}

impl fmt::Debug for CompiledSchema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CompiledSchema").finish_non_exhaustive()
    }
}

impl CompiledSchema {
    /// Compiles `schema`, a [`Value`] or a [`Schema`] (see [`CompileSource`]). Remote
    /// `$ref`s are never fetched; local `$ref`/`$defs` work.
    pub fn compile<S: CompileSource + ?Sized>(schema: &S) -> Result<Self, SchemaError> {
        schema.compile_validator()
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
            .map(|error| {
                let (path, message) = decode(error.instance_path(), &error);
                Violation { path, message }
            })
            .collect();
        if violations.is_empty() {
            Ok(())
        } else {
            Err(violations)
        }
    }
}

/// Marks the relative path at the head of a shared definition's error message.
const MARK: char = '\u{1}';

/// A message carrying the path of the violation relative to where the keyword ran.
pub(super) fn encode(path: &str, message: &str) -> String {
    format!("{MARK}{path}{MARK}{message}")
}

/// The path (below `at`) and message of a validation error, reading a path that a shared
/// definition's error carries in its message.
pub(super) fn decode(at: &Location, error: &ValidationError<'_>) -> (String, String) {
    if let jsonschema::error::ValidationErrorKind::Custom { message, .. } = error.kind()
        && let Some(rest) = message.strip_prefix(MARK)
        && let Some((path, message)) = rest.split_once(MARK)
    {
        return (format!("{}{path}", at.as_str()), message.to_owned());
    }
    (at.as_str().to_owned(), error.to_string())
}
