//! Local `$ref` resolution: Reference Objects (parameters, request bodies, responses,
//! headers, security schemes, path items) and self-contained JSON Schemas.
//!
//! A schema handed to an operation must stand on its own: its `$ref`s cannot point into the
//! OpenAPI document any more. [`SchemaBundle`] copies each referenced schema in place
//! (converted to 2020-12 on the way for 3.0 documents). A reference that closes a cycle
//! (a recursive schema such as a tree node) is not copied again: it becomes
//! `{"$ref": "#/$defs/<Name>"}` and the schema lands once in the `$defs` of the bundled
//! root, so recursive schemas stay finite and valid. When copying would grow a schema past a
//! fixed size (deeply shared components in large documents), further references go to
//! `$defs` too.
//!
//! Only local references (`#/...`, JSON pointers with `~0`/`~1` escapes, percent-decoded)
//! are followed; a reference to another file or URL, an anchor, or a pointer that leads
//! nowhere is a [`MapError`] naming the pointer of the `$ref`, and the operation that needs
//! it is skipped. In 3.0, siblings of `$ref` are ignored (except `nullable`, which
//! generators put there meaning "or null"); in 3.1+ they apply, as annotations that override
//! the target's or, for constraints, as an `allOf` with it.

use super::convert::{convert_30_node, convert_31_node};
use super::document::{SpecVersion, escape_segment, join_pointer};
use super::error::MapError;
use percent_encoding::percent_decode_str;
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, HashMap};

/// Reference chains longer than this are treated as cycles.
const MAX_REF_HOPS: usize = 64;
/// Values a bundled schema may hold before references go to `$defs` instead of being copied.
const INLINE_BUDGET: usize = 20_000;
/// Nesting depth of one schema walk.
const MAX_DEPTH: usize = 256;

/// Annotation keywords that a 3.1 `$ref` sibling may override without changing validation.
const ANNOTATIONS: [&str; 9] = [
    "title",
    "description",
    "examples",
    "default",
    "deprecated",
    "readOnly",
    "writeOnly",
    "$comment",
    "summary",
];

/// Follows Reference Objects within one document.
#[derive(Clone, Copy)]
pub(crate) struct Resolver<'a> {
    pub root: &'a Value,
    pub version: SpecVersion,
}

impl<'a> Resolver<'a> {
    /// The value a local reference points to, with its pointer (without the `#`).
    pub fn lookup(&self, reference: &str, at: &str) -> Result<(&'a Value, String), MapError> {
        let Some(fragment) = reference.strip_prefix('#') else {
            return Err(MapError::new(
                at,
                format!(
                    "the reference {reference:?} points outside the document; only local references (#/...) are supported"
                ),
            ));
        };
        let pointer = percent_decode_str(fragment)
            .decode_utf8_lossy()
            .into_owned();
        if !pointer.is_empty() && !pointer.starts_with('/') {
            return Err(MapError::new(
                at,
                format!(
                    "the reference {reference:?} is an anchor; only JSON-pointer references are supported"
                ),
            ));
        }
        self.root
            .pointer(&pointer)
            .map(|value| (value, pointer.clone()))
            .ok_or_else(|| {
                MapError::new(at, format!("the reference {reference:?} points to nothing"))
            })
    }

    /// Resolves a Reference Object chain: returns the target object, its pointer, and (3.1+)
    /// the `summary`/`description` overrides found on the way.
    pub fn deref(
        &self,
        value: &'a Value,
        pointer: &str,
    ) -> Result<(&'a Value, String, Map<String, Value>), MapError> {
        let mut current = value;
        let mut current_pointer = pointer.to_owned();
        let mut overrides = Map::new();
        for _ in 0..MAX_REF_HOPS {
            let Some(reference) = current.get("$ref") else {
                return Ok((current, current_pointer, overrides));
            };
            let Some(reference) = reference.as_str() else {
                return Err(MapError::new(
                    join_pointer(&current_pointer, "$ref"),
                    "`$ref` must be a string",
                ));
            };
            if self.version >= SpecVersion::V3_1 {
                for key in ["summary", "description"] {
                    if let Some(text) = current.get(key)
                        && !overrides.contains_key(key)
                    {
                        overrides.insert(key.into(), text.clone());
                    }
                }
            }
            let (target, target_pointer) =
                self.lookup(reference, &join_pointer(&current_pointer, "$ref"))?;
            current = target;
            current_pointer = target_pointer;
        }
        Err(MapError::new(
            pointer,
            "the reference chain is circular (or longer than 64 hops)",
        ))
    }
}

/// Builds self-contained schemas from document schemas; one bundle per output schema.
pub(crate) struct SchemaBundle<'a> {
    resolver: Resolver<'a>,
    /// Target pointer → name in `$defs`.
    def_names: HashMap<String, String>,
    /// Name → bundled schema (`None` while being built).
    defs: BTreeMap<String, Option<Value>>,
    /// Targets being copied right now (a reference to one of them closes a cycle).
    stack: Vec<String>,
    /// Values emitted so far while copying.
    emitted: usize,
}

impl<'a> SchemaBundle<'a> {
    pub fn new(resolver: Resolver<'a>) -> Self {
        Self {
            resolver,
            def_names: HashMap::new(),
            defs: BTreeMap::new(),
            stack: Vec::new(),
            emitted: 0,
        }
    }

    /// The bundled (self-contained, 2020-12) form of the schema at `pointer`.
    pub fn schema(&mut self, schema: &'a Value, pointer: &str) -> Result<Value, MapError> {
        // The schema's own location counts as being copied: a reference back to it is a cycle.
        self.stack.push(pointer.to_owned());
        let result = self.walk(schema, pointer, 0);
        self.stack.pop();
        result
    }

    /// Adds the collected `$defs` to `root` (the schema the bundled pieces were put into).
    pub fn finish(mut self, mut root: Value) -> Result<Value, MapError> {
        // Build every pending definition (building one may discover more).
        while let Some((name, pointer)) = self
            .defs
            .iter()
            .find(|(_, body)| body.is_none())
            .map(|(name, _)| name.clone())
            .and_then(|name| {
                self.def_names
                    .iter()
                    .find(|(_, n)| **n == name)
                    .map(|(pointer, _)| (name, pointer.clone()))
            })
        {
            let target = self
                .resolver
                .root
                .pointer(&pointer)
                .ok_or_else(|| MapError::new(&pointer, "the reference points to nothing"))?;
            self.defs.insert(name.clone(), Some(Value::Null));
            self.stack.push(pointer.clone());
            let body = self.walk(target, &pointer, 0)?;
            self.stack.pop();
            self.defs.insert(name, Some(body));
        }
        if self.defs.is_empty() {
            return Ok(root);
        }
        let defs: Map<String, Value> = self
            .defs
            .into_iter()
            .map(|(name, body)| (name, body.unwrap_or(Value::Bool(true))))
            .collect();
        match &mut root {
            Value::Object(map) => {
                map.insert("$defs".into(), Value::Object(defs));
                Ok(root)
            }
            Value::Bool(true) => Ok(json!({"$defs": defs})),
            _ => Ok(json!({"allOf": [root], "$defs": defs})),
        }
    }

    fn walk(&mut self, schema: &'a Value, pointer: &str, depth: usize) -> Result<Value, MapError> {
        if depth > MAX_DEPTH {
            return Err(MapError::new(pointer, "the schema is nested too deeply"));
        }
        self.emitted += 1;
        let map = match schema {
            Value::Object(map) => map,
            Value::Bool(_) => return Ok(schema.clone()),
            other => {
                return Err(MapError::new(
                    pointer,
                    format!("a schema must be an object or a boolean, found {other}"),
                ));
            }
        };
        if let Some(reference) = map.get("$ref") {
            return self.reference(map, reference, pointer, depth);
        }
        let out = self.keywords(map, pointer, depth)?;
        Ok(if self.resolver.version == SpecVersion::V3_0 {
            convert_30_node(out)
        } else {
            convert_31_node(out)
        })
    }

    /// Walks the subschemas of a schema object's keywords (all but `$ref`).
    fn keywords(
        &mut self,
        map: &'a Map<String, Value>,
        pointer: &str,
        depth: usize,
    ) -> Result<Map<String, Value>, MapError> {
        let mut out = Map::new();
        for (key, value) in map {
            if key == "$ref" {
                continue;
            }
            let child = join_pointer(pointer, key);
            let converted = match key.as_str() {
                "properties" | "patternProperties" | "$defs" | "definitions"
                | "dependentSchemas" => match value {
                    Value::Object(members) => {
                        let mut walked = Map::new();
                        for (name, member) in members {
                            let member_pointer = join_pointer(&child, name);
                            walked.insert(
                                name.clone(),
                                self.walk(member, &member_pointer, depth + 1)?,
                            );
                        }
                        Value::Object(walked)
                    }
                    other => other.clone(),
                },
                "allOf" | "anyOf" | "oneOf" | "prefixItems" => match value {
                    Value::Array(members) => Value::Array(
                        members
                            .iter()
                            .enumerate()
                            .map(|(i, member)| {
                                self.walk(member, &join_pointer(&child, &i.to_string()), depth + 1)
                            })
                            .collect::<Result<_, _>>()?,
                    ),
                    other => other.clone(),
                },
                "items" if value.is_array() => Value::Array(
                    value
                        .as_array()
                        .into_iter()
                        .flatten()
                        .enumerate()
                        .map(|(i, member)| {
                            self.walk(member, &join_pointer(&child, &i.to_string()), depth + 1)
                        })
                        .collect::<Result<_, _>>()?,
                ),
                "items"
                | "additionalProperties"
                | "additionalItems"
                | "contains"
                | "propertyNames"
                | "not"
                | "if"
                | "then"
                | "else"
                | "unevaluatedItems"
                | "unevaluatedProperties"
                | "contentSchema"
                    if value.is_object() || value.is_boolean() =>
                {
                    self.walk(value, &child, depth + 1)?
                }
                _ => value.clone(),
            };
            out.insert(key.clone(), converted);
        }
        Ok(out)
    }

    fn reference(
        &mut self,
        map: &'a Map<String, Value>,
        reference: &'a Value,
        pointer: &str,
        depth: usize,
    ) -> Result<Value, MapError> {
        let ref_pointer = join_pointer(pointer, "$ref");
        let Some(reference) = reference.as_str() else {
            return Err(MapError::new(ref_pointer, "`$ref` must be a string"));
        };
        let (target, target_pointer) = self.resolver.lookup(reference, &ref_pointer)?;
        let resolved = if self.stack.contains(&target_pointer) || self.emitted > INLINE_BUDGET {
            json!({"$ref": format!("#/$defs/{}", escape_segment(&self.def_name(&target_pointer)))})
        } else {
            self.stack.push(target_pointer.clone());
            let walked = self.walk(target, &target_pointer, depth + 1);
            self.stack.pop();
            walked?
        };
        let has_siblings = map.keys().any(|key| key != "$ref");
        if self.resolver.version == SpecVersion::V3_0 {
            // Siblings are ignored in 3.0, except the `nullable` generators put there.
            return Ok(if map.get("nullable") == Some(&Value::Bool(true)) {
                json!({"anyOf": [resolved, {"type": "null"}]})
            } else {
                resolved
            });
        }
        if !has_siblings {
            return Ok(resolved);
        }
        let annotations_only = map
            .keys()
            .all(|key| key == "$ref" || ANNOTATIONS.contains(&key.as_str()));
        let siblings = self.keywords(map, pointer, depth)?;
        match resolved {
            Value::Object(mut target) if annotations_only && !target.contains_key("$ref") => {
                target.extend(siblings);
                Ok(Value::Object(target))
            }
            resolved => {
                // Constraints next to `$ref` apply together with the target.
                let mut out = siblings;
                out.insert("allOf".into(), json!([resolved]));
                Ok(Value::Object(out))
            }
        }
    }

    /// The `$defs` name of a target, registering it for [`finish`](Self::finish).
    fn def_name(&mut self, target_pointer: &str) -> String {
        if let Some(name) = self.def_names.get(target_pointer) {
            return name.clone();
        }
        let base = match target_pointer.strip_prefix("/components/schemas/") {
            Some(name) if !name.contains('/') => name.replace("~1", "/").replace("~0", "~"),
            _ => target_pointer
                .trim_start_matches('/')
                .replace("~1", "_")
                .replace("~0", "_")
                .replace('/', "_"),
        };
        let mut name = base.clone();
        let mut n = 2;
        while self.defs.contains_key(&name) {
            name = format!("{base}_{n}");
            n += 1;
        }
        self.def_names
            .insert(target_pointer.to_owned(), name.clone());
        self.defs.insert(name.clone(), None);
        name
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bundle(root: &Value, version: SpecVersion, pointer: &str) -> Result<Value, MapError> {
        let resolver = Resolver { root, version };
        let mut bundle = SchemaBundle::new(resolver);
        let schema = bundle.schema(root.pointer(pointer).unwrap(), pointer)?;
        bundle.finish(schema)
    }

    #[test]
    fn plain_references_are_copied_in_place() {
        let root = json!({"components": {"schemas": {
            "Pet": {"type": "object", "properties": {"tag": {"$ref": "#/components/schemas/Tag"}}},
            "Tag": {"type": "string", "nullable": true}
        }}});
        assert_eq!(
            bundle(&root, SpecVersion::V3_0, "/components/schemas/Pet").unwrap(),
            json!({"type": "object", "properties": {"tag": {"type": ["string", "null"]}}})
        );
    }

    #[test]
    fn cycles_go_to_defs_and_validate() {
        let root = json!({"components": {"schemas": {
            "Node": {"type": "object", "properties": {
                "value": {"type": "integer"},
                "children": {"type": "array", "items": {"$ref": "#/components/schemas/Node"}}
            }},
            "A": {"type": "object", "properties": {"b": {"$ref": "#/components/schemas/B"}}},
            "B": {"type": "object", "properties": {"a": {"$ref": "#/components/schemas/A"}}}
        }}});
        let node = bundle(&root, SpecVersion::V3_1, "/components/schemas/Node").unwrap();
        assert_eq!(
            node["properties"]["children"]["items"],
            json!({"$ref": "#/$defs/Node"})
        );
        assert_eq!(
            node["$defs"]["Node"]["properties"]["value"],
            json!({"type": "integer"})
        );
        let compiled = opkit::schema::CompiledSchema::compile(&node).unwrap();
        assert!(
            compiled.is_valid(&json!({"value": 1, "children": [{"value": 2, "children": []}]}))
        );
        assert!(!compiled.is_valid(&json!({"value": 1, "children": [{"value": "x"}]})));

        let a = bundle(&root, SpecVersion::V3_1, "/components/schemas/A").unwrap();
        assert_eq!(
            a["properties"]["b"]["properties"]["a"],
            json!({"$ref": "#/$defs/A"})
        );
        assert!(a["$defs"]["A"]["properties"]["b"]["properties"]["a"]["$ref"] == "#/$defs/A");
        let compiled = opkit::schema::CompiledSchema::compile(&a).unwrap();
        assert!(compiled.is_valid(&json!({"b": {"a": {"b": {}}}})));
        assert!(!compiled.is_valid(&json!({"b": {"a": {"b": 5}}})));
    }

    #[test]
    fn self_reference_at_the_root() {
        let root = json!({"components": {"schemas": {
            "List": {"type": "object", "properties": {"next": {"$ref": "#/components/schemas/List"}}}
        }}, "schema": {"$ref": "#/components/schemas/List"}});
        let list = bundle(&root, SpecVersion::V3_1, "/schema").unwrap();
        assert_eq!(list["properties"]["next"], json!({"$ref": "#/$defs/List"}));
        assert!(list["$defs"]["List"].is_object());
    }

    #[test]
    fn sibling_rules_differ_between_versions() {
        let root = json!({"components": {"schemas": {"Id": {"type": "integer", "description": "an id"}}},
            "a": {"$ref": "#/components/schemas/Id", "description": "the pet's id"},
            "b": {"$ref": "#/components/schemas/Id", "minimum": 1},
            "c": {"$ref": "#/components/schemas/Id", "nullable": true}
        });
        assert_eq!(
            bundle(&root, SpecVersion::V3_1, "/a").unwrap(),
            json!({"type": "integer", "description": "the pet's id"})
        );
        assert_eq!(
            bundle(&root, SpecVersion::V3_0, "/a").unwrap(),
            json!({"type": "integer", "description": "an id"})
        );
        assert_eq!(
            bundle(&root, SpecVersion::V3_1, "/b").unwrap(),
            json!({"minimum": 1, "allOf": [{"type": "integer", "description": "an id"}]})
        );
        assert_eq!(
            bundle(&root, SpecVersion::V3_0, "/c").unwrap(),
            json!({"anyOf": [{"type": "integer", "description": "an id"}, {"type": "null"}]})
        );
    }

    #[test]
    fn bad_references_name_their_pointer() {
        let root = json!({
            "a": {"properties": {"x": {"$ref": "other.yaml#/Pet"}}},
            "b": {"items": {"$ref": "#/components/schemas/Missing"}},
            "c": {"$ref": "#anchor"},
            "d": {"$ref": 5},
            "e": {"properties": {"x": 5}}
        });
        let cases = [
            ("/a", "/a/properties/x/$ref", "outside the document"),
            ("/b", "/b/items/$ref", "points to nothing"),
            ("/c", "/c/$ref", "anchor"),
            ("/d", "/d/$ref", "must be a string"),
            ("/e", "/e/properties/x", "must be an object or a boolean"),
        ];
        for (pointer, at, message) in cases {
            let error = bundle(&root, SpecVersion::V3_1, pointer).unwrap_err();
            assert_eq!(error.pointer, at, "{error:?}");
            assert!(error.message.contains(message), "{error:?}");
        }
    }

    #[test]
    fn escaped_and_percent_encoded_pointers_resolve() {
        let root = json!({"paths": {"/pets": {"get": {"x": {"type": "string"}}}},
            "components": {"schemas": {"a b": {"type": "integer"}}},
            "s1": {"$ref": "#/paths/~1pets/get/x"},
            "s2": {"$ref": "#/components/schemas/a%20b"}});
        assert_eq!(
            bundle(&root, SpecVersion::V3_1, "/s1").unwrap(),
            json!({"type": "string"})
        );
        assert_eq!(
            bundle(&root, SpecVersion::V3_1, "/s2").unwrap(),
            json!({"type": "integer"})
        );
    }

    #[test]
    fn reference_objects_follow_chains_and_detect_cycles() {
        let root = json!({"components": {"parameters": {
            "A": {"$ref": "#/components/parameters/B", "description": "outer"},
            "B": {"name": "b", "in": "query"},
            "L1": {"$ref": "#/components/parameters/L2"},
            "L2": {"$ref": "#/components/parameters/L1"}
        }}});
        let resolver = Resolver {
            root: &root,
            version: SpecVersion::V3_1,
        };
        let reference = json!({"$ref": "#/components/parameters/A"});
        let (target, pointer, overrides) = resolver.deref(&reference, "/x").unwrap();
        assert_eq!(target["name"], "b");
        assert_eq!(pointer, "/components/parameters/B");
        assert_eq!(overrides["description"], "outer");
        let error = resolver
            .deref(&json!({"$ref": "#/components/parameters/L1"}), "/x")
            .unwrap_err();
        assert!(error.message.contains("circular"), "{error:?}");
    }
}
