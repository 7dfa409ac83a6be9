//! [`Schema`], the JSON Schema an [`OperationSpec`](crate::OperationSpec) holds: a
//! self-contained value, or a root whose `$ref`s point into [`Definitions`] shared with other
//! schemas (one import's components), made self-contained only when it is read.
//!
//! Importers of large API descriptions produce many operation schemas that reach the same
//! definitions (each of Stripe's 452 operations reaches about 650 KB of mutually recursive
//! components). Copying those into every schema's `$defs` costs memory proportional to
//! operations × definitions; a shared schema keeps one copy per import, and its
//! self-contained form (the root with a `$defs` holding exactly the definitions it reaches)
//! is built at the first read through [`Deref`] and kept. Serializing a shared schema that
//! was never read writes the same JSON without building it.

use super::compiled_definitions::CompiledDefinitions;
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::ops::{Deref, DerefMut};
use std::sync::{Arc, OnceLock};

/// Named schemas shared by many [`Schema`]s: a schema refers to the one named `Name` with
/// `{"$ref": "#/$defs/Name"}` (the name escaped as a JSON pointer token), and definitions refer
/// to each other the same way.
///
/// ```
/// use opkit::schema::{Definitions, Schema};
/// use serde_json::json;
/// use std::sync::Arc;
///
/// let defs = Arc::new(Definitions::new([
///     ("Pet".to_owned(), json!({"type": "object", "properties": {"tag": {"$ref": "#/$defs/Tag"}}})),
///     ("Tag".to_owned(), json!({"type": "string"})),
///     ("Unused".to_owned(), json!({"type": "integer"})),
/// ]));
/// let schema = Schema::with_definitions(json!({"type": "array", "items": {"$ref": "#/$defs/Pet"}}), defs);
/// // Read, it is self-contained: its `$defs` hold exactly what it reaches.
/// assert_eq!(schema["$defs"].as_object().unwrap().len(), 2);
/// assert_eq!(schema["$defs"]["Tag"], json!({"type": "string"}));
/// ```
pub struct Definitions {
    /// Names, sorted (the order of `$defs` in a self-contained schema).
    pub(super) names: Vec<String>,
    pub(super) bodies: Vec<Value>,
    /// For each definition, the definitions its body refers to.
    pub(super) refs: Vec<Box<[u32]>>,
    pub(super) index: HashMap<String, u32>,
    /// The definitions compiled for validators, each once, at first use (see
    /// [`super::shared_validate`]).
    compiled: OnceLock<CompiledDefinitions>,
    /// The closed twin of these definitions, built at first use (see
    /// [`super::shared_closed`]).
    closed: OnceLock<ClosedTwin>,
}

/// The definitions of one import with every closable body closed (see [`super::closed`]),
/// shared by the closed forms of every output schema that refers into them.
pub(super) struct ClosedTwin {
    /// The closed bodies, under the same names; a body with no closed form is `true` here.
    pub(super) definitions: Arc<Definitions>,
    /// Per definition (same index as the original): it and every definition it reaches have
    /// a closed form.
    pub(super) closable: Box<[bool]>,
}

impl Definitions {
    /// Definitions from `(name, schema)` pairs; a repeated name keeps the last schema.
    ///
    /// # Panics
    ///
    /// With more than `u32::MAX` definitions.
    pub fn new(definitions: impl IntoIterator<Item = (String, Value)>) -> Self {
        let sorted: std::collections::BTreeMap<String, Value> = definitions.into_iter().collect();
        let (names, bodies): (Vec<String>, Vec<Value>) = sorted.into_iter().unzip();
        let index: HashMap<String, u32> = names
            .iter()
            .enumerate()
            .map(|(i, name)| {
                let i = u32::try_from(i).expect("fewer than 2^32 definitions");
                (name.clone(), i)
            })
            .collect();
        let refs = bodies
            .iter()
            .map(|body| {
                let mut found = BTreeSet::new();
                collect_refs(body, &index, &mut found);
                found.into_iter().collect()
            })
            .collect();
        Self {
            names,
            bodies,
            refs,
            index,
            compiled: OnceLock::new(),
            closed: OnceLock::new(),
        }
    }

    /// Where the closed twin is kept.
    pub(super) fn closed_twin(&self) -> &OnceLock<ClosedTwin> {
        &self.closed
    }

    /// The compiled definitions, created empty at first use.
    pub(super) fn compiled(&self) -> &CompiledDefinitions {
        self.compiled
            .get_or_init(|| CompiledDefinitions::new(self.names.len()))
    }

    /// How many definitions there are.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// `true` when there are none.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// Every definition, by name, in name order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.names.iter().map(String::as_str).zip(&self.bodies)
    }

    /// The definition named `name`.
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.index.get(name).map(|&i| &self.bodies[i as usize])
    }

    /// The definitions `root` reaches, directly or through other definitions, sorted by name.
    fn reached_by(&self, root: &Value) -> BTreeSet<u32> {
        let mut direct = BTreeSet::new();
        collect_refs(root, &self.index, &mut direct);
        let mut reached = BTreeSet::new();
        let mut todo: Vec<u32> = direct.into_iter().collect();
        while let Some(id) = todo.pop() {
            if reached.insert(id) {
                todo.extend(
                    self.refs[id as usize]
                        .iter()
                        .filter(|next| !reached.contains(next)),
                );
            }
        }
        reached
    }
}

impl fmt::Debug for Definitions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Definitions")
            .field("names", &self.names)
            .finish_non_exhaustive()
    }
}

/// The definitions `value` refers to directly (`#/$defs/<name>` targets naming one in
/// `index`).
pub(super) fn collect_refs(value: &Value, index: &HashMap<String, u32>, found: &mut BTreeSet<u32>) {
    super::refs::for_each_ref(value, &mut |target| {
        if let Some(id) = super::refs::definition_of(target).and_then(|name| index.get(&*name)) {
            found.insert(*id);
        }
    });
}

/// A JSON Schema (2020-12) as an [`OperationSpec`](crate::OperationSpec) holds it.
///
/// It reads as the [`serde_json::Value`] of a self-contained schema (it derefs to one), and
/// is built from one (`Schema::from(json!(..))`, or `.into()`; the spec's builder methods
/// take either). [`Schema::with_definitions`] makes a schema whose `$ref`s point into
/// [`Definitions`] shared with other schemas: cloning it is cheap, and its self-contained
/// form is built at the first read and kept; serializing one that was never read writes the
/// same JSON without building it. Writing through
/// [`DerefMut`] turns a shared schema into an owned one.
///
/// ```
/// use opkit::schema::Schema;
/// use serde_json::json;
///
/// let schema = Schema::from(json!({"type": "integer"}));
/// assert_eq!(schema["type"], "integer");
/// assert_eq!(schema, json!({"type": "integer"}));
/// ```
#[derive(Clone)]
pub struct Schema(Repr);

#[derive(Clone)]
enum Repr {
    Owned(Value),
    Shared(Arc<SharedRoot>),
}

struct SharedRoot {
    root: Value,
    definitions: Arc<Definitions>,
    /// The self-contained form, built at the first read; never replaced once set.
    full: OnceLock<Value>,
}

impl SharedRoot {
    fn full(&self) -> &Value {
        self.full.get_or_init(|| self.build())
    }

    /// The root with the definitions it reaches in its `$defs`.
    fn build(&self) -> Value {
        let reached = self.definitions.reached_by(&self.root);
        if reached.is_empty() {
            return self.root.clone();
        }
        let mut defs: Map<String, Value> = reached
            .into_iter()
            .map(|id| {
                let id = id as usize;
                (
                    self.definitions.names[id].clone(),
                    self.definitions.bodies[id].clone(),
                )
            })
            .collect();
        match &self.root {
            Value::Object(map) => {
                let mut map = map.clone();
                if let Some(Value::Object(own)) = map.remove("$defs") {
                    // The root's own definitions win over shared ones of the same name.
                    defs.extend(own);
                }
                map.insert("$defs".into(), Value::Object(defs));
                Value::Object(map)
            }
            Value::Bool(true) => {
                Value::Object(Map::from_iter([("$defs".to_owned(), Value::Object(defs))]))
            }
            root => serde_json::json!({"allOf": [root], "$defs": defs}),
        }
    }
}

impl Schema {
    /// A self-contained schema.
    pub fn new(schema: Value) -> Self {
        Self(Repr::Owned(schema))
    }

    /// A schema whose `{"$ref": "#/$defs/<name>"}` references (and those of the definitions
    /// they reach) resolve in `definitions`. Read, it is `root` with a `$defs` holding exactly
    /// the definitions it reaches (beside the root's own `$defs`, which win on a name clash;
    /// a root that is not an object is wrapped in `allOf`, `true` becomes `{"$defs": ..}`).
    pub fn with_definitions(root: Value, definitions: Arc<Definitions>) -> Self {
        Self(Repr::Shared(Arc::new(SharedRoot {
            root,
            definitions,
            full: OnceLock::new(),
        })))
    }

    /// The self-contained schema (built now for a shared schema read for the first time).
    pub fn as_value(&self) -> &Value {
        match &self.0 {
            Repr::Owned(value) => value,
            Repr::Shared(shared) => shared.full(),
        }
    }

    /// The self-contained schema, owned.
    pub fn into_value(self) -> Value {
        match self.0 {
            Repr::Owned(value) => value,
            Repr::Shared(shared) => match Arc::try_unwrap(shared) {
                Ok(mut shared) => match shared.full.take() {
                    Some(full) => full,
                    None => shared.build(),
                },
                Err(shared) => shared.full().clone(),
            },
        }
    }

    /// The root as written: the whole schema when it is self-contained, the root without
    /// the shared definitions otherwise. Reading it builds nothing, so it answers questions
    /// about the root (its `type`, its keywords) at no cost.
    pub fn root(&self) -> &Value {
        match &self.0 {
            Repr::Owned(value) => value,
            Repr::Shared(shared) => &shared.root,
        }
    }

    /// The self-contained schema without keeping it: borrowed when it is at hand (a
    /// self-contained schema, or a shared one read before), else built for the caller alone,
    /// so that reading many shared schemas once (listing or serving them) does not hold
    /// every copy of the definitions they reach.
    pub fn transient_value(&self) -> Cow<'_, Value> {
        match &self.0 {
            Repr::Owned(value) => Cow::Borrowed(value),
            Repr::Shared(shared) => match shared.full.get() {
                Some(full) => Cow::Borrowed(full),
                None => Cow::Owned(shared.build()),
            },
        }
    }

    /// The shared definitions this schema refers into, if it was made with
    /// [`with_definitions`](Self::with_definitions).
    pub fn definitions(&self) -> Option<&Arc<Definitions>> {
        match &self.0 {
            Repr::Owned(_) => None,
            Repr::Shared(shared) => Some(&shared.definitions),
        }
    }

    /// `true` for the Unknown schema (see [`is_unknown`](super::is_unknown)); a shared schema
    /// answers without building its self-contained form.
    pub fn is_unknown(&self) -> bool {
        match &self.0 {
            Repr::Owned(value) => super::is_unknown(value),
            // An Unknown root holds no `$ref`, so it reaches no definition.
            Repr::Shared(shared) => super::is_unknown(&shared.root),
        }
    }
}

impl Deref for Schema {
    type Target = Value;

    fn deref(&self) -> &Value {
        self.as_value()
    }
}

impl DerefMut for Schema {
    fn deref_mut(&mut self) -> &mut Value {
        if let Repr::Shared(_) = &self.0 {
            let owned = std::mem::replace(self, Schema(Repr::Owned(Value::Null))).into_value();
            self.0 = Repr::Owned(owned);
        }
        match &mut self.0 {
            Repr::Owned(value) => value,
            Repr::Shared(_) => unreachable!("made owned above"),
        }
    }
}

impl From<Value> for Schema {
    fn from(schema: Value) -> Self {
        Self::new(schema)
    }
}

impl From<Schema> for Value {
    fn from(schema: Schema) -> Self {
        schema.into_value()
    }
}

impl AsRef<Value> for Schema {
    fn as_ref(&self) -> &Value {
        self.as_value()
    }
}

impl PartialEq for Schema {
    fn eq(&self, other: &Self) -> bool {
        if let (Repr::Shared(a), Repr::Shared(b)) = (&self.0, &other.0)
            && Arc::ptr_eq(&a.definitions, &b.definitions)
        {
            return a.root == b.root;
        }
        self.as_value() == other.as_value()
    }
}

impl PartialEq<Value> for Schema {
    fn eq(&self, other: &Value) -> bool {
        self.as_value() == other
    }
}

impl PartialEq<Schema> for Value {
    fn eq(&self, other: &Schema) -> bool {
        self == other.as_value()
    }
}

impl fmt::Debug for Schema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_value(), f)
    }
}

impl fmt::Display for Schema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self.as_value(), f)
    }
}

impl Serialize for Schema {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let shared = match &self.0 {
            Repr::Owned(value) => return value.serialize(serializer),
            Repr::Shared(shared) => shared,
        };
        if let Some(full) = shared.full.get() {
            return full.serialize(serializer);
        }
        // Not read yet: write the self-contained form without building (and keeping) it.
        let Value::Object(root) = &shared.root else {
            return shared.build().serialize(serializer);
        };
        if root.contains_key("$defs") {
            return shared.build().serialize(serializer);
        }
        let reached = shared.definitions.reached_by(&shared.root);
        if reached.is_empty() {
            return shared.root.serialize(serializer);
        }
        let mut map = serializer.serialize_map(Some(root.len() + 1))?;
        for (key, value) in root {
            map.serialize_entry(key, value)?;
        }
        map.serialize_entry(
            "$defs",
            &Reached {
                definitions: &shared.definitions,
                ids: &reached,
            },
        )?;
        map.end()
    }
}

/// Some of a [`Definitions`], serialized as a `$defs` object.
struct Reached<'a> {
    definitions: &'a Definitions,
    ids: &'a BTreeSet<u32>,
}

impl Serialize for Reached<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.ids.len()))?;
        for &id in self.ids {
            let id = id as usize;
            map.serialize_entry(&self.definitions.names[id], &self.definitions.bodies[id])?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Schema {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Value::deserialize(deserializer).map(Schema::new)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn definitions() -> Arc<Definitions> {
        Arc::new(Definitions::new([
            (
                "Node".to_owned(),
                json!({"type": "object", "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}, "tag": {"$ref": "#/$defs/Tag"}}}),
            ),
            ("Tag".to_owned(), json!({"type": "string"})),
            ("a/b".to_owned(), json!({"type": "null"})),
            ("Unused".to_owned(), json!({"type": "integer"})),
        ]))
    }

    #[test]
    fn reads_self_contained_with_exactly_the_reached_definitions() {
        let schema = Schema::with_definitions(
            json!({"type": "object", "properties": {"root": {"$ref": "#/$defs/Node"}, "odd": {"$ref": "#/$defs/a~1b"}}}),
            definitions(),
        );
        let expected = json!({
            "type": "object",
            "properties": {"root": {"$ref": "#/$defs/Node"}, "odd": {"$ref": "#/$defs/a~1b"}},
            "$defs": {
                "Node": definitions().get("Node").unwrap().clone(),
                "Tag": {"type": "string"},
                "a/b": {"type": "null"}
            }
        });
        // Serialized before the first read, then read, then serialized again: the same JSON.
        let written = serde_json::to_value(&schema).unwrap();
        assert_eq!(written, expected);
        assert_eq!(schema, expected);
        assert_eq!(serde_json::to_value(&schema).unwrap(), expected);
        assert_eq!(
            serde_json::to_string(&schema).unwrap(),
            serde_json::to_string(&expected).unwrap()
        );
        assert_eq!(schema.clone().into_value(), expected);
    }

    #[test]
    fn roots_without_references_or_objects() {
        let defs = definitions();
        let plain = Schema::with_definitions(json!({"type": "integer"}), defs.clone());
        assert_eq!(plain, json!({"type": "integer"}));
        assert!(Schema::with_definitions(json!(true), defs.clone()).is_unknown());
        assert!(!plain.is_unknown());
        let clone = plain.clone();
        assert!(Arc::ptr_eq(clone.definitions().unwrap(), &defs));
        assert_eq!(clone, plain);
    }

    #[test]
    fn the_root_and_a_transient_read_build_nothing_kept() {
        let schema = Schema::with_definitions(json!({"$ref": "#/$defs/Tag"}), definitions());
        assert_eq!(schema.root(), &json!({"$ref": "#/$defs/Tag"}));
        let transient = schema.transient_value();
        assert!(matches!(transient, Cow::Owned(_)));
        assert_eq!(transient["$defs"]["Tag"], json!({"type": "string"}));
        let Repr::Shared(shared) = &schema.0 else {
            unreachable!("made shared")
        };
        assert!(shared.full.get().is_none(), "not kept");
        assert_eq!(*schema.transient_value(), *schema.as_value());
        assert!(matches!(schema.transient_value(), Cow::Borrowed(_)));
        let owned = Schema::from(json!({"type": "integer"}));
        assert!(matches!(owned.transient_value(), Cow::Borrowed(_)));
        assert_eq!(owned.root(), &json!({"type": "integer"}));
    }

    #[test]
    fn writing_makes_a_shared_schema_owned() {
        let mut schema = Schema::with_definitions(json!({"$ref": "#/$defs/Tag"}), definitions());
        let untouched = schema.clone();
        schema["description"] = json!("a tag");
        assert!(schema.definitions().is_none());
        assert_eq!(schema["$defs"]["Tag"], json!({"type": "string"}));
        assert_eq!(untouched.get("description"), None);
        let read: Schema = serde_json::from_value(json!({"type": "string"})).unwrap();
        assert_eq!(read, Schema::from(json!({"type": "string"})));
    }
}
