//! Schema keywords the validator cannot take, degraded with a warning instead of losing the
//! operation that uses them.
//!
//! | keyword | what happens |
//! |---|---|
//! | `$recursiveAnchor` (2019-09) | dropped |
//! | `$recursiveRef: "#"` (2019-09) | inside a definition: `$ref` to that definition (what it means when the definition carries `$recursiveAnchor: true` and nothing extends it); elsewhere dropped |
//! | `required` naming a property twice | the duplicates are dropped |
//! | `pattern` the validator's regex engine rejects (ECMA-262 syntax Rust regexes lack) | dropped |
//! | `title` or `description` that is not a string (a `$ref` object written there) | dropped |
//! | `$id`, `$schema` inside a bundled schema | dropped silently: they would change the base URI or dialect of the `$defs` references |
//!
//! Each warning names the JSON pointer in the document, once per pointer per import.

use serde_json::{Map, Value, json};
use std::collections::{HashMap, HashSet};

/// What to do with one keyword.
pub(crate) enum Keyword {
    Keep,
    Drop,
    Replace(String, Value),
}

/// The per-import state: which patterns compile, which pointers were warned about.
#[derive(Default)]
pub(crate) struct Sanitizer {
    patterns: HashMap<String, bool>,
    warned: HashSet<String>,
    /// No warnings (a schema built again after the import).
    pub quiet: bool,
}

impl Sanitizer {
    fn warn(&mut self, pointer: &str, message: &str) {
        if !self.quiet && self.warned.insert(pointer.to_owned()) {
            tracing::warn!(at = pointer, "OpenAPI schema keyword degraded: {message}");
        }
    }

    fn pattern_compiles(&mut self, pattern: &str) -> bool {
        if let Some(&ok) = self.patterns.get(pattern) {
            return ok;
        }
        let ok = opkit::schema::CompiledSchema::compile(&json!({"pattern": pattern})).is_ok();
        self.patterns.insert(pattern.to_owned(), ok);
        ok
    }

    /// Decides about `key: value` of the schema object `map` at `pointer` (the keyword's
    /// pointer); `current` is the `$defs` name of the definition being built.
    pub fn keyword(
        &mut self,
        map: &Map<String, Value>,
        key: &str,
        value: &Value,
        pointer: &str,
        current: Option<&str>,
    ) -> Keyword {
        match key {
            "$recursiveAnchor" => {
                self.warn(
                    pointer,
                    "`$recursiveAnchor` (2019-09) is not supported; dropped",
                );
                Keyword::Drop
            }
            "$recursiveRef" => match (current, value.as_str()) {
                (Some(name), Some("#")) if !map.contains_key("$ref") => {
                    self.warn(
                        pointer,
                        "`$recursiveRef` (2019-09) is read as a `$ref` to the schema that holds it",
                    );
                    Keyword::Replace("$ref".into(), json!(format!("#/$defs/{name}")))
                }
                _ => {
                    self.warn(
                        pointer,
                        "`$recursiveRef` (2019-09) is not supported here; dropped",
                    );
                    Keyword::Drop
                }
            },
            "required" => match value {
                Value::Array(names) => {
                    let mut seen = HashSet::new();
                    let unique: Vec<Value> = names
                        .iter()
                        .filter(|name| seen.insert((*name).clone()))
                        .cloned()
                        .collect();
                    if unique.len() == names.len() {
                        Keyword::Keep
                    } else {
                        self.warn(
                            pointer,
                            "`required` names a property twice; duplicates dropped",
                        );
                        Keyword::Replace("required".into(), Value::Array(unique))
                    }
                }
                _ => Keyword::Keep,
            },
            "pattern" => match value.as_str() {
                Some(pattern) if !self.pattern_compiles(pattern) => {
                    self.warn(
                        pointer,
                        "the `pattern` does not compile in the validator's regex engine; dropped",
                    );
                    Keyword::Drop
                }
                _ => Keyword::Keep,
            },
            "title" | "description" if !value.is_string() => {
                self.warn(
                    pointer,
                    "a `title` or `description` that is not a string; dropped",
                );
                Keyword::Drop
            }
            "$id" | "$schema" => Keyword::Drop,
            _ => Keyword::Keep,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decide(key: &str, value: Value, current: Option<&str>) -> Option<(String, Value)> {
        let mut sanitizer = Sanitizer::default();
        let map = Map::new();
        match sanitizer.keyword(&map, key, &value, "/x", current) {
            Keyword::Keep => Some((key.to_owned(), value)),
            Keyword::Drop => None,
            Keyword::Replace(key, value) => Some((key, value)),
        }
    }

    #[test]
    fn keywords_degrade() {
        assert_eq!(decide("$recursiveAnchor", json!(true), Some("A")), None);
        assert_eq!(
            decide("$recursiveRef", json!("#"), Some("Filter")),
            Some(("$ref".into(), json!("#/$defs/Filter")))
        );
        assert_eq!(decide("$recursiveRef", json!("#"), None), None);
        assert_eq!(
            decide("required", json!(["a", "b", "a"]), None),
            Some(("required".into(), json!(["a", "b"])))
        );
        assert_eq!(
            decide("required", json!(["a"]), None),
            Some(("required".into(), json!(["a"])))
        );
        assert_eq!(decide("pattern", json!("a[b"), None), None);
        assert_eq!(
            decide("pattern", json!("^a+$"), None),
            Some(("pattern".into(), json!("^a+$")))
        );
        assert_eq!(decide("$id", json!("urn:x"), None), None);
        assert_eq!(
            decide("description", json!({"$ref": "#/x/description"}), None),
            None
        );
        assert_eq!(
            decide("description", json!("text"), None),
            Some(("description".into(), json!("text")))
        );
    }
}
