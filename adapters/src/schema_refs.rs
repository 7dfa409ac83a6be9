//! Local `$ref`s of a JSON Schema: walking them and encoding pointer tokens. Shared by the
//! HTTP server (which moves schemas into an OpenAPI document and MCP output wrappers) and
//! the MCP import (which takes a schema back out of such a wrapper).

use serde_json::Value;

/// Keywords whose values are data, not schemas: never rewritten.
const DATA_KEYWORDS: [&str; 4] = ["const", "default", "enum", "examples"];

/// Calls `rewrite` on every `$ref` string of `schema` (skipping data keywords) and replaces
/// the reference when it returns `Some`.
pub(crate) fn rewrite_refs(schema: &mut Value, rewrite: &mut dyn FnMut(&str) -> Option<String>) {
    match schema {
        Value::Object(map) => {
            for (key, value) in map.iter_mut() {
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

/// Encodes a string as one JSON-pointer token.
pub(crate) fn encode_token(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}
