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
//!   array plus `additionalItems`) is read the same way. Then, for an array that was
//!   invalid, `uniqueItems: true` removes later duplicates, `maxItems` truncates and
//!   `minItems` pads with created items. A valid array whose items become equal once their
//!   undeclared keys are dropped is returned unchanged (see *Valid values*).
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
//! * **`anyOf` / `oneOf`**: a value valid against some branches is cast to the one whose
//!   cast keeps the most of it (ties: the first), so a valid value stays valid and an
//!   untagged union does not cut it down to a narrower branch; a `null` value stays `null`
//!   when a branch allows it. Else the first branch the value fits in shape (types,
//!   `const` / `enum`, required keys, property and item shapes — constraint failures are
//!   kept for the validator). Else the branch with the best TypeBox `ScoreUnion` score: for
//!   an object, per declared property 100 when it equals the property's `const` (a
//!   discriminator), 10 when it is valid against the property's schema, 1 when present; a
//!   nested or referenced union scores as its best branch; ties go to the first branch.
//!   When every branch scores zero, the value is created from the union's `default` if it
//!   has one, else cast to the branch declaring `null` (so a mismatching `Option<T>`
//!   becomes `None`), else cast to the first branch. The chosen branch is merged with its
//!   parent, so `{type: object, properties, oneOf}` (what schemars emits for a flattened
//!   enum) keeps the properties of both.
//! * **`if` / `then` / `else`, `dependentSchemas`**: the `if` and `then` (when the value
//!   is valid against `if`) or the `else`, and the dependent schemas of present keys, join
//!   the view like `allOf` members, so the keys they declare are kept and their required
//!   keys created. A key that `dependentRequired` requires because its trigger is present
//!   counts as declared.
//! * **Boolean and empty schemas** (`true`, `false`, `{}`) leave the value as it is: nothing
//!   can be invented that satisfies `false`.
//!
//! A replaced value is *created* from the schema: its `default` (the nearest one, including
//! a `default` next to a `$ref`), else its `const`, else the first `enum` member, else `null`
//! when the schema allows `null` (so a mismatching `Option<T>` becomes `None`), else by type:
//! an object of its created required properties, an array of `minItems` created items,
//! `minLength` spaces (`""` without one),
//! `false`, `null`, or for numbers the lower bound (`minimum`, rounded up for integers;
//! `exclusiveMinimum` → the next integer above it), else `0` (or the upper bound when `0`
//! would exceed it). A schema with no type information creates `null`.
//!
//! # Valid values
//!
//! A value that is already valid against the schema is still valid after the cast: the
//! cast drops only undeclared keys (and keeps them when dropping would break
//! `minProperties`; a valid `uniqueItems` array whose items dropping would make equal is
//! returned as it came, neither deduplicated nor padded), rewrites integral floats of `integer` schemas, and never replaces
//! anything of a valid value. Of the union branches a value is valid against, the one whose
//! cast keeps the most of it is taken, so a wider branch wins over a narrower one; when two
//! valid branches declare different keys, only the keys of the branch keeping more survive.
//! This is checked against every valid instance of the JSON-Schema-Test-Suite
//! (draft2020-12) in `core/tests/cast_json_schema_suite.rs`.
//!
//! # Deviations from TypeBox
//!
//! `core/tests/cast_typebox.rs` compares `cast` with TypeBox 0.34 `Value.Cast` on a few
//! thousand generated schema/value pairs; each intended difference below is a class of
//! `core/tests/cast_typebox/deviations.rs`, and any other difference fails the test.
//!
//! * **Undeclared keys are dropped from valid values too.** TypeBox returns a value that
//!   already validates untouched; the pipeline drops the keys no schema declares (the
//!   value stays valid).
//! * **Constraints are not repaired.** Only type, `const` and `enum` mismatches replace a
//!   value. A string failing `minLength`, `pattern` or `format`, a number outside
//!   `minimum`/`maximum` or `multipleOf` is kept unchanged (also when that decides between
//!   union branches): no value can be invented that satisfies arbitrary constraints,
//!   keeping the original loses less information, and the validation step reports it.
//! * **Free-form objects.** `additionalProperties: true` keeps extras (TypeBox keeps them
//!   only for a schema), and `{"type": "object"}` without declared properties keeps every
//!   entry. A schema without any constraint (`{}`) creates `null` where TypeBox creates
//!   `{}` (or leaves a missing required property missing).
//! * **Nullable unions.** A value that no branch of a union resembles becomes `null` when a
//!   branch declares `null`, and creating a nullable union's value creates `null`; TypeBox
//!   casts to, and creates, the first branch.
//! * **Union defaults.** A union's `default` replaces only a value no branch resembles;
//!   TypeBox returns it for every value the union rejects.
//! * **Duplicates follow the items.** An invalid `uniqueItems` array loses the duplicates
//!   among its items as opkit cast them, so an item another deviation above cast
//!   differently (to `null`, say) can be a duplicate where TypeBox's is not. A valid array
//!   is never deduplicated (TypeBox agrees).
//! * **TypeBox quirks not copied.** An intersect (`allOf`) that rejects a value is not
//!   recreated and reset (TypeBox creates the intersect and assigns the value over it, or
//!   returns the created value when that fails); an array is not cast to an object (in
//!   JavaScript arrays are objects, so TypeBox scores and casts them as such).
//!
//! # What cast does not honour
//!
//! * **References it cannot resolve locally** — remote documents, `$anchor` / `$dynamicRef`
//!   targets — leave the value under them unchanged.
//! * **`unevaluatedProperties` / `unevaluatedItems`** are read like `additionalProperties`
//!   / not at all: the keys evaluated by an applicator the cast does not merge (a union
//!   branch other than the chosen one, `not`) are dropped when `unevaluatedProperties` is
//!   `false`, and items are never dropped for `unevaluatedItems`.
//! * **`not`, `oneOf` exclusivity, `propertyNames`, `contains`** decide branch choice
//!   but are not repaired; a valid value whose undeclared keys are dropped could in theory
//!   start matching a `not` schema or a second `oneOf` branch.
//! * **`format`** is neither checked nor repaired.
//!
//! # Limits
//!
//! Recursion through nested values and recursive schemas stops at [`CAST_MAX_DEPTH`]: deeper
//! values are kept unchanged and deeper created values are `null`. Branch selection spends
//! at most a fixed budget of checks per union (a check that runs out of budget counts as
//! passing), one call spends at most a fixed number of trial casts comparing branches a
//! value is valid against (then the first such branch is taken), and one call creates at
//! most a fixed number of values (further created values are `null`, `minItems` padding
//! stops, and a created string is padded to at most 65,536 characters). So `cast` terminates on any
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

impl crate::schema::Schema {
    /// Casts `value` to this schema as [`cast`] does to its self-contained form, without
    /// building that form for a schema with shared definitions: a `#/$defs/<name>`
    /// reference the root does not hold resolves in the shared definitions.
    ///
    /// ```
    /// use opkit::schema::{Definitions, Schema};
    /// use serde_json::json;
    /// use std::sync::Arc;
    ///
    /// let defs = Arc::new(Definitions::new([("Age".to_owned(), json!({"type": "integer"}))]));
    /// let schema = Schema::with_definitions(
    ///     json!({"type": "object", "properties": {"age": {"$ref": "#/$defs/Age"}}}),
    ///     defs,
    /// );
    /// assert_eq!(schema.cast(json!({"age": 7, "extra": 1})), json!({"age": 7}));
    /// ```
    pub fn cast(&self, value: Value) -> Value {
        let root = self.root();
        let mut caster = Caster::new(root);
        caster.definitions = self.definitions().map(|definitions| &**definitions);
        caster.cast(root, value, 0)
    }
}

/// One `cast` call: the root for `$ref`s, compiled patterns, and the budgets.
struct Caster<'a> {
    root: &'a Value,
    /// Where `#/$defs/<name>` resolves when the root does not hold it (a shared schema's
    /// definitions).
    definitions: Option<&'a crate::schema::Definitions>,
    patterns: RefCell<Vec<(&'a str, Option<jsonschema::Validator>)>>,
    created: Cell<usize>,
    trials: Cell<usize>,
}

impl<'a> Caster<'a> {
    fn new(root: &'a Value) -> Self {
        Self {
            root,
            definitions: None,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{Definitions, Schema};
    use serde_json::json;
    use std::sync::Arc;

    #[test]
    fn a_shared_schema_casts_as_its_self_contained_form() {
        let defs = Arc::new(Definitions::new([
            (
                "Pet".to_owned(),
                json!({"type": "object", "properties": {"age": {"type": "integer"}, "tag": {"$ref": "#/$defs/Tag"}}, "required": ["age"]}),
            ),
            ("Tag".to_owned(), json!({"type": "string"})),
            ("a/b".to_owned(), json!({"type": "boolean"})),
        ]));
        let schema = Schema::with_definitions(
            json!({"type": "array", "items": {"anyOf": [{"$ref": "#/$defs/Pet"}, {"$ref": "#/$defs/a~1b"}]}}),
            defs,
        );
        for value in [
            json!([{"age": "3", "tag": 5, "extra": 1}, true]),
            json!([{"tag": "x"}]),
            json!("nothing"),
        ] {
            let alone = cast(&schema.transient_value(), value.clone());
            assert_eq!(schema.cast(value), alone);
        }
    }
}
