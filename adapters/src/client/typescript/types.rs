//! TypeScript types from JSON Schemas (2020-12, as opkit's operations carry them): one type
//! expression per schema, and a named alias per `$defs` entry, shared between operations
//! whose definitions are the same.
//!
//! | schema | TypeScript |
//! |---|---|
//! | `true`, `{}` | `unknown` |
//! | `false` | `never` |
//! | `"type": "string"` (`format`, `contentEncoding: base64` bytes included) | `string` |
//! | `"type": "integer"`, `"number"` | `number` (an integer's bounds in a doc comment) |
//! | `"type": "boolean"`, `"null"` | `boolean`, `null` |
//! | `"type": [a, b]` | `A \| B` |
//! | `const`, `enum` of JSON primitives | literal types, a union of them |
//! | `"type": "array"`, `items` / `prefixItems` | `Array<T>` / `[A, B, ...Array<T>]` |
//! | `"type": "object"`, `properties`, `required` | `{ a: A; b?: B }` (closed: its declared properties) |
//! | `additionalProperties: <schema>` | `{ [key: string]: T }` beside the properties |
//! | `additionalProperties: true`, or an object with no `properties` | `{ [key: string]: unknown }` beside them |
//! | `anyOf`, `oneOf` | a union; `allOf`: an intersection |
//! | `$ref` to a definition | the definition's alias |
//!
//! What does not map is written as `unknown` (or as the part that maps) and named in
//! [`TypeWriter::unmapped`]: `enum`s of objects or arrays, `not`, `if`/`then`/`else`,
//! `dependentSchemas`, `patternProperties`, references outside the schema's own `$defs`.
//! Bounds, patterns and formats are not types: they stay JSON Schema's, in doc comments.

use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};

/// Writes type expressions and the aliases they name.
pub(crate) struct TypeWriter {
    /// Alias name → its doc comment and its definition (a type expression).
    aliases: BTreeMap<String, (String, String)>,
    /// A definition's JSON (with its own references) → the alias it got.
    named: BTreeMap<String, String>,
    /// Names the aliases must not take (the module's own).
    reserved: BTreeSet<String>,
    /// What did not map, each once.
    unmapped: BTreeSet<String>,
    /// Whether object and array keywords without `type` make an object or array type.
    infer: bool,
}

impl Default for TypeWriter {
    fn default() -> Self {
        Self {
            aliases: BTreeMap::new(),
            named: BTreeMap::new(),
            reserved: BTreeSet::new(),
            unmapped: BTreeSet::new(),
            infer: true,
        }
    }
}

/// Where a schema sits: the alias of its root (for `$ref: "#"`) and its definitions'.
struct Scope {
    root_alias: String,
    /// This scope's definitions' aliases, by definition name.
    local: BTreeMap<String, String>,
}

impl TypeWriter {
    /// A writer that reads a schema without `type` as JSON Schema does: its object and
    /// array keywords constrain objects and arrays, and any other value is valid.
    pub(crate) fn strict() -> Self {
        Self {
            infer: false,
            ..Self::default()
        }
    }

    /// Keeps `name` from being an alias.
    pub(crate) fn reserve(&mut self, name: &str) {
        self.reserved.insert(name.to_owned());
    }

    /// `true` when `name` is reserved or an alias.
    pub(crate) fn is_taken(&self, name: &str) -> bool {
        self.reserved.contains(name) || self.named.values().any(|alias| alias == name)
    }

    /// `true` when `name` is an alias written by this writer.
    pub(crate) fn is_alias(&self, name: &str) -> bool {
        self.aliases.contains_key(name)
    }

    /// What did not map since the last call, taken.
    pub(crate) fn take_unmapped(&mut self) -> BTreeSet<String> {
        std::mem::take(&mut self.unmapped)
    }

    /// The type of `schema`, a whole (self-contained) schema whose alias will be `alias`:
    /// its definitions become aliases (named after them, or `prefix` + name when another
    /// definition took the name). A root that is a named object or choice (with a `title`,
    /// as a Rust type's schema has) becomes an alias too, shared with the same definition
    /// elsewhere, and the type is its name.
    pub(crate) fn root(&mut self, schema: &Value, alias: &str, prefix: &str) -> String {
        let defs = schema
            .get("$defs")
            .or_else(|| schema.get("definitions"))
            .and_then(Value::as_object);
        let title = schema
            .get("title")
            .and_then(Value::as_str)
            .filter(|_| is_named_shape(schema));
        let body = definition_body(schema);
        let root_alias = match title {
            Some(title) => self.alias_for(title, &body, prefix),
            None => alias.to_owned(),
        };
        let mut scope = Scope {
            root_alias,
            local: BTreeMap::new(),
        };
        if let Some(defs) = defs {
            // Names first, so that definitions may refer to each other in any order.
            for (name, definition) in defs {
                let alias = self.alias_for(name, definition, prefix);
                scope.local.insert(name.clone(), alias);
            }
            for (name, definition) in defs {
                let alias = scope.local[name].clone();
                self.define(&alias, definition, &scope);
            }
        }
        if title.is_some() {
            let alias = scope.root_alias.clone();
            self.define(&alias, &body, &scope);
            return alias;
        }
        self.type_of(schema, &scope, 0)
    }

    /// Writes the alias `alias` of `definition`, unless it is written already.
    fn define(&mut self, alias: &str, definition: &Value, scope: &Scope) {
        if self.aliases.contains_key(alias) {
            return;
        }
        // Claimed before writing, so a definition that refers to itself ends.
        self.aliases
            .insert(alias.to_owned(), (String::new(), "unknown".to_owned()));
        let text = self.type_of(definition, scope, 0);
        self.aliases
            .insert(alias.to_owned(), (doc_comment(definition), text));
    }

    /// Every alias, sorted by name: `(name, doc comment, type expression)`.
    pub(crate) fn aliases(&self) -> impl Iterator<Item = (&str, &str, &str)> {
        self.aliases
            .iter()
            .map(|(name, (doc, ty))| (name.as_str(), doc.as_str(), ty.as_str()))
    }

    /// What did not map.
    #[cfg(test)]
    pub(crate) fn unmapped(&self) -> &BTreeSet<String> {
        &self.unmapped
    }

    /// The alias a definition `name` gets: its own name, unless a different definition
    /// already has it.
    fn alias_for(&mut self, name: &str, definition: &Value, prefix: &str) -> String {
        let key = format!("{name}\u{0}{}", definition_body(definition));
        if let Some(alias) = self.named.get(&key) {
            return alias.clone();
        }
        let base = pascal(name);
        let mut alias = base.clone();
        if self.is_taken(&alias) {
            alias = format!("{prefix}{base}");
            let mut n = 2;
            while self.is_taken(&alias) {
                alias = format!("{prefix}{base}{n}");
                n += 1;
            }
        }
        self.named.insert(key, alias.clone());
        alias
    }

    fn type_of(&mut self, schema: &Value, scope: &Scope, depth: usize) -> String {
        let fields = match schema {
            Value::Bool(true) => return "unknown".to_owned(),
            Value::Bool(false) => return "never".to_owned(),
            Value::Object(fields) => fields,
            _ => return "unknown".to_owned(),
        };
        if depth > 64 {
            self.unmapped
                .insert("schemas nested deeper than 64 levels".to_owned());
            return "unknown".to_owned();
        }
        for keyword in ["not", "if", "dependentSchemas", "patternProperties"] {
            if fields.contains_key(keyword) {
                self.unmapped.insert(format!("`{keyword}`"));
            }
        }
        let mut parts = Vec::new();
        if let Some(reference) = fields.get("$ref").and_then(Value::as_str) {
            parts.push(self.reference(reference, scope));
        }
        if let Some(constant) = fields.get("const") {
            parts.push(self.literal(constant));
        } else if let Some(Value::Array(values)) = fields.get("enum") {
            let literals: Vec<String> = values.iter().map(|value| self.literal(value)).collect();
            parts.push(union(literals));
        } else if let Some(base) = self.by_type(fields, scope, depth) {
            // OpenAPI 3.0's `nullable`, in documents imported as they are.
            if fields.get("nullable") == Some(&Value::Bool(true)) {
                parts.push(union(vec![base, "null".to_owned()]));
            } else {
                parts.push(base);
            }
        }
        for (keyword, join) in [("anyOf", " | "), ("oneOf", " | "), ("allOf", " & ")] {
            if let Some(Value::Array(branches)) = fields.get(keyword) {
                let types: Vec<String> = branches
                    .iter()
                    .map(|branch| self.type_of(branch, scope, depth + 1))
                    .collect();
                if !types.is_empty() {
                    parts.push(format!("({})", types.join(join)));
                }
            }
        }
        match parts.len() {
            0 => "unknown".to_owned(),
            1 => parts.remove(0),
            _ => parts.join(" & "),
        }
    }

    /// The type `type` (or the keywords that imply one) says; `None` when nothing does.
    fn by_type(
        &mut self,
        fields: &Map<String, Value>,
        scope: &Scope,
        depth: usize,
    ) -> Option<String> {
        let types: Vec<&str> = match fields.get("type") {
            Some(Value::String(kind)) => vec![kind.as_str()],
            Some(Value::Array(kinds)) => kinds.iter().filter_map(Value::as_str).collect(),
            _ if !self.infer => return None,
            _ if fields.contains_key("properties")
                || fields.contains_key("additionalProperties") =>
            {
                vec!["object"]
            }
            _ if fields.contains_key("items") || fields.contains_key("prefixItems") => {
                vec!["array"]
            }
            _ => return None,
        };
        let mapped: Vec<String> = types
            .iter()
            .map(|kind| match *kind {
                "string" => "string".to_owned(),
                "integer" | "number" => "number".to_owned(),
                "boolean" => "boolean".to_owned(),
                "null" => "null".to_owned(),
                "array" => self.array(fields, scope, depth),
                "object" => self.object(fields, scope, depth),
                _ => "unknown".to_owned(),
            })
            .collect();
        Some(union(mapped))
    }

    fn array(&mut self, fields: &Map<String, Value>, scope: &Scope, depth: usize) -> String {
        let rest = match fields.get("items") {
            Some(Value::Bool(false)) => None,
            Some(items) => Some(self.type_of(items, scope, depth + 1)),
            None => Some("unknown".to_owned()),
        };
        match fields.get("prefixItems").and_then(Value::as_array) {
            Some(prefix) => {
                // The first `minItems` are there in every valid array; the rest may not be.
                let present = fields
                    .get("minItems")
                    .and_then(Value::as_u64)
                    .map_or(0, |min| usize::try_from(min).unwrap_or(usize::MAX));
                let mut members: Vec<String> = prefix
                    .iter()
                    .enumerate()
                    .map(|(index, item)| {
                        let mark = if index < present { "" } else { "?" };
                        format!("{}{mark}", self.type_of(item, scope, depth + 1))
                    })
                    .collect();
                // `maxItems` can end the array where the prefix ends (a Rust tuple's schema).
                let max = fields
                    .get("maxItems")
                    .and_then(Value::as_u64)
                    .map(|max| usize::try_from(max).unwrap_or(usize::MAX));
                if let Some(max) = max {
                    members.truncate(max);
                }
                match rest {
                    Some(rest) if max.is_none_or(|max| max > prefix.len()) => {
                        members.push(format!("...Array<{rest}>"));
                    }
                    _ => {}
                }
                format!("[{}]", members.join(", "))
            }
            None => format!("Array<{}>", rest.unwrap_or_else(|| "never".to_owned())),
        }
    }

    fn object(&mut self, fields: &Map<String, Value>, scope: &Scope, depth: usize) -> String {
        let required: BTreeSet<&str> = fields
            .get("required")
            .and_then(Value::as_array)
            .map(|names| names.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let properties = fields.get("properties").and_then(Value::as_object);
        let mut members = Vec::new();
        // The types an index signature beside the properties must admit.
        let mut member_types = Vec::new();
        for (name, property) in properties.into_iter().flatten() {
            let optional = !required.contains(name.as_str());
            let doc = doc_comment(property);
            let ty = self.type_of(property, scope, depth + 1);
            let mark = if optional { "?" } else { "" };
            members.push(format!("{doc}{}{mark}: {ty};", key(name)));
            member_types.push(ty);
            if optional {
                member_types.push("undefined".to_owned());
            }
        }
        let extra = match fields.get("additionalProperties") {
            // Keys matching a pattern are not additional: their type is not written.
            _ if fields.contains_key("patternProperties") => Some("unknown".to_owned()),
            Some(Value::Bool(false)) => None,
            Some(Value::Bool(true)) => Some("unknown".to_owned()),
            Some(schema) => Some(self.type_of(schema, scope, depth + 1)),
            None if properties.is_none_or(Map::is_empty) => Some("unknown".to_owned()),
            None => None,
        };
        if let Some(values) = extra {
            // An index signature covers the declared properties too, so it admits their types.
            member_types.push(values);
            let values = if member_types.iter().any(|ty| ty == "unknown") {
                "unknown".to_owned()
            } else {
                union(member_types)
            };
            members.push(format!("[key: string]: {values};"));
        }
        if members.is_empty() {
            return "{}".to_owned();
        }
        let members: Vec<String> = members.iter().map(|member| indent(member)).collect();
        format!("{{\n  {}\n}}", members.join("\n  "))
    }

    fn reference(&mut self, reference: &str, scope: &Scope) -> String {
        if reference == "#" {
            return scope.root_alias.clone();
        }
        let name = reference
            .strip_prefix("#/$defs/")
            .or_else(|| reference.strip_prefix("#/definitions/"))
            .map(|name| name.replace("~1", "/").replace("~0", "~"));
        match name.and_then(|name| scope.local.get(&name).cloned()) {
            Some(alias) => alias,
            None => {
                self.unmapped.insert(format!(
                    "references outside the schema's `$defs` (`{reference}`)"
                ));
                "unknown".to_owned()
            }
        }
    }

    /// A JSON primitive as a literal type; `unknown` for an object or array.
    fn literal(&mut self, value: &Value) -> String {
        match value {
            Value::Object(_) | Value::Array(_) => {
                self.unmapped
                    .insert("`enum` and `const` values that are objects or arrays".to_owned());
                "unknown".to_owned()
            }
            primitive => primitive.to_string(),
        }
    }
}

/// A definition as its alias shows it: without its own `title`, `$schema` and `$defs`.
fn definition_body(schema: &Value) -> Value {
    match schema {
        Value::Object(fields) => Value::Object(
            fields
                .iter()
                .filter(|(key, _)| {
                    !matches!(key.as_str(), "title" | "$schema" | "$defs" | "definitions")
                })
                .map(|(key, value)| (key.clone(), value.clone()))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// `true` for a schema worth its own name: an object with properties, or a choice.
fn is_named_shape(schema: &Value) -> bool {
    ["properties", "oneOf", "anyOf", "enum"]
        .iter()
        .any(|keyword| schema.get(*keyword).is_some())
}

/// `A | B`, each once, in order.
fn union(types: Vec<String>) -> String {
    let mut seen = BTreeSet::new();
    let types: Vec<String> = types
        .into_iter()
        .filter(|ty| seen.insert(ty.clone()))
        .collect();
    match types.len() {
        0 => "never".to_owned(),
        1 => types.into_iter().next().unwrap_or_default(),
        _ => format!("({})", types.join(" | ")),
    }
}

/// A property key: bare when it is an identifier, quoted otherwise.
fn key(name: &str) -> String {
    let identifier = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$');
    if identifier {
        name.to_owned()
    } else {
        Value::String(name.to_owned()).to_string()
    }
}

/// `user_id`, `user.id`, `user-id` → `UserId`.
pub(crate) fn pascal(name: &str) -> String {
    let mut out = String::new();
    for word in name.split(|c: char| !c.is_ascii_alphanumeric()) {
        let mut chars = word.chars();
        if let Some(first) = chars.next() {
            out.push(first.to_ascii_uppercase());
            out.extend(chars);
        }
    }
    if out.is_empty() || out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, '_');
    }
    out
}

/// The lines of a schema's doc comment: the first paragraph of its description, and what
/// its type does not say (an integer, its bounds, a format, bytes).
pub(crate) fn doc_lines(schema: &Value) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    if let Some(description) = schema.get("description").and_then(Value::as_str) {
        let first = description.trim().split("\n\n").next().unwrap_or_default();
        lines.extend(first.lines().map(|line| line.trim_end().to_owned()));
    }
    let mut notes = Vec::new();
    let integer = match schema.get("type") {
        Some(Value::String(kind)) => kind == "integer",
        Some(Value::Array(kinds)) => kinds.iter().any(|kind| kind == "integer"),
        _ => false,
    };
    if integer {
        notes.push("an integer".to_owned());
    }
    for (keyword, word) in [
        ("minimum", "at least"),
        ("exclusiveMinimum", "more than"),
        ("maximum", "at most"),
        ("exclusiveMaximum", "less than"),
        ("minLength", "characters: at least"),
        ("maxLength", "characters: at most"),
        ("minItems", "items: at least"),
        ("maxItems", "items: at most"),
    ] {
        if let Some(bound) = schema.get(keyword) {
            notes.push(format!("{word} {bound}"));
        }
    }
    if let Some(pattern) = schema.get("pattern").and_then(Value::as_str) {
        notes.push(format!("matches `{pattern}`"));
    }
    if let Some(format) = schema.get("format").and_then(Value::as_str) {
        notes.push(format!("format `{format}`"));
    }
    if schema.get("contentEncoding").and_then(Value::as_str) == Some("base64") {
        notes.push("bytes, base64".to_owned());
    }
    if !notes.is_empty() {
        lines.push(format!("({})", notes.join(", ")));
    }
    lines
}

/// A doc comment of these lines, ending in a line break; empty for no lines.
pub(crate) fn comment(lines: &[String]) -> String {
    let lines: Vec<String> = lines
        .iter()
        .map(|line| line.replace("*/", "*\u{2215}"))
        .collect();
    match lines.as_slice() {
        [] => String::new(),
        [line] => format!("/** {line} */\n"),
        lines => {
            let body: Vec<String> = lines
                .iter()
                .map(|line| format!(" *{}{line}", if line.is_empty() { "" } else { " " }))
                .collect();
            format!("/**\n{}\n */\n", body.join("\n"))
        }
    }
}

/// A schema's doc comment (see [`doc_lines`]).
pub(crate) fn doc_comment(schema: &Value) -> String {
    comment(&doc_lines(schema))
}

/// `text` with every line but the first indented by two spaces (for text nested one level).
pub(crate) fn indent(text: &str) -> String {
    text.replace('\n', "\n  ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A type on one line, as the tests spell it.
    fn flat(ty: String) -> String {
        ty.split_whitespace().collect::<Vec<_>>().join(" ")
    }

    #[test]
    fn schemas_become_types() {
        let mut writer = TypeWriter::default();
        let schema = json!({
            "type": "object",
            "properties": {
                "id": {"type": "integer", "minimum": 0},
                "title": {"type": "string"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "kind": {"enum": ["a", "b"]},
                "note": {"type": ["string", "null"]},
                "child": {"$ref": "#/$defs/Child"},
                "dash-key": {"const": 3}
            },
            "required": ["id", "title"],
            "$defs": {"Child": {"type": "object", "properties": {"next": {"$ref": "#/$defs/Child"}}}}
        });
        let ty = flat(writer.root(&schema, "NotesGetOutput", "NotesGet"));
        assert_eq!(
            ty,
            r#"{ child?: Child; "dash-key"?: 3; /** (an integer, at least 0) */ id: number; kind?: ("a" | "b"); note?: (string | null); tags?: Array<string>; title: string; }"#
        );
        let aliases: Vec<(&str, &str, &str)> = writer.aliases().collect();
        assert_eq!(aliases[0].0, "Child");
        assert_eq!(flat(aliases[0].2.to_owned()), "{ next?: Child; }");
        assert!(writer.unmapped().is_empty());
    }

    #[test]
    fn clashing_definitions_get_prefixed_aliases_and_unmappable_ones_are_named() {
        let mut writer = TypeWriter::default();
        let one = json!({"$ref": "#/$defs/Item", "$defs": {"Item": {"type": "string"}}});
        let two = json!({"$ref": "#/$defs/Item", "$defs": {"Item": {"type": "integer"}}});
        assert_eq!(writer.root(&one, "AInput", "A"), "Item");
        assert_eq!(writer.root(&two, "BInput", "B"), "BItem");
        assert_eq!(
            writer.root(&one, "CInput", "C"),
            "Item",
            "the same definition shares"
        );
        assert_eq!(
            writer.root(&json!({"not": {"type": "null"}}), "D", "D"),
            "unknown"
        );
        assert_eq!(
            writer.root(&json!({"enum": [{"a": 1}]}), "E", "E"),
            "unknown"
        );
        assert_eq!(writer.unmapped().len(), 2, "{:?}", writer.unmapped());
        assert_eq!(
            flat(writer.root(&json!({"type": "object"}), "F", "F")),
            "{ [key: string]: unknown; }"
        );
        let map = json!({
            "type": "object",
            "properties": {"a": {"type": "integer"}},
            "additionalProperties": {"type": "boolean"}
        });
        assert_eq!(
            flat(writer.root(&map, "H", "H")),
            "{ /** (an integer) */ a?: number; [key: string]: (number | undefined | boolean); }",
            "the index signature admits the properties' types"
        );
        assert_eq!(
            writer.root(
                &json!({"prefixItems": [{"type": "string"}], "items": false}),
                "G",
                "G"
            ),
            "[string?]"
        );
    }
}
