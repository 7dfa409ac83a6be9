//! Inputs built from strings: a resource template's URI variables and a prompt's arguments
//! (MCP sends both as text), each read as the type the input schema gives its field.

use serde_json::{Map, Value};

/// The input object of `pairs`: a field whose schema is `integer`, `number` or `boolean`
/// (alone or beside `null`) gets the parsed value when the text parses, else the text (so
/// the input check names the field); every other field gets the text.
pub(crate) fn input_from_strings<I>(schema: &Value, pairs: I) -> Value
where
    I: IntoIterator<Item = (String, String)>,
{
    let properties = schema.get("properties");
    let object: Map<String, Value> = pairs
        .into_iter()
        .map(|(name, text)| {
            let kind = properties.and_then(|p| p.get(&name)).map(field_type);
            let value = match kind {
                Some(Some("integer")) => text.parse::<i64>().map(Value::from).ok(),
                Some(Some("number")) => text
                    .parse::<f64>()
                    .ok()
                    .and_then(|n| serde_json::Number::from_f64(n).map(Value::Number)),
                Some(Some("boolean")) => text.parse::<bool>().map(Value::Bool).ok(),
                _ => None,
            };
            (name, value.unwrap_or(Value::String(text)))
        })
        .collect();
    Value::Object(object)
}

/// A field schema's one non-null `type`, if it has one.
fn field_type(schema: &Value) -> Option<&str> {
    match schema.get("type")? {
        Value::String(kind) => Some(kind),
        Value::Array(kinds) => {
            let mut kinds = kinds
                .iter()
                .filter_map(Value::as_str)
                .filter(|k| *k != "null");
            let kind = kinds.next()?;
            kinds.next().is_none().then_some(kind)
        }
        _ => None,
    }
}

/// The fields of an input schema as MCP prompt arguments: `(name, description, required)`,
/// in the schema's order.
pub(crate) fn fields(schema: &Value) -> Vec<(String, Option<String>, bool)> {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|properties| {
            properties
                .iter()
                .map(|(name, field)| {
                    let description = field
                        .get("description")
                        .and_then(Value::as_str)
                        .map(str::to_owned);
                    (name.clone(), description, required.contains(&name.as_str()))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The values a field's schema allows, when it lists them (`enum`, or `const`s under
/// `oneOf`/`anyOf`), as text.
pub(crate) fn choices(schema: &Value, field: &str) -> Vec<String> {
    let Some(mut field) = schema.get("properties").and_then(|p| p.get(field)) else {
        return Vec::new();
    };
    // A field of a named type (`$ref` into `$defs`, as schemars writes an enum).
    if let Some(target) = field
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(opkit::schema::refs::definition_of)
        .and_then(|name| schema.get("$defs")?.get(&*name))
    {
        field = target;
    }
    let text = |value: &Value| match value {
        Value::String(text) => Some(text.clone()),
        Value::Null => None,
        other => Some(other.to_string()),
    };
    if let Some(values) = field.get("enum").and_then(Value::as_array) {
        return values.iter().filter_map(text).collect();
    }
    ["oneOf", "anyOf"]
        .iter()
        .filter_map(|key| field.get(*key).and_then(Value::as_array))
        .flatten()
        .filter_map(|variant| variant.get("const").and_then(text))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn strings_become_the_types_the_schema_names() {
        let schema = json!({"properties": {
            "id": {"type": "integer"}, "ratio": {"type": ["number", "null"]},
            "on": {"type": "boolean"}, "name": {"type": "string"}
        }, "required": ["id"]});
        let input = input_from_strings(
            &schema,
            [
                ("id", "7"),
                ("ratio", "0.5"),
                ("on", "true"),
                ("name", "7"),
                ("other", "x"),
            ]
            .map(|(k, v)| (k.to_owned(), v.to_owned())),
        );
        assert_eq!(
            input,
            json!({"id": 7, "ratio": 0.5, "on": true, "name": "7", "other": "x"})
        );
        let kept = input_from_strings(&schema, [("id".to_owned(), "seven".to_owned())]);
        assert_eq!(
            kept,
            json!({"id": "seven"}),
            "left for the input check to name"
        );
        assert_eq!(fields(&schema)[0], ("id".to_owned(), None, true));
    }

    #[test]
    fn choices_come_from_enums_and_consts() {
        let schema = json!({"properties": {
            "color": {"enum": ["red", "green", null]},
            "size": {"oneOf": [{"const": "s"}, {"const": "m"}]}
        }});
        assert_eq!(choices(&schema, "color"), ["red", "green"]);
        assert_eq!(choices(&schema, "size"), ["s", "m"]);
        assert!(choices(&schema, "none").is_empty());
        let named = json!({
            "properties": {"shelf": {"$ref": "#/$defs/Shelf"}},
            "$defs": {"Shelf": {"type": "string", "enum": ["Fiction", "History"]}}
        });
        assert_eq!(choices(&named, "shelf"), ["Fiction", "History"]);
    }
}
