//! Local `$ref`s of a JSON Schema: the one place that knows which members of a schema hold
//! schemas (and so may hold a `$ref`), how every reference is visited or rewritten, and how a
//! `#/$defs/<name>` target reads.
//!
//! ```
//! use opkit::schema::refs;
//! use serde_json::json;
//! let mut schema = json!({
//!     "properties": {"default": {"$ref": "#/$defs/A~1B"}},
//!     "default": {"$ref": "not a reference: data"}
//! });
//! refs::rewrite_refs(&mut schema, &mut |target| {
//!     refs::definition_of(target).map(|name| format!("#/components/schemas/{name}"))
//! });
//! assert_eq!(schema["properties"]["default"]["$ref"], "#/components/schemas/A/B");
//! assert_eq!(schema["default"]["$ref"], "not a reference: data");
//! ```

use super::pointer;
use serde_json::Value;
use std::borrow::Cow;

/// The target prefix of a reference to a definition of the same document.
pub const DEFS_PREFIX: &str = "#/$defs/";

/// Keywords whose values are data, not schemas: a `$ref` inside them is not a reference.
pub const DATA_KEYWORDS: &[&str] = &["const", "default", "enum", "examples", "example"];

/// Keywords whose value maps names (of properties, patterns, definitions) to schemas: those
/// names are not keywords (a property may be called `default`, `enum` or `$ref`).
pub const NAME_MAPS: &[&str] = &[
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
];

/// The definition a `#/$defs/<name>[/...]` target points into, unescaped; `None` for any
/// other target.
pub fn definition_of(target: &str) -> Option<Cow<'_, str>> {
    let rest = target.strip_prefix(DEFS_PREFIX)?;
    let token = rest.split('/').next().unwrap_or(rest);
    Some(pointer::unescape(token))
}

/// Calls `visit` with every `$ref` target of `schema`, data keywords skipped.
pub fn for_each_ref(schema: &Value, visit: &mut dyn FnMut(&str)) {
    match schema {
        Value::Object(map) => {
            for (key, value) in map {
                if NAME_MAPS.contains(&key.as_str())
                    && let Value::Object(named) = value
                {
                    for schema in named.values() {
                        for_each_ref(schema, visit);
                    }
                } else if key == "$ref" {
                    if let Value::String(target) = value {
                        visit(target);
                    }
                } else if !DATA_KEYWORDS.contains(&key.as_str()) {
                    for_each_ref(value, visit);
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                for_each_ref(item, visit);
            }
        }
        _ => {}
    }
}

/// Calls `rewrite` on every `$ref` target of `schema` (data keywords skipped) and replaces the
/// target when it returns `Some`.
pub fn rewrite_refs(schema: &mut Value, rewrite: &mut dyn FnMut(&str) -> Option<String>) {
    match schema {
        Value::Object(map) => {
            for (key, value) in map.iter_mut() {
                if NAME_MAPS.contains(&key.as_str())
                    && let Value::Object(named) = value
                {
                    for schema in named.values_mut() {
                        rewrite_refs(schema, rewrite);
                    }
                } else if key == "$ref" {
                    if let Value::String(target) = value
                        && let Some(new) = rewrite(target)
                    {
                        *target = new;
                    }
                } else if !DATA_KEYWORDS.contains(&key.as_str()) {
                    rewrite_refs(value, rewrite);
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                rewrite_refs(item, rewrite);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn properties_named_like_keywords_are_schemas_and_data_is_not() {
        let mut schema = json!({"properties": {
            "default": {"$ref": "#/$defs/A"},
            "enum": {"items": {"$ref": "#/$defs/A"}},
            "$ref": {"$ref": "#/$defs/A"}
        }, "default": {"$ref": "#/$defs/A"}, "const": [{"$ref": "#/$defs/A"}]});
        let mut seen = 0;
        for_each_ref(&schema, &mut |_| seen += 1);
        assert_eq!(seen, 3);
        rewrite_refs(&mut schema, &mut |_| Some("#/x".to_owned()));
        assert_eq!(schema["properties"]["default"]["$ref"], "#/x");
        assert_eq!(schema["properties"]["enum"]["items"]["$ref"], "#/x");
        assert_eq!(schema["properties"]["$ref"]["$ref"], "#/x");
        assert_eq!(schema["default"]["$ref"], "#/$defs/A", "data is left alone");
    }

    #[test]
    fn definition_targets_read_their_first_token() {
        assert_eq!(
            definition_of("#/$defs/A~1B/properties/x").as_deref(),
            Some("A/B")
        );
        assert_eq!(definition_of("#/$defs/Plain").as_deref(), Some("Plain"));
        assert_eq!(definition_of("#/definitions/A"), None);
        assert_eq!(definition_of("https://example.com/s.json"), None);
    }
}
