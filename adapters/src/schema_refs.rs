//! Local `$ref`s of a JSON Schema: walking them and encoding pointer tokens. Shared by the
//! HTTP server (which moves schemas into an OpenAPI document and MCP output wrappers) and
//! the MCP import (which takes a schema back out of such a wrapper).

use serde_json::Value;

/// Keywords whose values are data, not schemas: never rewritten.
const DATA_KEYWORDS: [&str; 4] = ["const", "default", "enum", "examples"];

/// Keywords whose value maps names (of properties, patterns, definitions) to schemas: those
/// names are not keywords (a property may be called `default` or `enum`).
const NAME_MAPS: [&str; 5] = [
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
];

/// Calls `rewrite` on every `$ref` string of `schema` (skipping data keywords) and replaces
/// the reference when it returns `Some`.
pub(crate) fn rewrite_refs(schema: &mut Value, rewrite: &mut dyn FnMut(&str) -> Option<String>) {
    match schema {
        Value::Object(map) => {
            for (key, value) in map.iter_mut() {
                if NAME_MAPS.contains(&key.as_str())
                    && let Value::Object(named) = value
                {
                    for schema in named.values_mut() {
                        rewrite_refs(schema, rewrite);
                    }
                    continue;
                }
                if DATA_KEYWORDS.contains(&key.as_str()) {
                    continue;
                }
                if key == "$ref" {
                    if let Value::String(reference) = value
                        && let Some(new) = rewrite(reference)
                    {
                        *reference = new;
                    }
                    continue;
                }
                rewrite_refs(value, rewrite);
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
    fn properties_named_like_data_keywords_are_rewritten() {
        let mut schema = json!({"properties": {
            "default": {"$ref": "#/$defs/A"},
            "enum": {"items": {"$ref": "#/$defs/A"}}
        }, "default": {"$ref": "#/$defs/A"}});
        rewrite_refs(&mut schema, &mut |_| Some("#/x".to_owned()));
        assert_eq!(schema["properties"]["default"]["$ref"], "#/x");
        assert_eq!(schema["properties"]["enum"]["items"]["$ref"], "#/x");
        assert_eq!(schema["default"]["$ref"], "#/$defs/A", "data is left alone");
    }
}
