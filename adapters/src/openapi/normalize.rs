//! What happens to the data an imported API answers with, and the warning when the
//! pipeline's cast changes it.
//!
//! The registry's result pipeline casts every result to the operation's output schema
//! (undeclared keys dropped, mismatching values replaced by the schema's default, missing
//! required fields created). For an API that is somebody else's, that rewrites replies the
//! caller may need as they are, so [`Normalization`] lets the import choose:
//!
//! * [`Normalization::On`] (the default): the handler casts the reply itself and, when the
//!   cast changed it, logs a `tracing::warn!` naming the operation and the JSON pointers of
//!   the keys dropped, values replaced and fields invented (at most [`MAX_LISTED`] of them,
//!   and at most one warning per operation per [`WARN_INTERVAL`]; the next warning counts
//!   the ones left out). The reply goes on cast, as before.
//! * [`Normalization::ValidateOnly`]: the reply is left as it is; a reply that does not
//!   match the schema is a (rate-limited) warning listing the violations. The operation is
//!   registered with an Unknown output schema, so the pipeline leaves its data alone; the
//!   declared schema is kept in `extensions.openapi.outputSchema`.
//! * [`Normalization::Off`]: the reply is left as it is and not checked; the declared schema
//!   is kept in `extensions.openapi.outputSchema` the same way.
//!
//! The schema the handler casts with under `On` is the operation's own output schema, which
//! refers into the import's shared definitions (given by [`Normalizer::share`]). Otherwise
//! (`ValidateOnly`, or an import without shared definitions) it is built again from the
//! document at the operation's first reply, rather than held twice from the import on; the
//! validator of `ValidateOnly` is compiled then too.

use opkit::schema::{CompiledSchema, Schema};
use parking_lot::Mutex;
use serde_json::Value;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// At most this many changed JSON pointers are listed in one warning.
pub const MAX_LISTED: usize = 16;
/// At most one normalization warning per operation per this interval.
pub const WARN_INTERVAL: Duration = Duration::from_secs(10);

/// What the import does with the replies of the API (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Normalization {
    /// Cast replies to the output schema, and warn when that changes them.
    #[default]
    On,
    /// Leave replies as they are; warn when one does not match the output schema.
    ValidateOnly,
    /// Leave replies as they are, unchecked.
    Off,
}

/// Builds an operation's output schema again, as the import built it (`None` when it is
/// Unknown or cannot be built); the import hands one to each [`Normalizer`].
pub(crate) type SchemaSource = Box<dyn Fn() -> Option<Value> + Send + Sync>;

/// One operation's reply handling.
pub(crate) struct Normalizer {
    mode: Normalization,
    operation: String,
    /// Where the output schema comes from (`None` when Unknown, or not needed).
    source: Option<SchemaSource>,
    /// The output schema: shared with the spec, or built at the first reply (not held twice
    /// from the import on).
    schema: OnceLock<Option<Schema>>,
    validator: OnceLock<Option<CompiledSchema>>,
    limiter: RateLimit,
}

impl std::fmt::Debug for Normalizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Normalizer")
            .field("mode", &self.mode)
            .field("operation", &self.operation)
            .field("source", &self.source.is_some())
            .finish_non_exhaustive()
    }
}

impl Normalizer {
    pub fn new(mode: Normalization, operation: String, source: Option<SchemaSource>) -> Self {
        Self {
            mode,
            operation,
            source,
            schema: OnceLock::new(),
            validator: OnceLock::new(),
            limiter: RateLimit::default(),
        }
    }

    /// A normalizer with its schema already at hand.
    #[cfg(test)]
    fn with_schema(mode: Normalization, schema: Value) -> Self {
        let normalizer = Self::new(mode, "a.b".into(), None);
        let _ = normalizer.schema.set(Some(Schema::new(schema)));
        normalizer
    }

    /// Casts with `schema`, the operation's output schema (a cheap clone of one that refers
    /// into shared definitions), instead of building a copy at the first reply. Only `On`
    /// casts with the spec's schema; the other modes keep theirs.
    pub(crate) fn share(&self, schema: &Schema) {
        if self.mode == Normalization::On && schema.definitions().is_some() {
            let _ = self.schema.set(Some(schema.clone()));
        }
    }

    /// The data to put in the envelope.
    pub fn apply(&self, data: Value) -> Value {
        if self.mode == Normalization::Off {
            return data;
        }
        let schema = self.schema.get_or_init(|| {
            self.source
                .as_ref()
                .and_then(|build| build())
                .map(Schema::new)
        });
        let Some(schema) = schema else {
            return data;
        };
        match self.mode {
            Normalization::Off => data,
            Normalization::ValidateOnly => {
                let validator = self
                    .validator
                    .get_or_init(|| CompiledSchema::compile(schema).ok());
                if let Some(validator) = validator
                    && let Err(violations) = validator.validate(&data)
                    && let Some(suppressed) = self.limiter.allow()
                {
                    let listed: Vec<String> = violations
                        .iter()
                        .take(MAX_LISTED)
                        .map(|v| format!("{}: {}", display(&v.path), v.message))
                        .collect();
                    tracing::warn!(
                        operation = %self.operation,
                        violations = violations.len(),
                        suppressed_warnings = suppressed,
                        "the reply does not match the operation's output schema (left as it is): {}",
                        listed.join("; ")
                    );
                }
                data
            }
            Normalization::On => {
                let casted = schema.cast(data.clone());
                if casted != data
                    && let Some(suppressed) = self.limiter.allow()
                {
                    let mut changes = Changes::default();
                    changes.diff(&data, &casted, &mut String::new());
                    tracing::warn!(
                        operation = %self.operation,
                        dropped = ?changes.dropped,
                        replaced = ?changes.replaced,
                        invented = ?changes.invented,
                        more = changes.more,
                        suppressed_warnings = suppressed,
                        "the reply was changed to fit the operation's output schema (OpenApiOptions::normalization chooses validate-only or off)"
                    );
                }
                casted
            }
        }
    }
}

fn display(pointer: &str) -> &str {
    if pointer.is_empty() { "/" } else { pointer }
}

/// One warning per [`WARN_INTERVAL`]; counts the ones left out.
#[derive(Debug, Default)]
struct RateLimit {
    last: Mutex<Option<Instant>>,
    suppressed: AtomicU64,
}

impl RateLimit {
    /// `Some(left out since the last one)` when a warning may be logged now.
    fn allow(&self) -> Option<u64> {
        let mut last = self.last.lock();
        let now = Instant::now();
        match *last {
            Some(at) if now.duration_since(at) < WARN_INTERVAL => {
                self.suppressed.fetch_add(1, Ordering::Relaxed);
                None
            }
            _ => {
                *last = Some(now);
                Some(self.suppressed.swap(0, Ordering::Relaxed))
            }
        }
    }
}

/// The JSON pointers a cast changed, by kind.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Changes {
    pub dropped: Vec<String>,
    pub replaced: Vec<String>,
    pub invented: Vec<String>,
    /// Changes beyond [`MAX_LISTED`].
    pub more: usize,
}

impl Changes {
    fn listed(&self) -> usize {
        self.dropped.len() + self.replaced.len() + self.invented.len()
    }

    fn note(&mut self, kind: fn(&mut Self) -> &mut Vec<String>, pointer: &str) {
        if self.listed() < MAX_LISTED {
            kind(self).push(display(pointer).to_owned());
        } else {
            self.more += 1;
        }
    }

    /// Compares `before` and `after` below `pointer` (a buffer, restored on return).
    pub fn diff(&mut self, before: &Value, after: &Value, pointer: &mut String) {
        match (before, after) {
            (Value::Object(a), Value::Object(b)) => {
                for (key, value) in a {
                    let len = pointer.len();
                    opkit::schema::pointer::push(pointer, key);
                    match b.get(key) {
                        Some(other) => self.diff(value, other, pointer),
                        None => self.note(|c| &mut c.dropped, pointer),
                    }
                    pointer.truncate(len);
                }
                for key in b.keys().filter(|key| !a.contains_key(*key)) {
                    let len = pointer.len();
                    opkit::schema::pointer::push(pointer, key);
                    self.note(|c| &mut c.invented, pointer);
                    pointer.truncate(len);
                }
            }
            (Value::Array(a), Value::Array(b)) => {
                for (i, value) in a.iter().enumerate() {
                    let len = pointer.len();
                    opkit::schema::pointer::push(pointer, &i.to_string());
                    match b.get(i) {
                        Some(other) => self.diff(value, other, pointer),
                        None => self.note(|c| &mut c.dropped, pointer),
                    }
                    pointer.truncate(len);
                }
                for i in a.len()..b.len() {
                    let len = pointer.len();
                    opkit::schema::pointer::push(pointer, &i.to_string());
                    self.note(|c| &mut c.invented, pointer);
                    pointer.truncate(len);
                }
            }
            (a, b) if a != b => self.note(|c| &mut c.replaced, pointer),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn on_casts_with_the_specs_shared_schema_and_builds_nothing() {
        let defs = std::sync::Arc::new(opkit::schema::Definitions::new([(
            "Pet".to_owned(),
            json!({"type": "object", "properties": {"name": {"type": "string"}}}),
        )]));
        let shared = Schema::with_definitions(json!({"$ref": "#/$defs/Pet"}), defs);
        let never = || -> Option<Value> { panic!("the schema is shared, not built") };
        let on = Normalizer::new(Normalization::On, "a.b".into(), Some(Box::new(never)));
        on.share(&shared);
        assert_eq!(
            on.apply(json!({"name": "Rex", "extra": 1})),
            json!({"name": "Rex"})
        );
        // Other modes keep the schema of their own.
        let built = || Some(json!({"type": "object"}));
        let validate = Normalizer::new(
            Normalization::ValidateOnly,
            "a.b".into(),
            Some(Box::new(built)),
        );
        validate.share(&shared);
        assert_eq!(validate.apply(json!({"extra": 1})), json!({"extra": 1}));
        assert_eq!(
            validate.schema.get().cloned().flatten(),
            Some(Schema::new(json!({"type": "object"})))
        );
    }

    #[test]
    fn diff_names_dropped_replaced_and_invented_pointers() {
        let before = json!({"keep": 1, "extra": 2, "n": "12", "list": [1, 2, 3], "a/b": {"x": 1}});
        let after =
            json!({"keep": 1, "n": 0, "list": [1, 2], "a/b": {"x": 1, "y": null}, "name": ""});
        let mut changes = Changes::default();
        changes.diff(&before, &after, &mut String::new());
        assert_eq!(changes.dropped, ["/extra", "/list/2"]);
        assert_eq!(changes.replaced, ["/n"]);
        assert_eq!(changes.invented, ["/a~1b/y", "/name"]);
        assert_eq!(changes.more, 0);
    }

    #[test]
    fn the_list_is_bounded() {
        let before = Value::Object((0..100).map(|i| (format!("k{i}"), json!(i))).collect());
        let mut changes = Changes::default();
        changes.diff(&before, &json!({}), &mut String::new());
        assert_eq!(changes.dropped.len(), MAX_LISTED);
        assert_eq!(changes.more, 100 - MAX_LISTED);
    }

    #[test]
    fn modes() {
        let schema =
            json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]});
        let reply = json!({"n": "12", "extra": true});
        let on = Normalizer::with_schema(Normalization::On, schema.clone());
        assert_eq!(on.apply(reply.clone()), json!({"n": 0}));
        let validate = Normalizer::with_schema(Normalization::ValidateOnly, schema.clone());
        assert_eq!(validate.apply(reply.clone()), reply);
        let off = Normalizer::with_schema(Normalization::Off, schema);
        assert_eq!(off.apply(reply.clone()), reply);
    }

    #[test]
    fn warnings_are_rate_limited() {
        let limit = RateLimit::default();
        assert_eq!(limit.allow(), Some(0));
        assert_eq!(limit.allow(), None);
        assert_eq!(limit.allow(), None);
        *limit.last.lock() = Some(Instant::now() - WARN_INTERVAL);
        assert_eq!(limit.allow(), Some(2));
    }
}
