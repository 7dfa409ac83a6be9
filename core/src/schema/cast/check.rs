//! Checks that choose union branches: does a value already satisfy a schema — fully
//! ([`Mode::Full`], the keywords of JSON Schema 2020-12 that decide validity) or in shape
//! only ([`Mode::Shape`], ignoring the constraints `cast` keeps for the validator)?
//!
//! Keywords the check does not evaluate (`format`, `unevaluatedItems`, `$dynamicRef`,
//! remote references) pass, and a check that runs out of depth or budget passes: a branch
//! the value might fit is never ruled out.

use serde_json::{Map, Value};

use super::array::{ItemSchema, item_schema};
use super::json::{Numeric, json_equal, remove_duplicates};
use super::types::Types;
use super::view::View;
use super::{CAST_MAX_DEPTH, Caster, Keywords};

/// How much of a schema a check evaluates.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Mode {
    /// Everything that decides validity: the value is valid against the schema.
    Full,
    /// Types, `const` / `enum`, `required`, `additionalProperties: false` and the shapes of
    /// properties and items, recursively — not lengths, counts, bounds, patterns, `not`,
    /// conditionals or dependencies. A value of the right shape keeps its data when cast.
    Shape,
}

/// Structural checks one `fits` / `check` call may spend.
pub(super) const CHECK_BUDGET: usize = 4096;

impl<'a> Caster<'a> {
    /// `value` is valid against `schema` (as far as the check evaluates).
    pub(super) fn fits(&self, schema: &'a Value, value: &Value, depth: usize) -> bool {
        let mut budget = CHECK_BUDGET;
        self.check(schema, value, Mode::Full, depth, &mut budget)
    }

    /// `value` is valid against every schema object of `view` (unions checked, not chosen).
    pub(super) fn fits_view(&self, view: &View<'a>, value: &Value, depth: usize) -> bool {
        let mut budget = CHECK_BUDGET;
        !view.never
            && view
                .maps
                .iter()
                .all(|map| self.check_map(map, value, Mode::Full, depth, &mut budget))
            && self.check_unevaluated(view, value, depth, &mut budget)
    }

    /// `value` satisfies `schema` in `mode`. Out of depth or budget → `true`.
    pub(super) fn check(
        &self,
        schema: &'a Value,
        value: &Value,
        mode: Mode,
        depth: usize,
        budget: &mut usize,
    ) -> bool {
        if schema == &Value::Bool(false) {
            return false;
        }
        if depth >= CAST_MAX_DEPTH || *budget == 0 {
            return true;
        }
        *budget -= 1;
        let view = self.view(schema);
        if view.never {
            return false;
        }
        if view.opaque {
            return true;
        }
        view.maps
            .iter()
            .all(|map| self.check_map(map, value, mode, depth, budget))
            && (mode == Mode::Shape || self.check_unevaluated(&view, value, depth, budget))
    }

    /// The keywords of one schema object (its `$ref` and `allOf` are in the view already).
    fn check_map(
        &self,
        map: &'a Keywords,
        value: &Value,
        mode: Mode,
        depth: usize,
        budget: &mut usize,
    ) -> bool {
        if map
            .get("const")
            .is_some_and(|constant| !json_equal(constant, value))
        {
            return false;
        }
        if let Some(Value::Array(members)) = map.get("enum")
            && !members.iter().any(|member| json_equal(member, value))
        {
            return false;
        }
        if let Some(types) = map.get("type").and_then(Types::parse)
            && !types.accepts(value)
        {
            return false;
        }
        if !self.check_applicators(map, value, mode, depth, budget) {
            return false;
        }
        match value {
            Value::Object(object) => self.check_object(map, object, mode, depth, budget),
            Value::Array(items) => self.check_array(map, items, mode, depth, budget),
            Value::String(text) => mode == Mode::Shape || check_string(self, map, text),
            Value::Number(number) => mode == Mode::Shape || check_number(map, number),
            _ => true,
        }
    }

    /// `anyOf`, `oneOf`, `not`, `if` / `then` / `else`.
    fn check_applicators(
        &self,
        map: &'a Keywords,
        value: &Value,
        mode: Mode,
        depth: usize,
        budget: &mut usize,
    ) -> bool {
        let depth = depth + 1;
        if let Some(Value::Array(branches)) = map.get("anyOf")
            && !branches.is_empty()
            && !branches
                .iter()
                .any(|branch| self.check(branch, value, mode, depth, budget))
        {
            return false;
        }
        if let Some(Value::Array(branches)) = map.get("oneOf")
            && !branches.is_empty()
        {
            let mut fitting = branches
                .iter()
                .filter(|branch| self.check(branch, value, mode, depth, budget));
            let one = fitting.next().is_some();
            if !one || (mode == Mode::Full && fitting.next().is_some()) {
                return false;
            }
        }
        if mode == Mode::Shape {
            return true;
        }
        if let Some(negated) = map.get("not")
            && self.check(negated, value, mode, depth, budget)
        {
            return false;
        }
        if let Some(condition) = map.get("if") {
            let branch = if self.check(condition, value, mode, depth, budget) {
                map.get("then")
            } else {
                map.get("else")
            };
            if branch.is_some_and(|branch| !self.check(branch, value, mode, depth, budget)) {
                return false;
            }
        }
        true
    }

    fn check_object(
        &self,
        map: &'a Keywords,
        object: &Map<String, Value>,
        mode: Mode,
        depth: usize,
        budget: &mut usize,
    ) -> bool {
        let depth = depth + 1;
        if let Some(Value::Array(required)) = map.get("required")
            && required
                .iter()
                .filter_map(Value::as_str)
                .any(|key| !object.contains_key(key))
        {
            return false;
        }
        let properties = map.get("properties").and_then(Value::as_object);
        let patterns = map.get("patternProperties").and_then(Value::as_object);
        let additional = map.get("additionalProperties");
        for (key, property) in object {
            let mut declared = false;
            if let Some(schema) = properties.and_then(|properties| properties.get(key)) {
                declared = true;
                if !self.check(schema, property, mode, depth, budget) {
                    return false;
                }
            }
            for (pattern, schema) in patterns.into_iter().flatten() {
                if self.pattern_matches(pattern, key) {
                    declared = true;
                    if !self.check(schema, property, mode, depth, budget) {
                        return false;
                    }
                }
            }
            if !declared
                && additional
                    .is_some_and(|schema| !self.check(schema, property, mode, depth, budget))
            {
                return false;
            }
        }
        mode == Mode::Shape || self.check_object_constraints(map, object, depth, budget)
    }

    /// `minProperties`, `maxProperties`, `propertyNames`, `dependentRequired`,
    /// `dependentSchemas`.
    fn check_object_constraints(
        &self,
        map: &'a Keywords,
        object: &Map<String, Value>,
        depth: usize,
        budget: &mut usize,
    ) -> bool {
        let count = object.len() as u64;
        if !within_bounds(map, "minProperties", "maxProperties", count) {
            return false;
        }
        if let Some(names) = map.get("propertyNames")
            && !object.keys().all(|key| {
                self.check(
                    names,
                    &Value::String(key.clone()),
                    Mode::Full,
                    depth,
                    budget,
                )
            })
        {
            return false;
        }
        if let Some(Value::Object(dependencies)) = map.get("dependentRequired") {
            for (key, required) in dependencies {
                if object.contains_key(key)
                    && required
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(Value::as_str)
                        .any(|needed| !object.contains_key(needed))
                {
                    return false;
                }
            }
        }
        if let Some(Value::Object(dependencies)) = map.get("dependentSchemas") {
            let whole = Value::Object(object.clone());
            for (key, schema) in dependencies {
                if object.contains_key(key)
                    && !self.check(schema, &whole, Mode::Full, depth, budget)
                {
                    return false;
                }
            }
        }
        true
    }

    fn check_array(
        &self,
        map: &'a Keywords,
        items: &[Value],
        mode: Mode,
        depth: usize,
        budget: &mut usize,
    ) -> bool {
        let depth = depth + 1;
        for (index, item) in items.iter().enumerate() {
            match item_schema(map, index) {
                ItemSchema::Forbidden => return false,
                ItemSchema::Schema(schema) => {
                    if !self.check(schema, item, mode, depth, budget) {
                        return false;
                    }
                }
                ItemSchema::Unconstrained => {}
            }
        }
        mode == Mode::Shape || self.check_array_constraints(map, items, depth, budget)
    }

    /// `minItems`, `maxItems`, `uniqueItems`, `contains` / `minContains` / `maxContains`.
    fn check_array_constraints(
        &self,
        map: &'a Keywords,
        items: &[Value],
        depth: usize,
        budget: &mut usize,
    ) -> bool {
        let count = items.len() as u64;
        if !within_bounds(map, "minItems", "maxItems", count) {
            return false;
        }
        if map.get("uniqueItems") == Some(&Value::Bool(true)) {
            let mut unique = items.to_vec();
            remove_duplicates(&mut unique);
            if unique.len() != items.len() {
                return false;
            }
        }
        if let Some(contains) = map.get("contains") {
            let matching = items
                .iter()
                .filter(|item| self.check(contains, item, Mode::Full, depth, budget))
                .count() as u64;
            let min = map.get("minContains").and_then(Value::as_u64).unwrap_or(1);
            let max = map.get("maxContains").and_then(Value::as_u64);
            if matching < min || max.is_some_and(|max| matching > max) {
                return false;
            }
        }
        true
    }

    /// `unevaluatedProperties` over the whole view: keys no applicable `properties`,
    /// `patternProperties` or `additionalProperties` evaluates (including those of fitting
    /// `anyOf` / `oneOf` branches, the `then` / `else` that applies, and the
    /// `dependentSchemas` of present keys) must satisfy it.
    fn check_unevaluated(
        &self,
        view: &View<'a>,
        value: &Value,
        depth: usize,
        budget: &mut usize,
    ) -> bool {
        let Value::Object(object) = value else {
            return true;
        };
        let Some(rule) = view.first("unevaluatedProperties") else {
            return true;
        };
        let mut evaluating: Vec<&'a Keywords> = view.maps.clone();
        for map in &view.maps {
            self.applying_subschemas(map, value, depth + 1, budget, &mut evaluating);
        }
        object.iter().all(|(key, property)| {
            evaluates(self, &evaluating, key)
                || self.check(rule, property, Mode::Full, depth + 1, budget)
        })
    }

    /// The schema objects of `map`'s in-place applicators that apply to `value`, with their
    /// `$ref` / `allOf` views.
    fn applying_subschemas(
        &self,
        map: &'a Keywords,
        value: &Value,
        depth: usize,
        budget: &mut usize,
        into: &mut Vec<&'a Keywords>,
    ) {
        let mut applying: Vec<&'a Value> = Vec::new();
        for keyword in ["anyOf", "oneOf"] {
            if let Some(Value::Array(branches)) = map.get(keyword) {
                applying.extend(
                    branches
                        .iter()
                        .filter(|branch| self.check(branch, value, Mode::Full, depth, budget)),
                );
            }
        }
        if let Some(condition) = map.get("if") {
            if self.check(condition, value, Mode::Full, depth, budget) {
                applying.push(condition);
                applying.extend(map.get("then"));
            } else {
                applying.extend(map.get("else"));
            }
        }
        if let (Some(Value::Object(dependencies)), Value::Object(object)) =
            (map.get("dependentSchemas"), value)
        {
            applying.extend(
                dependencies
                    .iter()
                    .filter(|(key, _)| object.contains_key(key.as_str()))
                    .map(|(_, schema)| schema),
            );
        }
        for schema in applying {
            into.extend(self.view(schema).maps);
        }
    }
}

/// Some map evaluates `key` (declares it, matches it by pattern, or has
/// `additionalProperties`).
fn evaluates<'a>(caster: &Caster<'a>, maps: &[&'a Keywords], key: &str) -> bool {
    maps.iter().any(|map| {
        map.contains_key("additionalProperties")
            || map
                .get("properties")
                .and_then(Value::as_object)
                .is_some_and(|properties| properties.contains_key(key))
    }) || !caster.pattern_schemas(maps, key).is_empty()
}

/// Whether `count` is within the `min` and `max` keywords of `map` (each optional):
/// `minProperties`/`maxProperties`, `minItems`/`maxItems`, `minLength`/`maxLength`.
fn within_bounds(map: &Keywords, min: &str, max: &str, count: u64) -> bool {
    let bound = |key: &str| map.get(key).and_then(Value::as_u64);
    bound(min).is_none_or(|min| count >= min) && bound(max).is_none_or(|max| count <= max)
}

/// `minLength`, `maxLength` (in code points) and `pattern`.
fn check_string<'a>(caster: &Caster<'a>, map: &'a Keywords, text: &str) -> bool {
    let length = text.chars().count() as u64;
    if !within_bounds(map, "minLength", "maxLength", length) {
        return false;
    }
    match map.get("pattern") {
        Some(Value::String(pattern)) => caster.pattern_matches(pattern, text),
        _ => true,
    }
}

/// `minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum` (numbers, or the draft-4
/// booleans) and `multipleOf`.
fn check_number(map: &Keywords, number: &serde_json::Number) -> bool {
    let Some(value) = number.as_f64() else {
        return true;
    };
    let bound = |keyword: &str| map.get(keyword).and_then(Value::as_f64);
    let legacy = |keyword: &str| map.get(keyword) == Some(&Value::Bool(true));
    if let Some(min) = bound("minimum")
        && (value < min || (legacy("exclusiveMinimum") && value <= min))
    {
        return false;
    }
    if let Some(max) = bound("maximum")
        && (value > max || (legacy("exclusiveMaximum") && value >= max))
    {
        return false;
    }
    if bound("exclusiveMinimum").is_some_and(|min| value <= min)
        || bound("exclusiveMaximum").is_some_and(|max| value >= max)
    {
        return false;
    }
    match map.get("multipleOf") {
        Some(Value::Number(divisor)) => is_multiple(number, divisor),
        _ => true,
    }
}

/// `number` is a multiple of `divisor`: exactly for integers, within rounding for fractions.
fn is_multiple(number: &serde_json::Number, divisor: &serde_json::Number) -> bool {
    match (Numeric::of(number), Numeric::of(divisor)) {
        (_, Numeric::Integer(0)) => true,
        (Numeric::Integer(n), Numeric::Integer(d)) => n % d == 0,
        _ => {
            let (Some(n), Some(d)) = (number.as_f64(), divisor.as_f64()) else {
                return true;
            };
            if d == 0.0 || !d.is_finite() {
                return true;
            }
            let quotient = n / d;
            !quotient.is_finite() || (quotient - quotient.round()).abs() < 1e-9
        }
    }
}
