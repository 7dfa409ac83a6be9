//! Normalization: cast a value to a schema with TypeBox `Value.Cast` semantics.
//!
//! [`cast`] is step 3 ("normalize") of the shared result pipeline: it reshapes a JSON value so
//! that it fits a JSON Schema 2020-12 (as schemars 1.x emits it), keeping everything that
//! already fits and replacing only what cannot fit. It never fails and never panics; the
//! validation step that follows reports whatever is still wrong.
//!
//! # What it does
//!
//! * **Objects** (`type: "object"`, or no `type` and `properties` / `additionalProperties` /
//!   `patternProperties`): a non-object is replaced by a created object. Declared properties
//!   are kept and cast to their subschema; a missing *required* property is created (see
//!   below); a missing optional one stays missing. Undeclared properties are **dropped**
//!   unless `additionalProperties` is explicitly `true` (kept as is) or a schema (kept, cast
//!   to it) — which is how a map type (`HashMap<String, T>`) keeps its entries. An object
//!   schema that declares no property at all (plain `{"type": "object"}`, a free-form
//!   object) keeps every entry: it means "any object", not "the empty object". Keys matching
//!   a `patternProperties` pattern are kept and cast to that schema. A key listed in
//!   `required` counts as declared. `unevaluatedProperties` is read like
//!   `additionalProperties`.
//! * **Arrays** (`type: "array"`, or no `type` and `items` / `prefixItems`): a non-array is
//!   replaced by a created array. Items are cast position-wise to `prefixItems`, the rest to
//!   `items` (or dropped when `items` is `false`); the pre-2020 tuple form (`items` as an
//!   array plus `additionalItems`) is read the same way. Then `uniqueItems: true` removes
//!   later duplicates, `maxItems` truncates and `minItems` pads with created items.
//! * **Primitives**: `type` may be a name or a list of names. A value whose JSON type is
//!   allowed is kept. `integer` accepts numbers with a zero fractional part and rewrites them
//!   as integers (`3.0` → `3`); `number` accepts integers.
//! * **`const` / `enum`**: a value equal to the constant or to a member is kept; anything
//!   else is replaced. Equality is JSON equality (`1 == 1.0`, key order ignored).
//! * **`$ref`** (`#`, `#/$defs/..`, `#/definitions/..`, any JSON pointer, with `~0`/`~1` and
//!   percent-decoding) resolves against the root schema. Sibling keywords of `$ref` apply as
//!   if both were members of an `allOf`. A reference that does not resolve locally (remote
//!   documents, anchors) leaves the value as it is.
//! * **`allOf`**: members are read as one merged view — object members pool their
//!   `properties` and `required`, `type`s are intersected, array members apply in turn.
//! * **`anyOf` / `oneOf`**: the first branch the value already fits (a structural check:
//!   types, `const`/`enum`, required properties, declared property and item shapes,
//!   `additionalProperties: false`) is chosen; a `null` value therefore stays `null` when a
//!   branch allows it. Otherwise the branch with the best TypeBox `ScoreUnion` score wins
//!   (for objects: declared properties present, fitting, and matching a `const`
//!   discriminator; ties go to the first branch). When no branch resembles the value at all
//!   (every score is zero), the value is replaced by a created one. The chosen branch is
//!   merged with its parent, so `{type: object, properties, oneOf}` (what schemars emits
//!   for a flattened enum) keeps the properties of both.
//! * **Boolean and empty schemas** (`true`, `false`, `{}`) leave the value as it is: nothing
//!   can be invented that satisfies `false`.
//!
//! A replaced value is *created* from the schema: its `default` (the nearest one, including
//! a `default` next to a `$ref`), else its `const`, else the first `enum` member, else `null`
//! when the schema allows `null` (so a mismatching `Option<T>` becomes `None`), else by type:
//! an object of its created required properties, an array of `minItems` created items, `""`,
//! `false`, `null`, or for numbers the lower bound (`minimum`, rounded up for integers;
//! `exclusiveMinimum` → the next integer above it), else `0` (or the upper bound when `0`
//! would exceed it). A schema with no type information creates `null`.
//!
//! # Deviations from TypeBox
//!
//! * **Constraints are not repaired.** Only type, `const` and `enum` mismatches replace a
//!   value. A string failing `minLength`, `pattern` or `format`, a number outside
//!   `minimum`/`maximum` or `multipleOf` is kept unchanged: no value can be invented that
//!   satisfies arbitrary constraints, keeping the original loses less information, and the
//!   validation step reports it.
//! * **Always walks.** TypeBox returns an already-valid value untouched; here undeclared
//!   properties are dropped even when the value is otherwise valid.
//! * **`additionalProperties: true` keeps extras** (TypeBox keeps them only for a schema).
//! * A union whose branches all score zero yields the created value of the union (which is
//!   `null` for a nullable union) rather than a cast to the first branch.
//!
//! # Limits
//!
//! Recursion through nested values and recursive schemas stops at [`CAST_MAX_DEPTH`]: deeper
//! values are kept unchanged and deeper created values are `null`. Branch selection spends
//! at most a fixed budget of structural checks per union (a check that runs out of budget
//! counts as fitting), and one call creates at most a fixed number of values (further
//! created values are `null`, and `minItems` padding stops). So `cast` terminates on any
//! schema, cyclic ones included, and treats malformed keywords (`{"type": 5}`,
//! `{"properties": []}`) as absent.

use std::borrow::Cow;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

use serde_json::{Map, Number, Value};

/// How deep `cast` follows nested schemas and values before it stops descending.
pub const CAST_MAX_DEPTH: usize = 64;

/// Structural checks one union branch selection may spend.
const MATCH_BUDGET: usize = 4096;
/// Values one `cast` call may create (defaults of missing properties, padding items, ...).
const CREATE_BUDGET: usize = 10_000;
/// Schema objects that one merged view (`$ref` targets, `allOf` members, union branches) holds.
const MAX_VIEW_MAPS: usize = 64;

type Keywords = Map<String, Value>;

/// Casts `value` to `schema` (JSON Schema 2020-12).
///
/// TypeBox `Value.Cast` semantics: what fits is kept; properties the schema does not declare
/// are dropped unless `additionalProperties` is `true` or a schema; missing required
/// properties are created; a value of the wrong type, or outside `const` / `enum`, is
/// replaced by the schema's `default` or by a value created from its type (`null` for a
/// nullable schema). Constraint failures (lengths, bounds, patterns, formats) are kept for
/// validation to report. `anyOf` / `oneOf` cast to the branch the value fits or resembles
/// most. `$ref`s resolve against `schema` itself; recursion stops at [`CAST_MAX_DEPTH`].
/// Never panics, whatever the schema or value.
///
/// ```
/// use opkit::schema::cast;
/// use serde_json::json;
///
/// let schema = json!({
///     "type": "object",
///     "properties": {
///         "name": {"type": "string"},
///         "age": {"type": "integer", "default": 18},
///         "tags": {"type": "array", "items": {"type": "string"}}
///     },
///     "required": ["name", "age"]
/// });
/// let value = json!({"name": "Ada", "age": "old", "tags": ["a", 1], "extra": true});
/// assert_eq!(
///     cast(&schema, value),
///     json!({"name": "Ada", "age": 18, "tags": ["a", ""]})
/// );
/// ```
pub fn cast(schema: &Value, value: Value) -> Value {
    cast_with_root(schema, schema, value)
}

/// Casts `value` to `schema`, resolving `$ref`s against `root` instead of `schema`.
///
/// Useful when `schema` is a fragment of a larger document (for example a component of an
/// OpenAPI description) whose references point into that document.
pub fn cast_with_root(root: &Value, schema: &Value, value: Value) -> Value {
    Caster::new(root).cast(schema, value, 0)
}

/// One `cast` call: the root for `$ref`s, compiled patterns, and the creation budget.
struct Caster<'a> {
    root: &'a Value,
    patterns: RefCell<Vec<(&'a str, Option<jsonschema::Validator>)>>,
    created: Cell<usize>,
}

impl<'a> Caster<'a> {
    fn new(root: &'a Value) -> Self {
        Self {
            root,
            patterns: RefCell::new(Vec::new()),
            created: Cell::new(0),
        }
    }

    // ----- casting -------------------------------------------------------------------------

    fn cast(&self, schema: &'a Value, value: Value, depth: usize) -> Value {
        if depth >= CAST_MAX_DEPTH {
            return value;
        }
        let mut view = self.view(schema);
        if view.opaque || view.maps.is_empty() {
            return value;
        }
        if !self.select_branches(&mut view, Some(&value), depth) {
            return self.create(schema, depth);
        }
        if view.opaque {
            return value;
        }
        self.cast_in_view(&view, value, depth)
    }

    /// Casts `value` against an expanded view (unions already resolved to branches).
    fn cast_in_view(&self, view: &View<'a>, value: Value, depth: usize) -> Value {
        if let Some(constant) = view.first("const") {
            return if json_equal(constant, &value) {
                value
            } else {
                self.create_in_view(view, depth)
            };
        }
        let mut enums = view.enums().peekable();
        if enums.peek().is_some() {
            let member_of_all = enums.all(|members| members.iter().any(|m| json_equal(m, &value)));
            return if member_of_all {
                value
            } else {
                self.create_in_view(view, depth)
            };
        }
        let Some(types) = view.types() else {
            return value;
        };
        if types.is_empty() {
            return value; // contradictory types: nothing fits, keep the value
        }
        if !types.accepts(&value) {
            return self.create_in_view(view, depth);
        }
        match value {
            Value::Number(number) if types.integer_only() => integer_value(number),
            Value::Object(object) if types.contains(Types::OBJECT) => {
                self.cast_object(view, object, depth)
            }
            Value::Array(items) if types.contains(Types::ARRAY) => {
                self.cast_array(view, items, depth)
            }
            other => other,
        }
    }

    fn cast_object(&self, view: &View<'a>, mut object: Keywords, depth: usize) -> Value {
        let maps = view.maps.as_slice();
        let extra = Extra::of(maps);
        object.retain(|key, slot| self.cast_entry(maps, &extra, key, slot, depth + 1));
        for key in required_keys(maps) {
            if !object.contains_key(key) {
                let created = self.create_property(maps, &extra, key, depth + 1);
                object.insert(key.to_owned(), created);
            }
        }
        Value::Object(object)
    }

    /// Casts one entry of an object in place; `false` drops it.
    fn cast_entry(
        &self,
        maps: &[&'a Keywords],
        extra: &Extra<'a>,
        key: &str,
        slot: &mut Value,
        depth: usize,
    ) -> bool {
        let mut declared = false;
        for schema in property_schemas(maps, key) {
            declared = true;
            *slot = self.cast(schema, std::mem::take(slot), depth);
        }
        for schema in self.pattern_schemas(maps, key) {
            declared = true;
            *slot = self.cast(schema, std::mem::take(slot), depth);
        }
        if declared || is_required(maps, key) {
            return true;
        }
        match extra {
            Extra::Absent | Extra::Forbidden => false,
            Extra::Allowed => true,
            Extra::Schemas(schemas) => {
                for schema in schemas {
                    *slot = self.cast(schema, std::mem::take(slot), depth);
                }
                true
            }
        }
    }

    fn cast_array(&self, view: &View<'a>, mut items: Vec<Value>, depth: usize) -> Value {
        let maps = view.maps.as_slice();
        let mut kept = items.len();
        for (index, slot) in items.iter_mut().enumerate() {
            if !self.cast_item(maps, index, slot, depth + 1) {
                kept = index;
                break;
            }
        }
        items.truncate(kept);
        if maps
            .iter()
            .any(|m| m.get("uniqueItems") == Some(&Value::Bool(true)))
        {
            remove_duplicates(&mut items);
        }
        if let Some(max) = count_keyword(maps, "maxItems").min() {
            items.truncate(max);
        }
        if let Some(min) = count_keyword(maps, "minItems").max() {
            while items.len() < min && self.spend_creation() {
                let created = self.create_item(maps, items.len(), depth + 1);
                items.push(created);
            }
        }
        Value::Array(items)
    }

    /// Casts the item at `index` in place; `false` means the schema forbids it (and all later
    /// items).
    fn cast_item(
        &self,
        maps: &[&'a Keywords],
        index: usize,
        slot: &mut Value,
        depth: usize,
    ) -> bool {
        for map in maps {
            match item_schema(map, index) {
                ItemSchema::Forbidden => return false,
                ItemSchema::Schema(schema) => {
                    *slot = self.cast(schema, std::mem::take(slot), depth)
                }
                ItemSchema::Unconstrained => {}
            }
        }
        true
    }

    // ----- creating ------------------------------------------------------------------------

    /// TypeBox `Create`: a value for `schema` made from its default, const, enum or type.
    fn create(&self, schema: &'a Value, depth: usize) -> Value {
        if depth >= CAST_MAX_DEPTH || !self.spend_creation() {
            return Value::Null;
        }
        let mut view = self.view(schema);
        // Creating selects a union's first branch that allows `null`, else its first branch.
        self.select_branches(&mut view, None, depth);
        self.create_in_view(&view, depth)
    }

    fn create_in_view(&self, view: &View<'a>, depth: usize) -> Value {
        if let Some(default) = view.first("default") {
            return default.clone();
        }
        if let Some(constant) = view.first("const") {
            return constant.clone();
        }
        if let Some(member) = view.enums().find_map(|members| members.first()) {
            return member.clone();
        }
        let Some(types) = view.types() else {
            return Value::Null;
        };
        if types.contains(Types::NULL) {
            return Value::Null;
        }
        match view.preferred_type(types) {
            Types::OBJECT => self.create_object(view.maps.as_slice(), depth),
            Types::ARRAY => self.create_array(view.maps.as_slice(), depth),
            Types::STRING => Value::String(String::new()),
            Types::NUMBER => create_number(view.maps.as_slice(), false),
            Types::INTEGER => create_number(view.maps.as_slice(), true),
            Types::BOOLEAN => Value::Bool(false),
            _ => Value::Null,
        }
    }

    fn create_object(&self, maps: &[&'a Keywords], depth: usize) -> Value {
        let extra = Extra::of(maps);
        let mut object = Map::new();
        for key in required_keys(maps) {
            if !object.contains_key(key) {
                let created = self.create_property(maps, &extra, key, depth + 1);
                object.insert(key.to_owned(), created);
            }
        }
        Value::Object(object)
    }

    /// Creates the value of a missing required property.
    fn create_property(
        &self,
        maps: &[&'a Keywords],
        extra: &Extra<'a>,
        key: &str,
        depth: usize,
    ) -> Value {
        let schema = property_schemas(maps, key)
            .next()
            .or_else(|| self.pattern_schemas(maps, key).into_iter().next())
            .or(match extra {
                Extra::Schemas(schemas) => schemas.first().copied(),
                _ => None,
            });
        schema.map_or(Value::Null, |schema| self.create(schema, depth))
    }

    fn create_array(&self, maps: &[&'a Keywords], depth: usize) -> Value {
        let min = count_keyword(maps, "minItems").max().unwrap_or(0);
        let mut items = Vec::new();
        while items.len() < min && self.spend_creation() {
            items.push(self.create_item(maps, items.len(), depth + 1));
        }
        Value::Array(items)
    }

    fn create_item(&self, maps: &[&'a Keywords], index: usize, depth: usize) -> Value {
        let schema = maps.iter().find_map(|map| match item_schema(map, index) {
            ItemSchema::Schema(schema) => Some(schema),
            _ => None,
        });
        schema.map_or(Value::Null, |schema| self.create(schema, depth))
    }

    /// Counts one created value; `false` once the call's creation budget is spent.
    fn spend_creation(&self) -> bool {
        let created = self.created.get();
        self.created.set(created.saturating_add(1));
        created < CREATE_BUDGET
    }

    // ----- unions --------------------------------------------------------------------------

    /// Chooses a branch of every `anyOf` / `oneOf` in the view for `value` and merges it into
    /// the view. `false` when some union has no branch that resembles the value at all.
    /// Without a value (creating): the first branch allowing `null`, else the first branch.
    fn select_branches(&self, view: &mut View<'a>, value: Option<&Value>, depth: usize) -> bool {
        let mut index = 0;
        while index < view.maps.len() {
            let map = view.maps[index];
            for keyword in ["anyOf", "oneOf"] {
                let Some(Value::Array(branches)) = map.get(keyword) else {
                    continue;
                };
                if branches.is_empty() {
                    continue;
                }
                let selected = match value {
                    Some(value) => self.select_branch(branches, value, depth),
                    None => self
                        .select_branch(branches, &Value::Null, depth)
                        .or(branches.first()),
                };
                match selected {
                    Some(branch) => self.collect(branch, view),
                    None => return false,
                }
            }
            index += 1;
        }
        true
    }

    /// The first branch `value` fits, else the best-scoring one (`None` if all score zero).
    fn select_branch(
        &self,
        branches: &'a [Value],
        value: &Value,
        depth: usize,
    ) -> Option<&'a Value> {
        let mut budget = MATCH_BUDGET;
        if let Some(fitting) = branches
            .iter()
            .find(|branch| self.matches(branch, value, depth + 1, &mut budget))
        {
            return Some(fitting);
        }
        let mut best = None;
        let mut best_score = 0;
        for branch in branches {
            let score = self.score(branch, value, depth + 1, &mut budget);
            if score > best_score {
                best = Some(branch);
                best_score = score;
            }
        }
        best
    }

    /// TypeBox `ScoreUnion`: how much `value` resembles `branch`.
    fn score(&self, branch: &'a Value, value: &Value, depth: usize, budget: &mut usize) -> usize {
        let view = self.view(branch);
        if !view.types().is_none_or(|types| types.accepts(value)) {
            return 0;
        }
        let Value::Object(object) = value else {
            return 1;
        };
        let declared: Vec<(&str, &'a Value)> = view
            .maps
            .iter()
            .filter_map(|map| map.get("properties").and_then(Value::as_object))
            .flat_map(|properties| properties.iter().map(|(k, v)| (k.as_str(), v)))
            .collect();
        let discriminator_weight = 2 * declared.len() + 1;
        let mut score = 1;
        for (key, schema) in declared {
            let Some(property) = object.get(key) else {
                continue;
            };
            score += 1;
            if self.matches(schema, property, depth + 1, budget) {
                score += 1;
            }
            if self
                .view(schema)
                .first("const")
                .is_some_and(|constant| json_equal(constant, property))
            {
                score += discriminator_weight;
            }
        }
        score
    }

    /// Structural check: does `value` already have the shape of `schema`? Constraints
    /// (lengths, bounds, patterns, formats) are not checked. Out of depth or budget → `true`.
    fn matches(&self, schema: &'a Value, value: &Value, depth: usize, budget: &mut usize) -> bool {
        if depth >= CAST_MAX_DEPTH || *budget == 0 {
            return true;
        }
        *budget -= 1;
        let view = self.view(schema);
        if view.opaque {
            return true;
        }
        let maps = view.maps.as_slice();
        if maps
            .iter()
            .filter_map(|map| map.get("const"))
            .any(|constant| !json_equal(constant, value))
        {
            return false;
        }
        if view
            .enums()
            .any(|members| !members.iter().any(|m| json_equal(m, value)))
        {
            return false;
        }
        let types = view.types();
        if types.is_some_and(|types| !types.accepts(value)) {
            return false;
        }
        for map in maps {
            for keyword in ["anyOf", "oneOf"] {
                if let Some(Value::Array(branches)) = map.get(keyword)
                    && !branches.is_empty()
                    && !branches
                        .iter()
                        .any(|branch| self.matches(branch, value, depth + 1, budget))
                {
                    return false;
                }
            }
        }
        let types = types.unwrap_or(Types::NONE);
        match value {
            Value::Object(object) if types.contains(Types::OBJECT) => {
                self.matches_object(maps, object, depth, budget)
            }
            Value::Array(items) if types.contains(Types::ARRAY) => {
                self.matches_array(maps, items, depth, budget)
            }
            _ => true,
        }
    }

    fn matches_object(
        &self,
        maps: &[&'a Keywords],
        object: &Keywords,
        depth: usize,
        budget: &mut usize,
    ) -> bool {
        if required_keys(maps).any(|key| !object.contains_key(key)) {
            return false;
        }
        let extra = Extra::of(maps);
        object.iter().all(|(key, property)| {
            let mut declared = false;
            for schema in property_schemas(maps, key).chain(self.pattern_schemas(maps, key)) {
                declared = true;
                if !self.matches(schema, property, depth + 1, budget) {
                    return false;
                }
            }
            if declared || is_required(maps, key) {
                return true;
            }
            match &extra {
                Extra::Forbidden => false,
                Extra::Absent | Extra::Allowed => true,
                Extra::Schemas(schemas) => schemas
                    .iter()
                    .all(|schema| self.matches(schema, property, depth + 1, budget)),
            }
        })
    }

    fn matches_array(
        &self,
        maps: &[&'a Keywords],
        items: &[Value],
        depth: usize,
        budget: &mut usize,
    ) -> bool {
        items.iter().enumerate().all(|(index, item)| {
            maps.iter().all(|map| match item_schema(map, index) {
                ItemSchema::Forbidden => false,
                ItemSchema::Schema(schema) => self.matches(schema, item, depth + 1, budget),
                ItemSchema::Unconstrained => true,
            })
        })
    }

    // ----- schema views and references -----------------------------------------------------

    /// The schema objects that apply to one value: `schema`, its `$ref` targets and `allOf`
    /// members, transitively, each once.
    fn view(&self, schema: &'a Value) -> View<'a> {
        let mut view = View::default();
        self.collect(schema, &mut view);
        view
    }

    fn collect(&self, schema: &'a Value, view: &mut View<'a>) {
        let Value::Object(map) = schema else {
            return; // `true`, `false` and malformed schemas constrain nothing
        };
        if view.maps.len() >= MAX_VIEW_MAPS || view.maps.iter().any(|m| std::ptr::eq(*m, map)) {
            return;
        }
        view.maps.push(map);
        if let Some(Value::String(reference)) = map.get("$ref") {
            match self.resolve(reference) {
                Some(target) => self.collect(target, view),
                None => view.opaque = true,
            }
        }
        if let Some(Value::Array(members)) = map.get("allOf") {
            for member in members {
                self.collect(member, view);
            }
        }
    }

    /// Resolves a local reference (`#`, `#/json/pointer`, or the root `$id` followed by one).
    fn resolve(&self, reference: &str) -> Option<&'a Value> {
        let root_id = self.root.get("$id").and_then(Value::as_str);
        let local = match root_id.and_then(|id| reference.strip_prefix(id)) {
            Some("") => return Some(self.root),
            Some(rest) => rest,
            None => reference,
        };
        let fragment = percent_decode(local.strip_prefix('#')?)?;
        if fragment.is_empty() {
            return Some(self.root);
        }
        fragment
            .strip_prefix('/')?
            .split('/')
            .try_fold(self.root, |node, token| {
                let token = unescape_pointer_token(token);
                match node {
                    Value::Object(map) => map.get(token.as_ref()),
                    Value::Array(items) => token.parse::<usize>().ok().and_then(|i| items.get(i)),
                    _ => None,
                }
            })
    }

    /// The `patternProperties` schemas whose pattern matches `key`.
    fn pattern_schemas(&self, maps: &[&'a Keywords], key: &str) -> Vec<&'a Value> {
        let mut schemas = Vec::new();
        for map in maps {
            let Some(Value::Object(patterns)) = map.get("patternProperties") else {
                continue;
            };
            for (pattern, schema) in patterns {
                if self.pattern_matches(pattern, key) {
                    schemas.push(schema);
                }
            }
        }
        schemas
    }

    /// ECMA-262 regex match through the validator's own `pattern` keyword, compiled once per
    /// pattern and call. An invalid pattern matches nothing.
    fn pattern_matches(&self, pattern: &'a str, key: &str) -> bool {
        let mut cache = self.patterns.borrow_mut();
        let index = match cache.iter().position(|(p, _)| std::ptr::eq(*p, pattern)) {
            Some(index) => index,
            None => {
                let schema = serde_json::json!({ "pattern": pattern });
                cache.push((pattern, jsonschema::validator_for(&schema).ok()));
                cache.len() - 1
            }
        };
        cache[index]
            .1
            .as_ref()
            .is_some_and(|validator| validator.is_valid(&Value::String(key.to_owned())))
    }
}

// ----- views ---------------------------------------------------------------------------------

/// The schema objects that apply together to one value.
#[derive(Default)]
struct View<'a> {
    maps: Vec<&'a Keywords>,
    /// A `$ref` could not be resolved locally: the value is left alone.
    opaque: bool,
}

impl<'a> View<'a> {
    fn first(&self, keyword: &str) -> Option<&'a Value> {
        self.maps.iter().find_map(|map| map.get(keyword))
    }

    fn enums(&self) -> impl Iterator<Item = &'a Vec<Value>> + '_ {
        self.maps
            .iter()
            .filter_map(|map| map.get("enum").and_then(Value::as_array))
    }

    /// The allowed JSON types: the intersection of every `type`, or, when no member has one,
    /// the types implied by object / array keywords. `None`: no type information.
    fn types(&self) -> Option<Types> {
        let explicit = self
            .maps
            .iter()
            .filter_map(|map| map.get("type").and_then(Types::parse))
            .reduce(Types::intersect);
        if explicit.is_some() {
            return explicit;
        }
        let mut implied = Types::NONE;
        for map in &self.maps {
            if implies_object(map) {
                implied = implied.union(Types::OBJECT);
            }
            if implies_array(map) {
                implied = implied.union(Types::ARRAY);
            }
        }
        (!implied.is_empty()).then_some(implied)
    }

    /// The single type to create: the first listed `type` name that `allowed` contains.
    fn preferred_type(&self, allowed: Types) -> Types {
        let listed = self
            .maps
            .iter()
            .filter_map(|map| map.get("type"))
            .flat_map(type_names)
            .filter_map(Value::as_str)
            .map(Types::single)
            .find(|single| !single.is_empty() && allowed.contains(*single));
        listed.unwrap_or_else(|| {
            [
                Types::OBJECT,
                Types::ARRAY,
                Types::STRING,
                Types::NUMBER,
                Types::INTEGER,
                Types::BOOLEAN,
            ]
            .into_iter()
            .find(|single| allowed.contains(*single))
            .unwrap_or(Types::NONE)
        })
    }
}

/// Has well-formed object keywords (`properties`, `patternProperties`, `additionalProperties`).
fn implies_object(map: &Keywords) -> bool {
    map.get("properties").is_some_and(Value::is_object)
        || map.get("patternProperties").is_some_and(Value::is_object)
        || map
            .get("additionalProperties")
            .is_some_and(|schema| schema.is_object() || schema.is_boolean())
}

/// Has well-formed array keywords (`prefixItems`, `items`).
fn implies_array(map: &Keywords) -> bool {
    map.get("prefixItems").is_some_and(Value::is_array)
        || map
            .get("items")
            .is_some_and(|schema| schema.is_object() || schema.is_boolean() || schema.is_array())
}

/// The names a `type` keyword lists, in order.
fn type_names(keyword: &Value) -> &[Value] {
    match keyword {
        Value::Array(names) => names,
        Value::String(_) => std::slice::from_ref(keyword),
        _ => &[],
    }
}

/// What happens to object keys no schema declares.
enum Extra<'a> {
    /// No `additionalProperties` next to declared properties: dropped when casting, allowed
    /// when matching.
    Absent,
    /// `additionalProperties: false` somewhere: dropped, and a mismatch.
    Forbidden,
    /// `additionalProperties: true` (and nothing forbids): kept as is.
    Allowed,
    /// `additionalProperties` schemas: kept, cast to each.
    Schemas(Vec<&'a Value>),
}

impl<'a> Extra<'a> {
    fn of(maps: &[&'a Keywords]) -> Self {
        let mut extra = Extra::Absent;
        for map in maps {
            for keyword in ["additionalProperties", "unevaluatedProperties"] {
                match map.get(keyword) {
                    Some(Value::Bool(false)) => return Extra::Forbidden,
                    Some(Value::Bool(true)) => {
                        if matches!(extra, Extra::Absent) {
                            extra = Extra::Allowed;
                        }
                    }
                    Some(schema @ Value::Object(_)) => match &mut extra {
                        Extra::Schemas(schemas) => schemas.push(schema),
                        _ => extra = Extra::Schemas(vec![schema]),
                    },
                    _ => {}
                }
            }
        }
        let declares_keys = maps
            .iter()
            .any(|map| map.contains_key("properties") || map.contains_key("patternProperties"));
        if matches!(extra, Extra::Absent) && !declares_keys {
            // `{"type": "object"}` declares no key at all: it means "any object", not
            // "an empty object", so its entries are kept.
            return Extra::Allowed;
        }
        extra
    }
}

enum ItemSchema<'a> {
    Schema(&'a Value),
    Forbidden,
    Unconstrained,
}

/// The schema one map gives the item at `index` (`prefixItems` then `items`, or the
/// pre-2020 array form of `items` then `additionalItems`).
fn item_schema<'a>(map: &'a Keywords, index: usize) -> ItemSchema<'a> {
    let (prefix, rest) = match (map.get("prefixItems"), map.get("items")) {
        (Some(Value::Array(prefix)), rest) => (Some(prefix), rest),
        (_, Some(Value::Array(prefix))) => (Some(prefix), map.get("additionalItems")),
        (_, rest) => (None, rest),
    };
    if let Some(schema) = prefix.and_then(|prefix| prefix.get(index)) {
        return ItemSchema::Schema(schema);
    }
    match rest {
        Some(Value::Bool(false)) => ItemSchema::Forbidden,
        Some(schema @ (Value::Object(_) | Value::Bool(true))) => ItemSchema::Schema(schema),
        _ => ItemSchema::Unconstrained,
    }
}

fn property_schemas<'a, 'k>(
    maps: &'k [&'a Keywords],
    key: &'k str,
) -> impl Iterator<Item = &'a Value> + 'k {
    maps.iter().filter_map(move |map| {
        map.get("properties")
            .and_then(Value::as_object)
            .and_then(|properties| properties.get(key))
    })
}

fn required_keys<'a>(maps: &[&'a Keywords]) -> impl Iterator<Item = &'a str> {
    maps.iter()
        .filter_map(|map| map.get("required").and_then(Value::as_array))
        .flatten()
        .filter_map(Value::as_str)
}

fn is_required(maps: &[&Keywords], key: &str) -> bool {
    required_keys(maps).any(|required| required == key)
}

/// Every non-negative integer value of `keyword` (`minItems`, `maxItems`) across the maps.
fn count_keyword<'m>(maps: &'m [&Keywords], keyword: &'m str) -> impl Iterator<Item = usize> + 'm {
    maps.iter()
        .filter_map(move |map| map.get(keyword).and_then(Value::as_u64))
        .map(|count| usize::try_from(count).unwrap_or(usize::MAX))
}

// ----- types ---------------------------------------------------------------------------------

/// A set of JSON Schema types. `number` includes `integer`.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Types(u8);

impl Types {
    const NONE: Types = Types(0);
    const NULL: Types = Types(1);
    const BOOLEAN: Types = Types(1 << 1);
    const OBJECT: Types = Types(1 << 2);
    const ARRAY: Types = Types(1 << 3);
    const NUMBER: Types = Types(1 << 4);
    const INTEGER: Types = Types(1 << 5);
    const STRING: Types = Types(1 << 6);

    /// The set a `type` keyword allows; `None` when it is malformed or names no known type.
    fn parse(keyword: &Value) -> Option<Types> {
        let types = match keyword {
            Value::String(name) => Types::named(name),
            Value::Array(names) => names
                .iter()
                .filter_map(Value::as_str)
                .map(Types::named)
                .fold(Types::NONE, Types::union),
            _ => Types::NONE,
        };
        (!types.is_empty()).then_some(types)
    }

    /// The set one type name allows (`number` allows integers too).
    fn named(name: &str) -> Types {
        match name {
            "number" => Types::NUMBER.union(Types::INTEGER),
            other => Types::single(other),
        }
    }

    /// The one bit a type name stands for.
    fn single(name: &str) -> Types {
        match name {
            "null" => Types::NULL,
            "boolean" => Types::BOOLEAN,
            "object" => Types::OBJECT,
            "array" => Types::ARRAY,
            "number" => Types::NUMBER,
            "integer" => Types::INTEGER,
            "string" => Types::STRING,
            _ => Types::NONE,
        }
    }

    /// The type of a JSON value; integral numbers (`3`, `3.0`) are `integer`.
    fn of(value: &Value) -> Types {
        match value {
            Value::Null => Types::NULL,
            Value::Bool(_) => Types::BOOLEAN,
            Value::Number(number) if is_integral(number) => Types::INTEGER,
            Value::Number(_) => Types::NUMBER,
            Value::String(_) => Types::STRING,
            Value::Array(_) => Types::ARRAY,
            Value::Object(_) => Types::OBJECT,
        }
    }

    fn union(self, other: Types) -> Types {
        Types(self.0 | other.0)
    }

    fn intersect(self, other: Types) -> Types {
        Types(self.0 & other.0)
    }

    fn contains(self, other: Types) -> bool {
        !other.is_empty() && self.0 & other.0 == other.0
    }

    fn is_empty(self) -> bool {
        self.0 == 0
    }

    fn accepts(self, value: &Value) -> bool {
        self.contains(Types::of(value))
    }

    fn integer_only(self) -> bool {
        self.contains(Types::INTEGER) && !self.contains(Types::NUMBER)
    }
}

// ----- numbers -------------------------------------------------------------------------------

/// A JSON number classified by value, not by representation.
#[derive(Clone, Copy, PartialEq)]
enum Numeric {
    Integer(i128),
    Fraction(f64),
}

impl Numeric {
    fn of(number: &Number) -> Numeric {
        if let Some(n) = number.as_i64() {
            return Numeric::Integer(i128::from(n));
        }
        if let Some(n) = number.as_u64() {
            return Numeric::Integer(i128::from(n));
        }
        let float = number.as_f64().unwrap_or(f64::NAN);
        // 2^120 is far beyond any integer JSON numbers carry exactly and inside i128.
        if float.is_finite() && float.fract() == 0.0 && float.abs() < 1.329_228e36 {
            #[allow(clippy::cast_possible_truncation)]
            return Numeric::Integer(float as i128);
        }
        Numeric::Fraction(float)
    }
}

/// Zero fractional part, whatever the magnitude (`1e300` is an integer for JSON Schema).
fn is_integral(number: &Number) -> bool {
    number.is_i64()
        || number.is_u64()
        || number
            .as_f64()
            .is_some_and(|float| float.is_finite() && float.fract() == 0.0)
}

/// Rewrites an integral number held as a float (`3.0`) as an integer (`3`).
fn integer_value(number: Number) -> Value {
    if number.is_f64()
        && let Numeric::Integer(n) = Numeric::of(&number)
    {
        if let Ok(n) = i64::try_from(n) {
            return Value::from(n);
        }
        if let Ok(n) = u64::try_from(n) {
            return Value::from(n);
        }
    }
    Value::Number(number)
}

/// A number for a `number` / `integer` schema: its lower bound, else `0` unless the upper
/// bound excludes it.
fn create_number(maps: &[&Keywords], integer: bool) -> Value {
    let bound = |inclusive: &str, exclusive: &str, pick_max: bool| -> Option<(f64, bool)> {
        let mut best: Option<(f64, bool)> = None;
        for map in maps {
            let plain = map.get(inclusive).and_then(Value::as_f64);
            // Draft 4 / OpenAPI 3.0: `exclusiveMinimum: true` makes `minimum` exclusive.
            let legacy_exclusive = map.get(exclusive) == Some(&Value::Bool(true));
            let candidates = [
                plain.map(|v| (v, legacy_exclusive)),
                map.get(exclusive)
                    .and_then(Value::as_f64)
                    .map(|v| (v, true)),
            ];
            for (value, excl) in candidates.into_iter().flatten() {
                let stricter = best.is_none_or(|(current, current_excl)| {
                    let further = if pick_max {
                        value > current
                    } else {
                        value < current
                    };
                    further || (value == current && excl && !current_excl)
                });
                if stricter {
                    best = Some((value, excl));
                }
            }
        }
        best
    };
    if let Some((low, exclusive)) = bound("minimum", "exclusiveMinimum", true) {
        let value = match (exclusive, integer) {
            (true, _) => low.floor() + 1.0,
            (false, true) => low.ceil(),
            (false, false) => low,
        };
        return number_value(value);
    }
    if let Some((high, exclusive)) = bound("maximum", "exclusiveMaximum", false)
        && (high < 0.0 || (exclusive && high <= 0.0))
    {
        let value = match (exclusive, integer) {
            (true, _) => high.ceil() - 1.0,
            (false, true) => high.floor(),
            (false, false) => high,
        };
        return number_value(value);
    }
    Value::from(0)
}

/// `value` as an integer when it is integral and fits `i64`, else as a float (`0` if not
/// finite).
fn number_value(value: f64) -> Value {
    const I64_BOUND: f64 = 9_223_372_036_854_775_808.0; // 2^63
    if value.fract() == 0.0 && (-I64_BOUND..I64_BOUND).contains(&value) {
        #[allow(clippy::cast_possible_truncation)]
        return Value::from(value as i64);
    }
    Number::from_f64(value).map_or(Value::from(0), Value::Number)
}

// ----- JSON equality and uniqueness ----------------------------------------------------------

/// JSON Schema equality: numbers compare by value (`1 == 1.0`), objects ignore key order.
fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => Numeric::of(x) == Numeric::of(y),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| json_equal(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(key, x)| y.get(key).is_some_and(|y| json_equal(x, y)))
        }
        _ => a == b,
    }
}

/// A hash consistent with [`json_equal`].
fn json_hash(value: &Value, state: &mut impl Hasher) {
    match value {
        Value::Null => 0u8.hash(state),
        Value::Bool(b) => (1u8, b).hash(state),
        Value::Number(number) => match Numeric::of(number) {
            Numeric::Integer(n) => (2u8, n).hash(state),
            Numeric::Fraction(f) => (3u8, f.to_bits()).hash(state),
        },
        Value::String(s) => (4u8, s).hash(state),
        Value::Array(items) => {
            (5u8, items.len()).hash(state);
            for item in items {
                json_hash(item, state);
            }
        }
        Value::Object(object) => {
            // Order-independent: combine the entries' own hashes commutatively.
            let combined = object.iter().fold(0u64, |acc, (key, value)| {
                let mut entry = DefaultHasher::new();
                key.hash(&mut entry);
                json_hash(value, &mut entry);
                acc.wrapping_add(entry.finish())
            });
            (6u8, object.len(), combined).hash(state);
        }
    }
}

/// Removes every item equal to an earlier one, keeping order.
fn remove_duplicates(items: &mut Vec<Value>) {
    let mut kept: Vec<Value> = Vec::with_capacity(items.len());
    let mut buckets: HashMap<u64, Vec<usize>> = HashMap::new();
    for item in items.drain(..) {
        let mut hasher = DefaultHasher::new();
        json_hash(&item, &mut hasher);
        let bucket = buckets.entry(hasher.finish()).or_default();
        if bucket.iter().any(|&index| json_equal(&kept[index], &item)) {
            continue;
        }
        bucket.push(kept.len());
        kept.push(item);
    }
    *items = kept;
}

// ----- JSON pointers -------------------------------------------------------------------------

/// Decodes `%XX` escapes of a URI fragment; `None` if the result is not UTF-8.
fn percent_decode(fragment: &str) -> Option<Cow<'_, str>> {
    if !fragment.contains('%') {
        return Some(Cow::Borrowed(fragment));
    }
    let bytes = fragment.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        let escaped = (bytes[index] == b'%')
            .then(|| bytes.get(index + 1..index + 3))
            .flatten()
            .filter(|hex| hex.iter().all(u8::is_ascii_hexdigit))
            .and_then(|hex| std::str::from_utf8(hex).ok())
            .and_then(|hex| u8::from_str_radix(hex, 16).ok());
        match escaped {
            Some(byte) => {
                decoded.push(byte);
                index += 3;
            }
            None => {
                decoded.push(bytes[index]);
                index += 1;
            }
        }
    }
    String::from_utf8(decoded).ok().map(Cow::Owned)
}

/// RFC 6901: `~1` → `/`, then `~0` → `~`.
fn unescape_pointer_token(token: &str) -> Cow<'_, str> {
    if token.contains('~') {
        Cow::Owned(token.replace("~1", "/").replace("~0", "~"))
    } else {
        Cow::Borrowed(token)
    }
}
