//! Query parameters ⇄ input objects, for operations reachable by `GET`.
//!
//! An input schema can be spread over query parameters when its root is an object schema
//! with (optional) `properties` and no combinator (`allOf`, `anyOf`, `oneOf`, `not`,
//! `if`…) — see [`QueryShape::of`]. Each property becomes one parameter, in one of three
//! styles, used both to document the parameter in `/openapi.json` and to read it back:
//!
//! | property schema | style | wire | decoded as |
//! |---|---|---|---|
//! | primitive `type`s (`string`, `integer`, `number`, `boolean`, `null`), or an `enum`/`const` of primitives | scalar | `?a=2` | the first of integer, number, boolean, null (`null`, only without `string`), string that parses |
//! | `type: array` of primitives | array | `?a=1&a=2` (form, exploded) | an array, each item as above |
//! | anything else (objects, unions, unconstrained) | JSON | `?a=%7B%22x%22%3A1%7D` (`content: application/json`) | the JSON value |
//!
//! Parameters that match no property are kept as strings (so `additionalProperties: false`
//! rejects them with a normal validation error). Every value is then validated against the
//! input schema by the registry, as for a JSON body.

use super::refs::resolve_local;
use opkit::{CallError, Violation};
use serde_json::{Map, Value};

/// Root keywords that make an input schema impossible to spread over query parameters.
const COMBINATORS: [&str; 9] = [
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "if",
    "then",
    "else",
    "dependentSchemas",
    "patternProperties",
];

const PRIMITIVES: [&str; 5] = ["string", "integer", "number", "boolean", "null"];

/// How one property travels in the query string.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ParamStyle {
    /// One value, decoded by trying the listed primitive types in order.
    Scalar(Vec<String>),
    /// Repeated keys, each decoded as a scalar of the listed item types.
    Array(Vec<String>),
    /// One JSON-encoded value.
    Json,
}

/// One query parameter: a property of the input object.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct QueryParam {
    pub(crate) name: String,
    pub(crate) required: bool,
    pub(crate) style: ParamStyle,
    /// The property's schema as written (local refs relative to the input schema).
    pub(crate) schema: Value,
}

/// The query parameters of an operation's input.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct QueryShape {
    pub(crate) params: Vec<QueryParam>,
}

/// The primitive types a (resolved) schema allows, when it allows only primitives.
fn primitive_types(root: &Value, schema: &Value) -> Option<Vec<String>> {
    let schema = resolve_local(root, schema);
    let Value::Object(map) = schema else {
        return None;
    };
    let types: Vec<String> = match map.get("type") {
        Some(Value::String(one)) => vec![one.clone()],
        Some(Value::Array(many)) => many
            .iter()
            .map(|t| t.as_str().map(str::to_owned))
            .collect::<Option<Vec<_>>>()?,
        Some(_) => return None,
        None => {
            let values: Vec<&Value> = match (map.get("enum"), map.get("const")) {
                (Some(Value::Array(values)), _) => values.iter().collect(),
                (None, Some(value)) => vec![value],
                _ => return None,
            };
            let mut types: Vec<String> = Vec::new();
            for value in values {
                let name = match value {
                    Value::String(_) => "string",
                    Value::Bool(_) => "boolean",
                    Value::Null => "null",
                    Value::Number(number) if number.is_f64() => "number",
                    Value::Number(_) => "integer",
                    _ => return None,
                };
                if !types.iter().any(|t| t == name) {
                    types.push(name.to_owned());
                }
            }
            types
        }
    };
    let all_primitive = !types.is_empty() && types.iter().all(|t| PRIMITIVES.contains(&t.as_str()));
    all_primitive.then_some(types)
}

fn style_of(root: &Value, schema: &Value) -> ParamStyle {
    if let Some(types) = primitive_types(root, schema) {
        return ParamStyle::Scalar(types);
    }
    let resolved = resolve_local(root, schema);
    let is_array = match resolved.get("type") {
        Some(Value::String(kind)) => kind == "array",
        Some(Value::Array(kinds)) => kinds.len() == 1 && kinds[0] == "array",
        _ => false,
    };
    if is_array
        && resolved.get("prefixItems").is_none()
        && let Some(items) = resolved.get("items")
        && let Some(types) = primitive_types(root, items)
    {
        return ParamStyle::Array(types);
    }
    ParamStyle::Json
}

impl QueryShape {
    /// The query parameters of `input_schema`, or `None` when it cannot be spread over the
    /// query string.
    pub(crate) fn of(input_schema: &Value) -> Option<Self> {
        let root = resolve_local(input_schema, input_schema);
        let map = match root {
            Value::Bool(true) => return Some(Self { params: Vec::new() }),
            Value::Object(map) => map,
            _ => return None,
        };
        let object_typed = match map.get("type") {
            None => true,
            Some(Value::String(kind)) => kind == "object",
            Some(Value::Array(kinds)) => kinds.len() == 1 && kinds[0] == "object",
            Some(_) => false,
        };
        if !object_typed || COMBINATORS.iter().any(|keyword| map.contains_key(*keyword)) {
            return None;
        }
        let required: Vec<&str> = map
            .get("required")
            .and_then(Value::as_array)
            .map(|names| names.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut params = Vec::new();
        if let Some(Value::Object(properties)) = map.get("properties") {
            for (name, schema) in properties {
                params.push(QueryParam {
                    name: name.clone(),
                    required: required.contains(&name.as_str()),
                    style: style_of(input_schema, schema),
                    schema: schema.clone(),
                });
            }
        }
        Some(Self { params })
    }

    /// Builds the input object from `(name, value)` pairs of a query string.
    pub(crate) fn decode(&self, pairs: Vec<(String, String)>) -> Result<Value, CallError> {
        let mut grouped: Vec<(String, Vec<String>)> = Vec::new();
        for (name, value) in pairs {
            match grouped.iter_mut().find(|(known, _)| *known == name) {
                Some((_, values)) => values.push(value),
                None => grouped.push((name, vec![value])),
            }
        }
        let mut input = Map::new();
        let mut violations = Vec::new();
        for (name, values) in grouped {
            let pointer = format!("/{}", opkit::schema::pointer::escape(&name));
            let param = self.params.iter().find(|param| param.name == name);
            let decoded = match param.map(|param| &param.style) {
                Some(ParamStyle::Array(types)) => Ok(Value::Array(
                    values.iter().map(|value| scalar(value, types)).collect(),
                )),
                _ if values.len() > 1 => Err(format!(
                    "query parameter `{name}` is given {} times but takes one value",
                    values.len()
                )),
                Some(ParamStyle::Scalar(types)) => Ok(scalar(&values[0], types)),
                Some(ParamStyle::Json) => serde_json::from_str(&values[0])
                    .map_err(|error| format!("query parameter `{name}` must be JSON: {error}")),
                None => Ok(Value::String(values[0].clone())),
            };
            match decoded {
                Ok(value) => {
                    input.insert(name, value);
                }
                Err(message) => violations.push(Violation {
                    path: pointer,
                    message,
                }),
            }
        }
        if violations.is_empty() {
            Ok(Value::Object(input))
        } else {
            Err(CallError::validation("query string", violations))
        }
    }
}

/// Decodes one query value for a parameter of the given primitive types.
fn scalar(raw: &str, types: &[String]) -> Value {
    let allows = |name: &str| types.iter().any(|t| t == name);
    if (allows("integer") || allows("number"))
        && let Ok(Value::Number(number)) = serde_json::from_str::<Value>(raw)
    {
        let integral =
            number.is_i64() || number.is_u64() || number.as_f64().is_some_and(|f| f.fract() == 0.0);
        if allows("number") || integral {
            return Value::Number(number);
        }
    }
    if allows("boolean") {
        match raw {
            "true" => return Value::Bool(true),
            "false" => return Value::Bool(false),
            _ => {}
        }
    }
    if allows("null") && !allows("string") && raw == "null" {
        return Value::Null;
    }
    Value::String(raw.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn shapes_and_decoding() {
        let schema = json!({
            "type": "object",
            "properties": {
                "a": {"type": "integer"},
                "s": {"type": "string"},
                "n": {"type": ["number", "null"]},
                "b": {"type": "boolean"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "nums": {"type": "array", "items": {"$ref": "#/$defs/Num"}},
                "color": {"$ref": "#/$defs/Color"},
                "obj": {"type": "object"}
            },
            "required": ["a"],
            "$defs": {"Num": {"type": "integer"}, "Color": {"enum": ["red", "green"]}}
        });
        let shape = QueryShape::of(&schema).unwrap();
        let style = |name: &str| {
            shape
                .params
                .iter()
                .find(|p| p.name == name)
                .unwrap()
                .style
                .clone()
        };
        assert_eq!(style("a"), ParamStyle::Scalar(vec!["integer".into()]));
        assert_eq!(style("color"), ParamStyle::Scalar(vec!["string".into()]));
        assert_eq!(style("nums"), ParamStyle::Array(vec!["integer".into()]));
        assert_eq!(style("obj"), ParamStyle::Json);
        assert!(
            shape
                .params
                .iter()
                .find(|p| p.name == "a")
                .unwrap()
                .required
        );
        let input = shape
            .decode(pairs(&[
                ("a", "2"),
                ("s", "2"),
                ("n", "null"),
                ("b", "true"),
                ("tags", "x"),
                ("tags", "y"),
                ("nums", "1"),
                ("obj", r#"{"k":1}"#),
                ("extra", "e"),
            ]))
            .unwrap();
        assert_eq!(
            input,
            json!({"a": 2, "s": "2", "n": null, "b": true, "tags": ["x", "y"], "nums": [1],
                   "obj": {"k": 1}, "extra": "e"})
        );
        let error = shape
            .decode(pairs(&[("a", "1"), ("a", "2"), ("obj", "{")]))
            .unwrap_err();
        assert_eq!(error.code, opkit::ErrorCode::ValidationError);
        assert_eq!(error.details.unwrap().as_array().unwrap().len(), 2);
        // A non-number stays a string: the schema then rejects it.
        assert_eq!(
            shape.decode(pairs(&[("a", "x")])).unwrap(),
            json!({"a": "x"})
        );
    }

    #[test]
    fn unspreadable_inputs() {
        assert!(QueryShape::of(&json!({"oneOf": [{"type": "object"}]})).is_none());
        assert!(QueryShape::of(&json!({"type": "integer"})).is_none());
        assert_eq!(QueryShape::of(&json!(true)).unwrap().params, vec![]);
        assert_eq!(
            QueryShape::of(&json!({"type": "object"})).unwrap().params,
            vec![]
        );
    }
}
