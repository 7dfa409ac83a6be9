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

mod array;
mod check;
mod create;
mod json;
mod object;
mod types;
mod union;
mod view;

use std::cell::{Cell, RefCell};

use serde_json::{Map, Value};

use json::{integer_value, json_equal};
use types::Types;
use view::View;

/// How deep `cast` follows nested schemas and values before it stops descending.
pub const CAST_MAX_DEPTH: usize = 64;

/// Values one `cast` call may create (defaults of missing properties, padding items, ...).
const CREATE_BUDGET: usize = 10_000;
/// Trial casts one `cast` call may spend choosing between union branches a value is valid
/// against.
const TRIAL_BUDGET: usize = 256;
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

/// One `cast` call: the root for `$ref`s, compiled patterns, and the budgets.
struct Caster<'a> {
    root: &'a Value,
    patterns: RefCell<Vec<(&'a str, Option<jsonschema::Validator>)>>,
    created: Cell<usize>,
    trials: Cell<usize>,
}

impl<'a> Caster<'a> {
    fn new(root: &'a Value) -> Self {
        Self {
            root,
            patterns: RefCell::new(Vec::new()),
            created: Cell::new(0),
            trials: Cell::new(0),
        }
    }

    /// Casts `value` to `schema`.
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
}
