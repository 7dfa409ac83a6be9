//! Moving JSON Schemas between documents: rewriting local `$ref`s and hoisting `$defs`.
//!
//! An operation's schemas are standalone 2020-12 documents whose local references
//! (`#/$defs/Foo`, `#`) point into themselves. Placed inside another document (an OpenAPI
//! `components/schemas` entry, or the `result` property of an MCP output wrapper) those
//! references would point at the wrong place, so they are rewritten here.

use opkit::schema::pointer;
pub(crate) use opkit::schema::refs::rewrite_refs;
use serde_json::{Map, Value};

/// Decodes one JSON-pointer token of a URI fragment (`%xx`, then `~1`, `~0`).
pub(crate) fn decode_token(token: &str) -> String {
    let bytes = token.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index] == b'%'
            && let (Some(high), Some(low)) = (
                bytes.get(index + 1).and_then(|b| (*b as char).to_digit(16)),
                bytes.get(index + 2).and_then(|b| (*b as char).to_digit(16)),
            )
        {
            decoded.push(u8::try_from(high * 16 + low).unwrap_or(b'?'));
            index += 3;
            continue;
        }
        decoded.push(bytes[index]);
        index += 1;
    }
    pointer::unescape(&String::from_utf8_lossy(&decoded)).into_owned()
}

/// A local reference split into its definitions section and name (`#/$defs/Foo/rest` gives
/// `Some(("Foo", "/rest"))`), for both `$defs` and draft-07 `definitions`.
fn split_def_ref(reference: &str) -> Option<(String, &str)> {
    let pointer = reference.strip_prefix('#')?;
    let rest = pointer
        .strip_prefix("/$defs/")
        .or_else(|| pointer.strip_prefix("/definitions/"))?;
    let (name, tail) = match rest.find('/') {
        Some(slash) => (&rest[..slash], &rest[slash..]),
        None => (rest, ""),
    };
    Some((decode_token(name), tail))
}

/// Turns any text into a valid OpenAPI component key (`^[a-zA-Z0-9._-]+$`).
pub(crate) fn component_key(text: &str) -> String {
    let key: String = text
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if key.is_empty() { "_".to_owned() } else { key }
}

/// Takes the definitions (`$defs` and `definitions`) out of a schema's root.
fn take_defs(schema: &mut Value) -> Vec<(String, Value)> {
    let mut defs = Vec::new();
    if let Value::Object(map) = schema {
        for section in ["$defs", "definitions"] {
            if let Some(Value::Object(entries)) = map.remove(section) {
                defs.extend(entries);
            }
        }
    }
    defs
}

/// Adds a standalone schema to an OpenAPI `components/schemas` map under `key`, and its
/// definitions under `{defs_prefix}{name}`; every local `$ref` is rewritten to point into
/// `#/components/schemas`. The root `$schema` and `$id` are dropped. Returns the reference
/// object `{"$ref": "#/components/schemas/<key>"}`.
pub(crate) fn add_component(
    components: &mut Map<String, Value>,
    key: &str,
    defs_prefix: &str,
    schema: &Value,
) -> Value {
    let mut schema = match schema {
        Value::Bool(true) => Value::Object(Map::new()),
        other => other.clone(),
    };
    if let Value::Object(map) = &mut schema {
        map.remove("$schema");
        map.remove("$id");
    }
    let defs = take_defs(&mut schema);
    let mut rewrite = component_rewriter(key, defs_prefix);
    rewrite_refs(&mut schema, &mut rewrite);
    for (name, mut def) in defs {
        rewrite_refs(&mut def, &mut rewrite);
        components.insert(component_key(&format!("{defs_prefix}{name}")), def);
    }
    components.insert(key.to_owned(), schema);
    serde_json::json!({ "$ref": format!("#/components/schemas/{}", pointer::escape(key)) })
}

/// The reference rewriting of [`add_component`]: a local `$ref` of the schema stored under
/// `key` (with definitions under `{defs_prefix}{name}`) becomes a `#/components/schemas` one.
pub(crate) fn component_rewriter<'a>(
    key: &'a str,
    defs_prefix: &'a str,
) -> impl FnMut(&str) -> Option<String> + 'a {
    move |reference: &str| {
        if let Some((name, tail)) = split_def_ref(reference) {
            let def_key = component_key(&format!("{defs_prefix}{name}"));
            return Some(format!(
                "#/components/schemas/{}{tail}",
                pointer::escape(&def_key)
            ));
        }
        let pointer = reference.strip_prefix('#')?;
        Some(format!(
            "#/components/schemas/{}{pointer}",
            pointer::escape(key)
        ))
    }
}

/// Places a standalone schema under `pointer` (e.g. `/properties/result`) of a new root:
/// its definitions move to the root's `$defs` (returned) and every other local `$ref` is
/// prefixed with `pointer`. `$defs` references keep working because the root holds them.
#[cfg(any(feature = "mcp-server", test))]
pub(crate) fn nest_schema(schema: &Value, pointer: &str) -> (Value, Map<String, Value>) {
    let mut schema = schema.clone();
    if let Value::Object(map) = &mut schema {
        map.remove("$schema");
        map.remove("$id");
    }
    let defs = take_defs(&mut schema);
    let mut rewrite = |reference: &str| -> Option<String> {
        if let Some((name, tail)) = split_def_ref(reference) {
            return Some(format!("#/$defs/{}{tail}", pointer::escape(&name)));
        }
        let rest = reference.strip_prefix('#')?;
        Some(format!("#{pointer}{rest}"))
    };
    rewrite_refs(&mut schema, &mut rewrite);
    let mut hoisted = Map::new();
    for (name, mut def) in defs {
        rewrite_refs(&mut def, &mut rewrite);
        hoisted.insert(name, def);
    }
    (schema, hoisted)
}

/// Resolves a local `$ref` (`#/...`) against `root`; follows chains a bounded number of times.
pub(crate) fn resolve_local<'a>(root: &'a Value, schema: &'a Value) -> &'a Value {
    let mut current = schema;
    for _ in 0..16 {
        let Some(reference) = current.get("$ref").and_then(Value::as_str) else {
            return current;
        };
        let Some(pointer) = reference.strip_prefix('#') else {
            return current;
        };
        let pointer: String = pointer
            .split('/')
            .map(|token| pointer::escape(&decode_token(token)).into_owned())
            .collect::<Vec<_>>()
            .join("/");
        match root.pointer(&pointer) {
            Some(target) => current = target,
            None => return current,
        }
    }
    current
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn components_get_defs_and_rewritten_refs() {
        let schema = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {
                "user": {"$ref": "#/$defs/User"},
                "self": {"$ref": "#"},
                "old": {"$ref": "#/definitions/Old"},
                "fixed": {"const": {"$ref": "#/$defs/User"}}
            },
            "$defs": {"User": {"type": "object", "properties": {"friend": {"$ref": "#/$defs/User"}}}},
            "definitions": {"Old": {"type": "string"}}
        });
        let mut components = Map::new();
        let reference = add_component(&mut components, "a.b.Input", "a.b.Input.", &schema);
        assert_eq!(reference, json!({"$ref": "#/components/schemas/a.b.Input"}));
        let root = &components["a.b.Input"];
        assert!(root.get("$schema").is_none() && root.get("$defs").is_none());
        assert_eq!(
            root["properties"]["user"]["$ref"],
            "#/components/schemas/a.b.Input.User"
        );
        assert_eq!(
            root["properties"]["self"]["$ref"],
            "#/components/schemas/a.b.Input"
        );
        assert_eq!(
            root["properties"]["old"]["$ref"],
            "#/components/schemas/a.b.Input.Old"
        );
        assert_eq!(root["properties"]["fixed"]["const"]["$ref"], "#/$defs/User");
        assert_eq!(
            components["a.b.Input.User"]["properties"]["friend"]["$ref"],
            "#/components/schemas/a.b.Input.User"
        );
    }

    #[test]
    fn nesting_hoists_defs_and_prefixes_other_refs() {
        let schema = json!({
            "type": "array",
            "items": {"$ref": "#/$defs/Item"},
            "$defs": {"Item": {"type": "object", "properties": {"more": {"$ref": "#"}}}}
        });
        let (nested, defs) = nest_schema(&schema, "/properties/result");
        assert_eq!(nested["items"]["$ref"], "#/$defs/Item");
        assert_eq!(
            defs["Item"]["properties"]["more"]["$ref"],
            "#/properties/result"
        );
        assert!(nested.get("$defs").is_none());
    }

    #[test]
    fn local_refs_resolve() {
        let root = json!({"properties": {"a": {"$ref": "#/$defs/A"}}, "$defs": {"A": {"type": "integer"}}});
        assert_eq!(
            resolve_local(&root, &root["properties"]["a"]),
            &json!({"type": "integer"})
        );
        assert_eq!(decode_token("a~1b%7E0"), "a/b~");
    }
}
