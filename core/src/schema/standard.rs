//! Standard JSON Schema from schemars' numeric formats.
//!
//! schemars marks Rust's number types with `format`s no JSON Schema vocabulary defines
//! (`uint8`, `int32`, `uint64`, `double`, ...). Validators that check formats (ajv, which
//! every TypeScript MCP host runs on each tool's schema) warn about each unknown one.
//! [`standard_formats`] drops them and keeps what they meant as `minimum`/`maximum`.
//!
//! A signed type's lower bound is not added (schemars states it for `i8` and `i16` itself):
//! opkit's [`cast`](super::cast) creates a missing number at its schema's `minimum` (as
//! TypeBox does), so an `i64` field it has to fill would become `-9223372036854775808`
//! instead of `0`.

use serde_json::{Map, Value};

/// The bounds a schemars numeric `format` stands for that are added: `Some((minimum,
/// maximum))`, either absent when the type has none a JSON number can state exactly (and
/// the minimum of signed types, see the module docs); `None` for any other format (a
/// standard one, or one this module does not know, which is kept).
fn numeric_format(format: &str) -> Option<(Option<Value>, Option<Value>)> {
    let signed = |max: i64| Some((None, Some(Value::from(max))));
    let unsigned = |max: u64| Some((Some(Value::from(0)), Some(Value::from(max))));
    match format {
        "int8" => signed(i8::MAX.into()),
        "int16" => signed(i16::MAX.into()),
        "int32" => signed(i32::MAX.into()),
        "int64" => signed(i64::MAX),
        // `isize`/`usize`, as wide as the pointers of the process that generated the schema.
        "int" => signed(isize::MAX as i64),
        "uint8" => unsigned(u8::MAX.into()),
        "uint16" => unsigned(u16::MAX.into()),
        "uint32" => unsigned(u32::MAX.into()),
        "uint64" => unsigned(u64::MAX),
        "uint" => unsigned(usize::MAX as u64),
        // 128-bit bounds are past what a JSON number holds exactly: only the sign.
        "uint128" => Some((Some(Value::from(0)), None)),
        "int128" | "float" | "double" => Some((None, None)),
        _ => None,
    }
}

/// Keywords whose value is one subschema.
const SCHEMA_KEYWORDS: &[&str] = &[
    "additionalItems",
    "additionalProperties",
    "contains",
    "else",
    "if",
    "items",
    "not",
    "propertyNames",
    "then",
    "unevaluatedItems",
    "unevaluatedProperties",
];

/// Keywords whose value is a list of subschemas.
const LIST_KEYWORDS: &[&str] = &["allOf", "anyOf", "oneOf", "prefixItems", "items"];

/// Keywords whose value maps names to subschemas.
const MAP_KEYWORDS: &[&str] = &[
    "$defs",
    "definitions",
    "dependentSchemas",
    "patternProperties",
    "properties",
];

/// Rewrites `schema` (and every subschema in it) into standard JSON Schema: each numeric
/// `format` schemars emits (`int8` … `int64`, `int`, `uint8` … `uint64`, `uint`, `int128`,
/// `uint128`, `float`, `double`) is removed, and the range it stood for is kept as
/// `minimum`/`maximum` where the schema does not already bound that side (for signed types
/// only the maximum: see the module docs). Standard formats
/// (`date-time`, `uuid`, ...) and unknown ones are kept; values that are data rather than
/// schemas (`const`, `enum`, `default`, `examples`) are left alone.
///
/// Every schema opkit generates from Rust types has been through it already.
///
/// ```
/// use serde_json::json;
/// let mut schema = json!({
///     "type": "object",
///     "properties": {
///         "small": {"type": "integer", "format": "uint8", "minimum": 0, "maximum": 255},
///         "count": {"type": "integer", "format": "uint32", "minimum": 0},
///         "ratio": {"type": "number", "format": "double"},
///         "at": {"type": "string", "format": "date-time"}
///     }
/// });
/// opkit::schema::standard_formats(&mut schema);
/// assert_eq!(schema["properties"]["small"], json!({"type": "integer", "minimum": 0, "maximum": 255}));
/// assert_eq!(schema["properties"]["count"], json!({"type": "integer", "minimum": 0, "maximum": 4294967295u32}));
/// assert_eq!(schema["properties"]["ratio"], json!({"type": "number"}));
/// assert_eq!(schema["properties"]["at"]["format"], "date-time");
/// ```
pub fn standard_formats(schema: &mut Value) {
    let Value::Object(keywords) = schema else {
        return;
    };
    standardize_object(keywords);
}

fn standardize_object(keywords: &mut Map<String, Value>) {
    let bounds = match keywords.get("format") {
        Some(Value::String(format)) => numeric_format(format),
        _ => None,
    };
    if let Some((minimum, maximum)) = bounds {
        keywords.remove("format");
        for (keyword, exclusive, bound) in [
            ("minimum", "exclusiveMinimum", minimum),
            ("maximum", "exclusiveMaximum", maximum),
        ] {
            if let Some(bound) = bound
                && !keywords.contains_key(keyword)
                && !keywords.contains_key(exclusive)
            {
                keywords.insert(keyword.to_owned(), bound);
            }
        }
    }
    for (keyword, value) in keywords.iter_mut() {
        let keyword = keyword.as_str();
        match value {
            Value::Object(sub) if SCHEMA_KEYWORDS.contains(&keyword) => standardize_object(sub),
            Value::Object(map) if MAP_KEYWORDS.contains(&keyword) => {
                for sub in map.values_mut() {
                    standard_formats(sub);
                }
            }
            Value::Array(list) if LIST_KEYWORDS.contains(&keyword) => {
                for sub in list {
                    standard_formats(sub);
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_numeric_format_becomes_bounds() {
        for (format, maximum) in [
            ("uint8", json!(255)),
            ("uint16", json!(65535)),
            ("uint32", json!(u32::MAX)),
            ("uint64", json!(u64::MAX)),
            ("uint", json!(usize::MAX)),
        ] {
            let mut schema = json!({"type": "integer", "format": format});
            standard_formats(&mut schema);
            assert_eq!(
                schema,
                json!({"type": "integer", "minimum": 0, "maximum": maximum}),
                "{format}"
            );
        }
        for (format, maximum) in [
            ("int8", json!(127)),
            ("int16", json!(32767)),
            ("int32", json!(i32::MAX)),
            ("int64", json!(i64::MAX)),
            ("int", json!(isize::MAX)),
        ] {
            let mut schema = json!({"type": "integer", "format": format});
            standard_formats(&mut schema);
            assert_eq!(
                schema,
                json!({"type": "integer", "maximum": maximum}),
                "{format}"
            );
        }
        // schemars' own bounds of `i8` stay.
        let mut schema =
            json!({"type": "integer", "format": "int8", "minimum": -128, "maximum": 127});
        standard_formats(&mut schema);
        assert_eq!(
            schema,
            json!({"type": "integer", "minimum": -128, "maximum": 127})
        );
        for format in ["float", "double", "int128"] {
            let mut schema = json!({"type": "number", "format": format});
            standard_formats(&mut schema);
            assert_eq!(schema, json!({"type": "number"}), "{format}");
        }
        let mut schema = json!({"type": "integer", "format": "uint128", "minimum": 0});
        standard_formats(&mut schema);
        assert_eq!(schema, json!({"type": "integer", "minimum": 0}));
    }

    #[test]
    fn tighter_bounds_and_other_formats_stay() {
        let mut schema = json!({"type": "integer", "format": "uint8", "maximum": 9});
        standard_formats(&mut schema);
        assert_eq!(
            schema,
            json!({"type": "integer", "minimum": 0, "maximum": 9})
        );
        let mut schema = json!({"type": "integer", "format": "uint32", "exclusiveMinimum": 0});
        standard_formats(&mut schema);
        assert_eq!(
            schema,
            json!({"type": "integer", "exclusiveMinimum": 0, "maximum": u32::MAX})
        );
        for format in ["date-time", "uuid", "ip", "binary"] {
            let mut schema = json!({"type": "string", "format": format});
            let before = schema.clone();
            standard_formats(&mut schema);
            assert_eq!(schema, before);
        }
    }

    #[test]
    fn subschemas_are_rewritten_and_data_is_not() {
        let mut schema = json!({
            "$defs": {"Id": {"type": "integer", "format": "uint64", "minimum": 0}},
            "properties": {
                "a": {"type": "array", "items": {"type": "integer", "format": "int8", "minimum": -128, "maximum": 127}},
                "b": {"anyOf": [{"type": "number", "format": "float"}, {"type": "null"}]},
                "c": {"prefixItems": [{"type": "integer", "format": "uint16"}]},
                "d": {"additionalProperties": {"type": "integer", "format": "int64"}},
                "format": {"type": "string"}
            },
            "default": {"format": "int64"},
            "examples": [{"format": "uint8"}],
            "const": {"format": "double"}
        });
        standard_formats(&mut schema);
        assert_eq!(
            schema["$defs"]["Id"],
            json!({"type": "integer", "minimum": 0, "maximum": u64::MAX})
        );
        assert_eq!(schema["properties"]["a"]["items"]["maximum"], 127);
        assert!(
            schema["properties"]["a"]["items"].get("format").is_none(),
            "{schema}"
        );
        assert_eq!(
            schema["properties"]["b"]["anyOf"][0],
            json!({"type": "number"})
        );
        assert_eq!(
            schema["properties"]["c"]["prefixItems"][0],
            json!({"type": "integer", "minimum": 0, "maximum": 65535})
        );
        assert_eq!(
            schema["properties"]["d"]["additionalProperties"]["maximum"],
            i64::MAX
        );
        assert_eq!(schema["properties"]["format"], json!({"type": "string"}));
        assert_eq!(schema["default"], json!({"format": "int64"}));
        assert_eq!(schema["examples"], json!([{"format": "uint8"}]));
        assert_eq!(schema["const"], json!({"format": "double"}));
    }
}
