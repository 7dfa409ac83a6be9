//! OpenAPI 3.0 schema dialect → JSON Schema 2020-12, so one validator serves every version.
//!
//! Applied to each schema object of a 3.0 document (the walk over subschemas is done by the
//! [ref resolver](super::refs)):
//!
//! | 3.0 | 2020-12 |
//! |---|---|
//! | `nullable: true` with `type: T` | `type: [T, "null"]` (and `null` added to an `enum`) |
//! | `nullable: true` without `type` (next to `$ref`, `allOf`, ...) | `anyOf: [<the schema>, {type: null}]` — the spec says it has no effect, but generators emit it meaning "or null" |
//! | `exclusiveMinimum: true` + `minimum: m` | `exclusiveMinimum: m` (`false` is dropped); same for maximum |
//! | `example: v` | `examples: [v]` |
//! | `format: binary` | `contentMediaType: application/octet-stream` (format kept) |
//! | `format: byte` | `contentEncoding: base64` (format kept) |
//!
//! Everything else (`discriminator`, `xml`, `x-*`, `readOnly`, ...) is kept: 2020-12
//! validators ignore unknown keywords.

use serde_json::{Map, Value, json};

/// Converts one 3.0 schema object in place (not its subschemas). Returns the schema to use:
/// usually the same object, or an `anyOf` wrapper for a type-less `nullable`.
pub(crate) fn convert_30_node(mut map: Map<String, Value>) -> Value {
    exclusive_bound(&mut map, "exclusiveMinimum", "minimum");
    exclusive_bound(&mut map, "exclusiveMaximum", "maximum");
    if let Some(example) = map.remove("example")
        && !map.contains_key("examples")
    {
        map.insert("examples".into(), Value::Array(vec![example]));
    }
    match map.get("format").and_then(Value::as_str) {
        Some("binary") if !map.contains_key("contentMediaType") => {
            map.insert("contentMediaType".into(), json!("application/octet-stream"));
        }
        Some("byte") if !map.contains_key("contentEncoding") => {
            map.insert("contentEncoding".into(), json!("base64"));
        }
        _ => {}
    }
    let nullable = matches!(map.remove("nullable"), Some(Value::Bool(true)));
    if !nullable {
        return Value::Object(map);
    }
    match map.get_mut("type") {
        Some(Value::String(name)) => {
            let name = std::mem::take(name);
            map.insert("type".into(), json!([name, "null"]));
            if let Some(Value::Array(members)) = map.get_mut("enum")
                && !members.contains(&Value::Null)
            {
                members.push(Value::Null);
            }
            Value::Object(map)
        }
        Some(Value::Array(names)) => {
            if !names.iter().any(|name| name == "null") {
                names.push(json!("null"));
            }
            Value::Object(map)
        }
        _ => json!({"anyOf": [Value::Object(map), {"type": "null"}]}),
    }
}

/// 3.1+ schemas are 2020-12 already; only the draft-04 boolean `exclusiveMinimum` /
/// `exclusiveMaximum` (allowed by a `jsonSchemaDialect` of draft-04, and never valid in
/// 2020-12) is rewritten to the numeric form.
pub(crate) fn convert_31_node(mut map: Map<String, Value>) -> Value {
    exclusive_bound(&mut map, "exclusiveMinimum", "minimum");
    exclusive_bound(&mut map, "exclusiveMaximum", "maximum");
    Value::Object(map)
}

fn exclusive_bound(map: &mut Map<String, Value>, exclusive: &str, bound: &str) {
    match map.get(exclusive) {
        Some(Value::Bool(true)) => match map.remove(bound) {
            Some(value @ Value::Number(_)) => {
                map.insert(exclusive.into(), value);
            }
            _ => {
                map.remove(exclusive);
            }
        },
        Some(Value::Bool(false)) => {
            map.remove(exclusive);
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn convert(value: Value) -> Value {
        match value {
            Value::Object(map) => convert_30_node(map),
            other => other,
        }
    }

    #[test]
    fn nullable_becomes_a_null_type() {
        assert_eq!(
            convert(json!({"type": "string", "nullable": true})),
            json!({"type": ["string", "null"]})
        );
        assert_eq!(
            convert(json!({"type": "string", "enum": ["a"], "nullable": true})),
            json!({"type": ["string", "null"], "enum": ["a", null]})
        );
        assert_eq!(
            convert(json!({"type": "integer", "nullable": false})),
            json!({"type": "integer"})
        );
        assert_eq!(
            convert(json!({"allOf": [{"$ref": "#/x"}], "nullable": true})),
            json!({"anyOf": [{"allOf": [{"$ref": "#/x"}]}, {"type": "null"}]})
        );
    }

    #[test]
    fn boolean_exclusive_bounds_become_numbers() {
        assert_eq!(
            convert(
                json!({"type": "number", "minimum": 0, "exclusiveMinimum": true, "maximum": 10, "exclusiveMaximum": false})
            ),
            json!({"type": "number", "exclusiveMinimum": 0, "maximum": 10})
        );
        assert_eq!(
            convert(json!({"maximum": 5, "exclusiveMaximum": true})),
            json!({"exclusiveMaximum": 5})
        );
        // A dangling `exclusiveMinimum: true` without `minimum` means nothing.
        assert_eq!(convert(json!({"exclusiveMinimum": true})), json!({}));
    }

    #[test]
    fn draft_04_bounds_in_3_1_documents() {
        assert_eq!(
            convert_31_node(
                json!({"minimum": 1, "exclusiveMinimum": true, "example": 2})
                    .as_object()
                    .unwrap()
                    .clone()
            ),
            json!({"exclusiveMinimum": 1, "example": 2})
        );
    }

    #[test]
    fn example_and_binary_formats() {
        assert_eq!(
            convert(json!({"type": "string", "example": "x"})),
            json!({"type": "string", "examples": ["x"]})
        );
        assert_eq!(
            convert(json!({"type": "string", "format": "binary"})),
            json!({"type": "string", "format": "binary", "contentMediaType": "application/octet-stream"})
        );
        assert_eq!(
            convert(json!({"type": "string", "format": "byte"})),
            json!({"type": "string", "format": "byte", "contentEncoding": "base64"})
        );
    }

    #[test]
    fn converted_schemas_validate_with_the_2020_12_validator() {
        let schema = convert(
            json!({"type": "integer", "minimum": 1, "exclusiveMinimum": true, "nullable": true}),
        );
        let compiled = opkit::schema::CompiledSchema::compile(&schema).unwrap();
        assert!(compiled.is_valid(&json!(2)));
        assert!(compiled.is_valid(&json!(null)));
        assert!(!compiled.is_valid(&json!(1)));
    }
}
