//! Self-contained operation schemas that share instead of copying.
//!
//! A schema handed to an operation must stand on its own: its `$ref`s cannot point into the
//! OpenAPI document any more. Every schema a `$ref` reaches becomes **one definition per
//! import** ([`Definitions`]): it is converted once (3.0 → 2020-12, keywords the validator
//! cannot take degraded, see [`super::sanitize`]) and its own `$ref`s become
//! `{"$ref": "#/$defs/<Name>"}`. An operation schema ([`SchemaBundle`]) keeps those `$ref`s;
//! the import's operation schemas share one copy of the definitions
//! ([`Definitions::into_shared`], held by each [`opkit::schema::Schema`] through an `Arc`),
//! and each reads as a self-contained schema whose `$defs` hold exactly the definitions it
//! reaches, recursive ones included (built when it is first read, see
//! [`opkit::schema::Schema`]). A schema built on its own ([`SchemaBundle::finish`]) gets
//! that `$defs` as a copy.
//! The one exception to "`$ref` stays a `$ref`" is the top: a parameter, body or response
//! schema that is itself a `$ref` gets the target's body in place (its nested `$ref`s still
//! go to `$defs`), so an input's `body` or an output reads as the schema it names.
//!
//! A chain of pure aliases (`A` is `{"$ref": B}`) resolves to its final target, with cycle
//! detection and a generous hop limit ([`super::refs::MAX_REF_HOPS`]); nesting has no other
//! depth limit than [`MAX_DEPTH`] within one definition, since definitions are built one at
//! a time, never by recursion into each other.
//!
//! # Budget
//!
//! The work of an import and the size of what it builds are counted in schema nodes (each
//! object, array or scalar put into a definition, and the size of the definitions each
//! operation schema reaches: what its self-contained form holds when it is read).
//! Past the budget ([`OpenApiOptions::max_schema_nodes`](super::OpenApiOptions)), the import
//! stops with [`OpenApiError::SchemaBudget`](super::OpenApiError).
//!
//! In 3.0, siblings of `$ref` are ignored (except `nullable`, which generators put there
//! meaning "or null"); in 3.1+ they apply: annotations override the target's at the top,
//! and elsewhere they stay next to the `$ref` (2020-12 allows it).

use super::convert::{convert_30_node, convert_31_node};
use super::document::{SpecVersion, join_pointer};
use super::error::MapError;
use super::refs::{MAX_REF_HOPS, Resolver};
use super::sanitize::{self, Sanitizer};
use serde_json::{Map, Value, json};
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap, HashSet};

/// Nesting depth of one schema walk (within one definition).
pub(crate) const MAX_DEPTH: usize = 256;

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

/// One definition: a schema of the document that some `$ref` reaches.
struct Entry {
    name: String,
    pointer: String,
    state: State,
}

enum State {
    Pending,
    Building,
    Done {
        body: Value,
        /// The definitions its body refers to.
        refs: Vec<usize>,
        /// Its size in schema nodes.
        nodes: usize,
    },
    Failed(MapError),
}

#[derive(Default)]
struct Inner {
    by_pointer: HashMap<String, usize>,
    entries: Vec<Entry>,
    names: HashSet<String>,
    used: usize,
    sanitizer: Sanitizer,
}

/// The definitions of one import: each reachable schema converted once, shared by every
/// operation schema that reaches it.
pub(crate) struct Definitions<'a> {
    resolver: Resolver<'a>,
    budget: usize,
    inner: RefCell<Inner>,
}

/// The import ran out of its schema budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BudgetExceeded {
    pub limit: usize,
}

impl<'a> Definitions<'a> {
    pub fn new(resolver: Resolver<'a>, budget: usize) -> Self {
        Self {
            resolver,
            budget,
            inner: RefCell::new(Inner::default()),
        }
    }

    /// The same definitions, without warnings about degraded keywords (for a rebuild).
    pub fn quiet(self) -> Self {
        self.inner.borrow_mut().sanitizer.quiet = true;
        self
    }

    /// `Err` once the import has used more than its budget.
    pub fn check_budget(&self) -> Result<(), BudgetExceeded> {
        if self.inner.borrow().used > self.budget {
            Err(BudgetExceeded { limit: self.budget })
        } else {
            Ok(())
        }
    }

    /// Schema nodes built and copied so far.
    pub fn used(&self) -> usize {
        self.inner.borrow().used
    }

    fn charge(&self, nodes: usize) -> Result<(), MapError> {
        let mut inner = self.inner.borrow_mut();
        inner.used = inner.used.saturating_add(nodes);
        if inner.used > self.budget {
            return Err(MapError::new(
                "",
                format!(
                    "the import's schema budget of {} nodes is spent",
                    self.budget
                ),
            ));
        }
        Ok(())
    }

    /// The entry of the schema a `$ref` (at `at`) names, following pure aliases.
    fn entry_for(&self, reference: &str, at: &str) -> Result<usize, MapError> {
        let (mut target, mut pointer) = self.resolver.lookup(reference, at)?;
        let mut seen = HashSet::new();
        // A target that is nothing but a `$ref` is an alias: use its target.
        while let Some(Value::String(next)) = target.get("$ref")
            && target.as_object().is_some_and(|map| map.len() == 1)
        {
            if !seen.insert(pointer.clone()) || seen.len() > MAX_REF_HOPS {
                return Err(MapError::new(
                    at,
                    format!(
                        "the reference chain from {reference:?} is circular (or longer than {MAX_REF_HOPS} hops)"
                    ),
                ));
            }
            let next_at = join_pointer(&pointer, "$ref");
            (target, pointer) = self.resolver.lookup(next, &next_at)?;
        }
        let mut inner = self.inner.borrow_mut();
        if let Some(&id) = inner.by_pointer.get(&pointer) {
            return Ok(id);
        }
        let name = unique_name(&mut inner.names, &pointer);
        let id = inner.entries.len();
        inner.entries.push(Entry {
            name,
            pointer: pointer.clone(),
            state: State::Pending,
        });
        inner.by_pointer.insert(pointer, id);
        Ok(id)
    }

    fn name(&self, id: usize) -> String {
        self.inner.borrow().entries[id].name.clone()
    }

    /// Builds entry `id` if it is not built yet; its direct references and size.
    fn build(&self, id: usize) -> Result<(Vec<usize>, usize), MapError> {
        let pointer = {
            let mut inner = self.inner.borrow_mut();
            let entry = &mut inner.entries[id];
            match &entry.state {
                State::Done { refs, nodes, .. } => return Ok((refs.clone(), *nodes)),
                State::Failed(error) => return Err(error.clone()),
                // Entries are built one at a time, never inside each other.
                State::Building => return Ok((Vec::new(), 0)),
                State::Pending => {}
            }
            entry.state = State::Building;
            entry.pointer.clone()
        };
        let result = self
            .resolver
            .root
            .pointer(&pointer)
            .ok_or_else(|| MapError::new(&pointer, "the reference points to nothing"));
        let result = result.and_then(|target| {
            let mut walker = Walker::new(self, Some(id));
            let body = walker.walk(target, &pointer, 0)?;
            Ok((body, walker.refs, walker.nodes))
        });
        let mut inner = self.inner.borrow_mut();
        match result {
            Ok((body, refs, nodes)) => {
                inner.used = inner.used.saturating_add(nodes);
                inner.entries[id].state = State::Done {
                    body,
                    refs: refs.clone(),
                    nodes,
                };
                Ok((refs, nodes))
            }
            Err(error) => {
                inner.entries[id].state = State::Failed(error.clone());
                Err(error)
            }
        }
    }

    /// The definitions built so far, by name, for the operation schemas made with
    /// [`SchemaBundle::finish_shared`] to refer into (moved, not copied).
    pub fn into_shared(self) -> opkit::schema::Definitions {
        let inner = self.inner.into_inner();
        opkit::schema::Definitions::new(inner.entries.into_iter().filter_map(|entry| {
            match entry.state {
                State::Done { body, .. } => Some((entry.name, body)),
                _ => None,
            }
        }))
    }

    fn body(&self, id: usize) -> Value {
        match &self.inner.borrow().entries[id].state {
            State::Done { body, .. } => body.clone(),
            _ => Value::Bool(true),
        }
    }
}

/// A `$defs` name for a pointer: the component name for `/components/schemas/<Name>`, else
/// the pointer's segments joined by `_`; characters other than `[A-Za-z0-9_.-]` become `_`
/// (so the name needs no escaping in a `$ref`), and `_2`, `_3`, ... keep names unique.
fn unique_name(names: &mut HashSet<String>, pointer: &str) -> String {
    let raw = match pointer.strip_prefix("/components/schemas/") {
        Some(name) if !name.contains('/') => name.replace("~1", "/").replace("~0", "~"),
        _ => pointer.trim_start_matches('/').replace('/', "_"),
    };
    let mut base: String = raw
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if base.is_empty() {
        base.push('_');
    }
    let mut name = base.clone();
    let mut n = 2;
    while names.contains(&name) {
        name = format!("{base}_{n}");
        n += 1;
    }
    names.insert(name.clone());
    name
}

/// One walk over a schema: converts it, turning `$ref`s into `$defs` references.
struct Walker<'d, 'a> {
    defs: &'d Definitions<'a>,
    /// The definition being built (for `$recursiveRef`), `None` at an operation's top.
    current: Option<usize>,
    refs: Vec<usize>,
    nodes: usize,
}

impl<'d, 'a> Walker<'d, 'a> {
    fn new(defs: &'d Definitions<'a>, current: Option<usize>) -> Self {
        Self {
            defs,
            current,
            refs: Vec::new(),
            nodes: 0,
        }
    }

    fn version(&self) -> SpecVersion {
        self.defs.resolver.version
    }

    fn walk(&mut self, schema: &'a Value, pointer: &str, depth: usize) -> Result<Value, MapError> {
        if depth > MAX_DEPTH {
            return Err(MapError::new(pointer, "the schema is nested too deeply"));
        }
        self.nodes += 1;
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
            let ref_pointer = join_pointer(pointer, "$ref");
            let Some(reference) = reference.as_str() else {
                return Err(MapError::new(ref_pointer, "`$ref` must be a string"));
            };
            let id = self.defs.entry_for(reference, &ref_pointer)?;
            self.refs.push(id);
            let target = json!({"$ref": format!("#/$defs/{}", self.defs.name(id))});
            return self.with_siblings(map, target, false, pointer, depth);
        }
        let out = self.keywords(map, pointer, depth)?;
        Ok(if self.version() == SpecVersion::V3_0 {
            convert_30_node(out)
        } else {
            convert_31_node(out)
        })
    }

    /// Combines a resolved `$ref` (`resolved`: a `$defs` reference, or the target's body
    /// when `inlined`) with the keywords next to it.
    fn with_siblings(
        &mut self,
        map: &'a Map<String, Value>,
        resolved: Value,
        inlined: bool,
        pointer: &str,
        depth: usize,
    ) -> Result<Value, MapError> {
        if self.version() == SpecVersion::V3_0 {
            // Siblings are ignored in 3.0, except the `nullable` generators put there.
            return Ok(if map.get("nullable") == Some(&Value::Bool(true)) {
                json!({"anyOf": [resolved, {"type": "null"}]})
            } else {
                resolved
            });
        }
        if map.len() == 1 {
            return Ok(resolved);
        }
        let annotations_only = map
            .keys()
            .all(|key| key == "$ref" || ANNOTATIONS.contains(&key.as_str()));
        let siblings = self.keywords(map, pointer, depth)?;
        match resolved {
            Value::Object(mut target) if annotations_only && inlined => {
                target.extend(siblings);
                Ok(Value::Object(target))
            }
            Value::Object(mut target) if !inlined => {
                // 2020-12 applies keywords next to `$ref` together with the target.
                target.extend(siblings);
                Ok(Value::Object(target))
            }
            resolved => {
                let mut out = siblings;
                out.insert("allOf".into(), json!([resolved]));
                Ok(Value::Object(out))
            }
        }
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
            let child = join_pointer(pointer, key);
            let converted = match key.as_str() {
                "$ref" => continue,
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
                "allOf" | "anyOf" | "oneOf" | "prefixItems" => self.array(value, &child, depth)?,
                "items" if value.is_array() => self.array(value, &child, depth)?,
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
                _ => {
                    let current = self.current.map(|id| self.defs.name(id));
                    let mut inner = self.defs.inner.borrow_mut();
                    match inner
                        .sanitizer
                        .keyword(map, key, value, &child, current.as_deref())
                    {
                        sanitize::Keyword::Keep => value.clone(),
                        sanitize::Keyword::Drop => continue,
                        sanitize::Keyword::Replace(new_key, new_value) => {
                            drop(inner);
                            if new_key == "$ref"
                                && let Some(id) = self.current
                            {
                                self.refs.push(id);
                            }
                            out.insert(new_key, new_value);
                            continue;
                        }
                    }
                }
            };
            out.insert(key.clone(), converted);
        }
        Ok(out)
    }

    fn array(&mut self, value: &'a Value, pointer: &str, depth: usize) -> Result<Value, MapError> {
        match value {
            Value::Array(members) => Ok(Value::Array(
                members
                    .iter()
                    .enumerate()
                    .map(|(i, member)| {
                        self.walk(member, &join_pointer(pointer, &i.to_string()), depth + 1)
                    })
                    .collect::<Result<_, _>>()?,
            )),
            other => Ok(other.clone()),
        }
    }
}

/// Builds the self-contained schemas of one operation; one bundle per input or output.
pub(crate) struct SchemaBundle<'d, 'a> {
    defs: &'d Definitions<'a>,
    /// The definitions the bundled pieces refer to directly.
    refs: Vec<usize>,
}

impl<'d, 'a> SchemaBundle<'d, 'a> {
    pub fn new(defs: &'d Definitions<'a>) -> Self {
        Self {
            defs,
            refs: Vec::new(),
        }
    }

    /// The bundled (2020-12) form of the schema at `pointer`; a `$ref` at the top is
    /// replaced by its target's body.
    pub fn schema(&mut self, schema: &'a Value, pointer: &str) -> Result<Value, MapError> {
        let mut walker = Walker::new(self.defs, None);
        let result = match schema {
            Value::Object(map) if map.contains_key("$ref") => {
                let ref_pointer = join_pointer(pointer, "$ref");
                let Some(reference) = map.get("$ref").and_then(Value::as_str) else {
                    return Err(MapError::new(ref_pointer, "`$ref` must be a string"));
                };
                let id = self.defs.entry_for(reference, &ref_pointer)?;
                let (refs, size) = self.defs.build(id)?;
                walker.refs.extend(refs);
                walker.nodes += size;
                let body = self.defs.body(id);
                walker.with_siblings(map, body, true, pointer, 0)
            }
            _ => walker.walk(schema, pointer, 0),
        };
        self.defs.charge(walker.nodes)?;
        self.refs.extend(walker.refs);
        result
    }

    /// Adds the `$defs` the bundled pieces reach to `root` (the schema they were put into):
    /// a self-contained copy, for a schema built on its own (not shared with other operations).
    pub fn finish(self, mut root: Value) -> Result<Value, MapError> {
        let defs_ref = self.defs;
        let seen = self.reached()?;
        let defs: BTreeMap<String, Value> = seen
            .into_iter()
            .map(|id| (defs_ref.name(id), defs_ref.body(id)))
            .collect();
        if defs.is_empty() {
            return Ok(root);
        }
        let defs: Map<String, Value> = defs.into_iter().collect();
        match &mut root {
            Value::Object(map) => {
                map.insert("$defs".into(), Value::Object(defs));
                Ok(root)
            }
            Value::Bool(true) => Ok(json!({"$defs": defs})),
            _ => Ok(json!({"allOf": [root], "$defs": defs})),
        }
    }

    /// `root` as it is, its `$ref`s pointing into the import's shared definitions
    /// ([`Definitions::into_shared`]); the definitions it reaches are built and counted
    /// against the budget as [`finish`](Self::finish) would, but not copied.
    pub fn finish_shared(self, root: Value) -> Result<Value, MapError> {
        self.reached()?;
        Ok(root)
    }

    /// Builds every definition the bundled pieces reach; charges their size to the budget.
    fn reached(self) -> Result<HashSet<usize>, MapError> {
        let mut todo = self.refs;
        let mut seen: HashSet<usize> = HashSet::new();
        let mut nodes = 0usize;
        while let Some(id) = todo.pop() {
            if !seen.insert(id) {
                continue;
            }
            let (refs, size) = self.defs.build(id)?;
            nodes = nodes.saturating_add(size);
            todo.extend(refs.into_iter().filter(|id| !seen.contains(id)));
        }
        self.defs.charge(nodes)?;
        Ok(seen)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bundle(root: &Value, version: SpecVersion, pointer: &str) -> Result<Value, MapError> {
        let defs = Definitions::new(Resolver { root, version }, usize::MAX);
        let mut bundle = SchemaBundle::new(&defs);
        let schema = bundle.schema(root.pointer(pointer).unwrap(), pointer)?;
        bundle.finish(schema)
    }

    #[test]
    fn references_go_to_defs_and_the_top_is_inlined() {
        let root = json!({"components": {"schemas": {
            "Pet": {"type": "object", "properties": {"tag": {"$ref": "#/components/schemas/Tag"}}},
            "Tag": {"type": "string", "nullable": true},
            "Unused": {"type": "integer"}
        }}, "s": {"$ref": "#/components/schemas/Pet"}});
        assert_eq!(
            bundle(&root, SpecVersion::V3_0, "/components/schemas/Pet").unwrap(),
            json!({"type": "object", "properties": {"tag": {"$ref": "#/$defs/Tag"}},
                "$defs": {"Tag": {"type": ["string", "null"]}}})
        );
        assert_eq!(
            bundle(&root, SpecVersion::V3_0, "/s").unwrap(),
            json!({"type": "object", "properties": {"tag": {"$ref": "#/$defs/Tag"}},
                "$defs": {"Tag": {"type": ["string", "null"]}}})
        );
    }

    #[test]
    fn shared_definitions_are_not_copied() {
        // Each level refers to the next twice: copying would be 2^30 nodes.
        let mut schemas = serde_json::Map::new();
        for i in 0..30 {
            schemas.insert(
                format!("L{i}"),
                json!({"type": "object", "properties": {
                    "a": {"$ref": format!("#/components/schemas/L{}", i + 1)},
                    "b": {"$ref": format!("#/components/schemas/L{}", i + 1)}
                }}),
            );
        }
        schemas.insert("L30".into(), json!({"type": "string"}));
        let root =
            json!({"components": {"schemas": schemas}, "s": {"$ref": "#/components/schemas/L0"}});
        let schema = bundle(&root, SpecVersion::V3_1, "/s").unwrap();
        assert_eq!(schema["$defs"].as_object().unwrap().len(), 30);
        assert!(serde_json::to_string(&schema).unwrap().len() < 5_000);
        let compiled = opkit::schema::CompiledSchema::compile(&schema).unwrap();
        assert!(compiled.is_valid(&json!({"a": {"b": {}}})));
        assert!(!compiled.is_valid(&json!({"a": {"b": 5}})));
    }

    #[test]
    fn cycles_validate() {
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
        let compiled = opkit::schema::CompiledSchema::compile(&node).unwrap();
        assert!(
            compiled.is_valid(&json!({"value": 1, "children": [{"value": 2, "children": []}]}))
        );
        assert!(!compiled.is_valid(&json!({"value": 1, "children": [{"value": "x"}]})));
        let a = bundle(&root, SpecVersion::V3_1, "/components/schemas/A").unwrap();
        let compiled = opkit::schema::CompiledSchema::compile(&a).unwrap();
        assert!(compiled.is_valid(&json!({"b": {"a": {"b": {}}}})));
        assert!(!compiled.is_valid(&json!({"b": {"a": {"b": 5}}})));
    }

    #[test]
    fn sibling_rules_differ_between_versions() {
        let root = json!({"components": {"schemas": {"Id": {"type": "integer", "description": "an id"}}},
            "a": {"$ref": "#/components/schemas/Id", "description": "the pet's id"},
            "b": {"$ref": "#/components/schemas/Id", "minimum": 1},
            "c": {"$ref": "#/components/schemas/Id", "nullable": true},
            "d": {"properties": {"x": {"$ref": "#/components/schemas/Id", "minimum": 1}}}
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
        assert_eq!(
            bundle(&root, SpecVersion::V3_1, "/d").unwrap()["properties"]["x"],
            json!({"$ref": "#/$defs/Id", "minimum": 1})
        );
    }

    #[test]
    fn bad_references_name_their_pointer() {
        let root = json!({
            "a": {"properties": {"x": {"$ref": "other.yaml#/Pet"}}},
            "b": {"items": {"$ref": "#/components/schemas/Missing"}},
            "c": {"$ref": "#anchor"},
            "d": {"$ref": 5},
            "e": {"properties": {"x": 5}},
            "f": {"$ref": "#/f2"}, "f2": {"$ref": "#/f"}
        });
        let cases = [
            ("/a", "/a/properties/x/$ref", "outside the document"),
            ("/b", "/b/items/$ref", "points to nothing"),
            ("/c", "/c/$ref", "anchor"),
            ("/d", "/d/$ref", "must be a string"),
            ("/e", "/e/properties/x", "must be an object or a boolean"),
            ("/f", "/f/$ref", "circular"),
        ];
        for (pointer, at, message) in cases {
            let error = bundle(&root, SpecVersion::V3_1, pointer).unwrap_err();
            assert_eq!(error.pointer, at, "{error:?}");
            assert!(error.message.contains(message), "{error:?}");
        }
    }

    #[test]
    fn long_alias_chains_resolve_and_odd_names_are_safe() {
        let mut schemas = serde_json::Map::new();
        for i in 0..500 {
            schemas.insert(
                format!("A{i}"),
                json!({"$ref": format!("#/components/schemas/A{}", i + 1)}),
            );
        }
        schemas.insert(
            "A500".into(),
            json!({"type": "object", "properties": {"n": {"$ref": "#/components/schemas/a b%"}}}),
        );
        schemas.insert("a b%".into(), json!({"type": "integer"}));
        let root = json!({"components": {"schemas": schemas}, "s": {"properties": {"x": {"$ref": "#/components/schemas/A0"}}}});
        let schema = bundle(&root, SpecVersion::V3_1, "/s").unwrap();
        assert_eq!(schema["properties"]["x"], json!({"$ref": "#/$defs/A500"}));
        assert_eq!(
            schema["$defs"]["A500"]["properties"]["n"],
            json!({"$ref": "#/$defs/a_b_"})
        );
        let compiled = opkit::schema::CompiledSchema::compile(&schema).unwrap();
        assert!(compiled.is_valid(&json!({"x": {"n": 1}})));
        assert!(!compiled.is_valid(&json!({"x": {"n": "1"}})));
    }

    #[test]
    fn recursive_anchor_and_duplicate_required_degrade() {
        let root = json!({"components": {"schemas": {
            "Filter": {"$recursiveAnchor": true, "type": "object", "required": ["type", "type"],
                "properties": {"type": {"type": "string"}, "filters": {"type": "array", "items": {"$recursiveRef": "#"}}}}
        }}, "s": {"properties": {"f": {"$ref": "#/components/schemas/Filter"}}}});
        let schema = bundle(&root, SpecVersion::V3_1, "/s").unwrap();
        let filter = &schema["$defs"]["Filter"];
        assert_eq!(filter["required"], json!(["type"]));
        assert_eq!(
            filter["properties"]["filters"]["items"],
            json!({"$ref": "#/$defs/Filter"})
        );
        assert!(filter.get("$recursiveAnchor").is_none());
        let compiled = opkit::schema::CompiledSchema::compile(&schema).unwrap();
        assert!(compiled.is_valid(&json!({"f": {"type": "and", "filters": [{"type": "eq"}]}})));
        assert!(!compiled.is_valid(&json!({"f": {"type": "and", "filters": [{"filters": []}]}})));
    }

    #[test]
    fn the_budget_stops_the_work() {
        let root = json!({"components": {"schemas": {"A": {"type": "object", "properties": {"x": {"type": "string"}, "y": {"type": "string"}}}}},
            "s": {"$ref": "#/components/schemas/A"}});
        let defs = Definitions::new(
            Resolver {
                root: &root,
                version: SpecVersion::V3_1,
            },
            6,
        );
        let mut bundle = SchemaBundle::new(&defs);
        let first = bundle.schema(&root["s"], "/s");
        assert!(first.is_ok(), "{first:?}");
        let mut again = SchemaBundle::new(&defs);
        let error = again.schema(&root["s"], "/s").unwrap_err();
        assert!(error.message.contains("budget"), "{error:?}");
        assert_eq!(defs.check_budget(), Err(BudgetExceeded { limit: 6 }));
    }
}
