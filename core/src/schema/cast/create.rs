//! Creation (TypeBox `Create`): the value that replaces one that does not fit, made from the
//! schema's `default`, `const`, first `enum` member, `null` for a nullable schema, or its type.

use serde_json::{Map, Number, Value};

use super::array::{ItemSchema, count_keyword, item_schema};
use super::object::Extra;
use super::types::Types;
use super::view::{View, property_schemas, required_keys};
use super::{CAST_MAX_DEPTH, CREATE_BUDGET, Caster, Keywords};

/// The longest string creation pads to `minLength`; a longer `minLength` is left to the
/// validator.
const MAX_CREATED_STRING: usize = 1 << 16;

impl<'a> Caster<'a> {
    /// TypeBox `Create`: a value for `schema` made from its default, const, enum or type.
    pub(super) fn create(&self, schema: &'a Value, depth: usize) -> Value {
        if depth >= CAST_MAX_DEPTH || !self.spend_creation() {
            return Value::Null;
        }
        let mut view = self.view(schema);
        // Creating selects a union's first branch that allows `null`, else its first branch.
        self.select_branches(&mut view, None, depth);
        self.create_in_view(&view, depth)
    }

    /// Creates a value from an expanded view (unions already resolved to branches).
    pub(super) fn create_in_view(&self, view: &View<'a>, depth: usize) -> Value {
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
            Types::STRING => create_string(view.maps.as_slice()),
            Types::NUMBER => create_number(view.maps.as_slice(), false),
            Types::INTEGER => create_number(view.maps.as_slice(), true),
            Types::BOOLEAN => Value::Bool(false),
            _ => Value::Null,
        }
    }

    /// An object of the created required properties.
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
    pub(super) fn create_property(
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

    /// An array of `minItems` created items.
    fn create_array(&self, maps: &[&'a Keywords], depth: usize) -> Value {
        let min = count_keyword(maps, "minItems").max().unwrap_or(0);
        let mut items = Vec::new();
        while items.len() < min && self.spend_creation() {
            items.push(self.create_item(maps, items.len(), depth + 1));
        }
        Value::Array(items)
    }

    /// Creates the item at `index` from the schema the maps give it.
    pub(super) fn create_item(&self, maps: &[&'a Keywords], index: usize, depth: usize) -> Value {
        let schema = maps.iter().find_map(|map| match item_schema(map, index) {
            ItemSchema::Schema(schema) => Some(schema),
            _ => None,
        });
        schema.map_or(Value::Null, |schema| self.create(schema, depth))
    }

    /// Counts one created value; `false` once the call's creation budget is spent.
    pub(super) fn spend_creation(&self) -> bool {
        let created = self.created.get();
        self.created.set(created.saturating_add(1));
        created < CREATE_BUDGET
    }
}

/// A string for a `string` schema: `minLength` spaces (TypeBox pads created strings to their
/// minimum length), else `""`.
fn create_string(maps: &[&Keywords]) -> Value {
    let length = count_keyword(maps, "minLength").max().unwrap_or(0);
    if length > MAX_CREATED_STRING {
        return Value::String(String::new());
    }
    Value::String(" ".repeat(length))
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
