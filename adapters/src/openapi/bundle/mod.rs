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

mod walker;

use super::document::join_pointer;
use super::error::MapError;
use super::refs::{MAX_REF_HOPS, Resolver};
use super::sanitize::Sanitizer;
use serde_json::{Map, Value, json};
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap, HashSet};
use walker::Walker;

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
struct BundleState {
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
    inner: RefCell<BundleState>,
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
            inner: RefCell::new(BundleState::default()),
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
        Some(name) if !name.contains('/') => opkit::schema::pointer::unescape(name).into_owned(),
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
mod tests;
