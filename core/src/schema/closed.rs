//! The closed form of an output schema: every object schema made to refuse undeclared
//! properties, for a fast check that data is exactly what [`cast`](super::cast) would return.

use serde_json::Value;

/// Keywords whose meaning for `cast` is fully captured by the closed schema's validation:
/// data valid against the closed schema is left unchanged by `cast` (no union branch to
/// pick, no property to drop, nothing to create or truncate).
const CLOSABLE_KEYWORDS: &[&str] = &[
    "$schema",
    "$id",
    "$comment",
    "$ref",
    "$defs",
    "definitions",
    "title",
    "description",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
    "default",
    "type",
    "format",
    "enum",
    "const",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "minItems",
    "maxItems",
    "uniqueItems",
    "minLength",
    "maxLength",
    "pattern",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
];

/// The output schema with every object schema closed (`additionalProperties: false` where it
/// declares properties and says nothing about extras), or `None` when the schema uses a
/// keyword outside [`CLOSABLE_KEYWORDS`] (unions, `allOf`, pattern or unevaluated
/// properties, tuples, ...): then the pipeline always casts.
pub(crate) fn closed_schema(schema: &Value) -> Option<Value> {
    match schema {
        Value::Bool(_) => Some(schema.clone()),
        Value::Object(map) => {
            let mut closed = serde_json::Map::with_capacity(map.len() + 1);
            for (keyword, value) in map {
                if !CLOSABLE_KEYWORDS.contains(&keyword.as_str()) {
                    return None;
                }
                let value = match keyword.as_str() {
                    "properties" | "$defs" | "definitions" => {
                        let Value::Object(members) = value else {
                            return None;
                        };
                        let mut out = serde_json::Map::with_capacity(members.len());
                        for (name, member) in members {
                            out.insert(name.clone(), closed_schema(member)?);
                        }
                        Value::Object(out)
                    }
                    "items" | "additionalProperties" => closed_schema(value)?,
                    "type" => match value {
                        Value::String(_) => value.clone(),
                        Value::Array(names) if names.iter().all(Value::is_string) => value.clone(),
                        _ => return None,
                    },
                    "$ref" => {
                        // Only local references, which the closed copy resolves to closed
                        // definitions.
                        let Value::String(target) = value else {
                            return None;
                        };
                        if !(target == "#" || target.starts_with("#/")) {
                            return None;
                        }
                        value.clone()
                    }
                    _ => value.clone(),
                };
                closed.insert(keyword.clone(), value);
            }
            let declares = |keyword: &str| match map.get(keyword) {
                Some(Value::Object(members)) => !members.is_empty(),
                Some(Value::Array(members)) => !members.is_empty(),
                _ => false,
            };
            // Any `properties` keyword, even an empty one, makes `cast` drop undeclared keys.
            let declares_properties = map.contains_key("properties") || declares("required");
            if declares_properties && !map.contains_key("additionalProperties") {
                // `cast` drops undeclared properties; a key that is only `required` counts as
                // declared there, but the closed schema rejects it, which only means the slow
                // path runs.
                closed.insert("additionalProperties".to_owned(), Value::Bool(false));
            }
            Some(Value::Object(closed))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn unions_and_pattern_properties_have_no_closed_form() {
        assert!(closed_schema(&json!({"anyOf": [{"type": "string"}, {"type": "null"}]})).is_none());
        assert!(
            closed_schema(&json!({"type": "object", "patternProperties": {"^a": {}}})).is_none()
        );
        assert!(closed_schema(&json!({"type": "array", "prefixItems": [{}]})).is_none());
        assert!(closed_schema(&json!({"$ref": "https://example.com/s.json"})).is_none());
        assert_eq!(
            closed_schema(&json!({"type": "object", "properties": {"a": {"type": "integer"}}})),
            Some(
                json!({"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": false})
            )
        );
    }
}
