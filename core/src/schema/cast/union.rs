//! Branch choice: which `anyOf` / `oneOf` branch a value is cast to, and which conditional
//! (`if` / `then` / `else`) and dependent (`dependentSchemas`) subschemas apply to it.
//!
//! A union branch is chosen in three steps:
//!
//! 1. the branches the value is **valid** against; of several, the one whose cast keeps the
//!    most of the value (so an untagged union does not cut a value down to a narrower
//!    branch);
//! 2. else the first branch the value fits in **shape** (types, `const` / `enum`, required
//!    keys, property and item shapes), keeping constraint failures for the validator;
//! 3. else the best TypeBox `ScoreUnion` score: for an object, per declared property 100
//!    when it equals the property's `const` (a discriminator), 10 when it is valid against
//!    the property's schema, 1 when it is present; a nested union scores as its best branch.
//!    When every branch scores zero, the union's `default` is used if it has one, else the
//!    branch allowing `null` (a mismatching `Option<T>` becomes `None`), else the first
//!    branch.

use serde_json::Value;

use super::check::{CHECK_BUDGET, Mode};
use super::json::{json_equal, node_count};
use super::types::Types;
use super::view::View;
use super::{Caster, TRIAL_BUDGET};

/// Score of a property equal to its `const`: a discriminator.
const LITERAL_SCORE: usize = 100;
/// Score of a property valid against its schema.
const VALID_SCORE: usize = 10;
/// Score of a declared property that is present.
const PRESENT_SCORE: usize = 1;

/// The outcome of choosing a branch of one union for a value.
enum Choice<'a> {
    /// Cast to this branch.
    Branch(&'a Value),
    /// Nothing resembles the value and the union has a `default`: create the value.
    Create,
}

impl<'a> Caster<'a> {
    /// Chooses a branch of every `anyOf` / `oneOf` in the view for `value` and merges it into
    /// the view, together with the `then` / `else` and `dependentSchemas` that apply. `false`
    /// when the value is to be replaced by the schema's created value (a union with a
    /// `default` that nothing resembles). Without a value (creating): the first branch
    /// allowing `null`, else the first branch.
    pub(super) fn select_branches(
        &self,
        view: &mut View<'a>,
        value: Option<&Value>,
        depth: usize,
    ) -> bool {
        let has_default = view.first("default").is_some();
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
                let choice = match value {
                    Some(value) => self.select_branch(branches, value, has_default, depth),
                    None => Choice::Branch(self.null_or_first(branches, depth)),
                };
                match choice {
                    Choice::Branch(branch) => self.collect(branch, view),
                    Choice::Create => return false,
                }
            }
            if let Some(value) = value {
                self.collect_conditionals(map, value, view, depth);
            }
            index += 1;
        }
        true
    }

    /// Adds the `if` and `then` when the `if` passes, else the `else`, and the
    /// `dependentSchemas` of present keys.
    fn collect_conditionals(
        &self,
        map: &'a serde_json::Map<String, Value>,
        value: &Value,
        view: &mut View<'a>,
        depth: usize,
    ) {
        if let Some(condition) = map.get("if") {
            // A passing `if` applies (and evaluates its properties) together with `then`.
            let branch = if self.fits(condition, value, depth + 1) {
                self.collect(condition, view);
                map.get("then")
            } else {
                map.get("else")
            };
            if let Some(branch) = branch {
                self.collect(branch, view);
            }
        }
        if let (Some(Value::Object(dependencies)), Value::Object(object)) =
            (map.get("dependentSchemas"), value)
        {
            for (key, schema) in dependencies {
                if object.contains_key(key) {
                    self.collect(schema, view);
                }
            }
        }
    }

    /// The branch `value` is cast to (see the module documentation).
    fn select_branch(
        &self,
        branches: &'a [Value],
        value: &Value,
        has_default: bool,
        depth: usize,
    ) -> Choice<'a> {
        let depth = depth + 1;
        let distinct = self.distinct_branches(branches);
        let mut budget = CHECK_BUDGET;
        let valid: Vec<&'a Value> = distinct
            .iter()
            .copied()
            .filter(|branch| self.check(branch, value, Mode::Full, depth, &mut budget))
            .collect();
        if let Some(branch) = self.keeping_most(&valid, value, depth) {
            return Choice::Branch(branch);
        }
        if let Some(branch) = distinct
            .iter()
            .copied()
            .find(|branch| self.check(branch, value, Mode::Shape, depth, &mut budget))
        {
            return Choice::Branch(branch);
        }
        let mut best: Option<&'a Value> = None;
        let mut best_score = 0;
        for branch in &distinct {
            let score = self.score(branch, value, depth, &mut budget);
            if score > best_score {
                best = Some(branch);
                best_score = score;
            }
        }
        match best {
            Some(branch) => Choice::Branch(branch),
            None if has_default => Choice::Create,
            None => Choice::Branch(self.null_or_first(branches, depth)),
        }
    }

    /// The branch that declares `null` (by `type`, `const` or `enum`), else the first one.
    fn null_or_first(&self, branches: &'a [Value], depth: usize) -> &'a Value {
        let mut budget = CHECK_BUDGET;
        branches
            .iter()
            .find(|branch| {
                self.declares_null(branch)
                    && self.check(branch, &Value::Null, Mode::Full, depth, &mut budget)
            })
            .unwrap_or(&branches[0])
    }

    /// `schema` names `null` in its `type`, `const` or `enum` (an unconstrained schema
    /// allows `null` without declaring it).
    fn declares_null(&self, schema: &'a Value) -> bool {
        let view = self.view(schema);
        view.types()
            .is_some_and(|types| types.contains(Types::NULL))
            || view.first("const") == Some(&Value::Null)
            || view.enums().any(|members| members.contains(&Value::Null))
    }

    /// The branches without repeats (equal schemas, or references to the same target), in
    /// order.
    fn distinct_branches(&self, branches: &'a [Value]) -> Vec<&'a Value> {
        let mut distinct: Vec<&'a Value> = Vec::with_capacity(branches.len());
        for branch in branches {
            let target = self.pure_reference_target(branch);
            if !distinct.iter().any(|seen| {
                std::ptr::eq(self.pure_reference_target(seen), target) || *seen == target
            }) {
                distinct.push(branch);
            }
        }
        distinct
    }

    /// What a schema that is only a `$ref` (`{"$ref": ...}`) points to, else the schema.
    fn pure_reference_target(&self, schema: &'a Value) -> &'a Value {
        match schema {
            Value::Object(map) if map.len() == 1 => map
                .get("$ref")
                .and_then(Value::as_str)
                .and_then(|reference| self.resolve(reference))
                .unwrap_or(schema),
            _ => schema,
        }
    }

    /// Of the branches `value` is valid against, the one whose cast keeps the most of it
    /// (ties and a spent trial budget: the first). `None` when there is none.
    fn keeping_most(&self, valid: &[&'a Value], value: &Value, depth: usize) -> Option<&'a Value> {
        let (first, rest) = valid.split_first()?;
        if rest.is_empty() {
            return Some(first);
        }
        let mut best = *first;
        let mut best_kept = 0;
        for branch in valid {
            let Some(kept) = self.trial_cast_size(branch, value, depth) else {
                return Some(first);
            };
            if kept > best_kept {
                best = branch;
                best_kept = kept;
            }
        }
        Some(best)
    }

    /// The size of `value` cast to `branch`, or `None` once the call's trial budget is spent.
    /// A trial leaves the creation budget as it found it.
    fn trial_cast_size(&self, branch: &'a Value, value: &Value, depth: usize) -> Option<usize> {
        let trials = self.trials.get();
        if trials >= TRIAL_BUDGET {
            return None;
        }
        self.trials.set(trials + 1);
        let created = self.created.get();
        let size = node_count(&self.cast(branch, value.clone(), depth));
        self.created.set(created);
        Some(size)
    }

    /// TypeBox `ScoreUnion`: how much `value` resembles `branch` (see the module docs).
    fn score(&self, branch: &'a Value, value: &Value, depth: usize, budget: &mut usize) -> usize {
        if *budget == 0 || depth >= super::CAST_MAX_DEPTH {
            return 0;
        }
        *budget -= 1;
        let view = self.view(branch);
        if view.never || view.opaque {
            return 0;
        }
        let nested = view
            .maps
            .iter()
            .flat_map(|map| ["anyOf", "oneOf"].map(|keyword| map.get(keyword)))
            .flatten()
            .filter_map(Value::as_array)
            .map(|branches| {
                branches
                    .iter()
                    .map(|branch| self.score(branch, value, depth + 1, budget))
                    .max()
                    .unwrap_or(0)
            })
            .max()
            .unwrap_or(0);
        nested + self.score_properties(&view, value, depth, budget)
    }

    /// The property part of the score: an object against the properties the view declares
    /// (zero when the view's types exclude objects).
    fn score_properties(
        &self,
        view: &View<'a>,
        value: &Value,
        depth: usize,
        budget: &mut usize,
    ) -> usize {
        let Value::Object(object) = value else {
            return 0;
        };
        if view.types().is_some_and(|types| !types.accepts(value)) {
            return 0;
        }
        let mut score = 0;
        for (key, schema) in view.declared_properties() {
            let Some(property) = object.get(key) else {
                continue;
            };
            score += PRESENT_SCORE;
            if self.check(schema, property, Mode::Full, depth + 1, budget) {
                score += VALID_SCORE;
            }
            if self
                .literal_of(schema)
                .is_some_and(|literal| json_equal(literal, property))
            {
                score += LITERAL_SCORE;
            }
        }
        score
    }

    /// The single value a property schema allows (`const`, or a one-member `enum`).
    fn literal_of(&self, schema: &'a Value) -> Option<&'a Value> {
        let view = self.view(schema);
        view.first("const").or_else(|| {
            view.enums()
                .find(|members| members.len() == 1)
                .and_then(|members| members.first())
        })
    }
}
