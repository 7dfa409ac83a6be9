//! Object casting: declared properties are cast, undeclared ones kept or dropped, missing
//! required ones created.

use serde_json::Value;

use super::array::count_keyword;
use super::view::{View, is_required, property_schemas, required_keys};
use super::{Caster, Keywords};

impl<'a> Caster<'a> {
    /// Casts an object: declared entries cast, undeclared ones kept or dropped (see [`Extra`]),
    /// missing required ones created.
    pub(super) fn cast_object(&self, view: &View<'a>, mut object: Keywords, depth: usize) -> Value {
        let maps = view.maps.as_slice();
        let mut extra = Extra::of(maps);
        if matches!(extra, Extra::Absent)
            && self.dropping_breaks_min_properties(maps, &object)
            && self.fits_view(view, &Value::Object(object.clone()), depth)
        {
            extra = Extra::Allowed;
        }
        let dependents = dependent_required(maps, &object);
        object.retain(|key, slot| {
            self.cast_entry(maps, &extra, key, slot, depth + 1)
                || dependents.contains(&key.as_str())
        });
        for key in required_keys(maps) {
            if !object.contains_key(key) {
                let created = self.create_property(maps, &extra, key, depth + 1);
                object.insert(key.to_owned(), created);
            }
        }
        Value::Object(object)
    }

    /// The object satisfies `minProperties` but would not once its undeclared keys are
    /// dropped (a valid object keeps them then, so that it stays valid).
    fn dropping_breaks_min_properties(&self, maps: &[&'a Keywords], object: &Keywords) -> bool {
        let Some(min) = count_keyword(maps, "minProperties").max() else {
            return false;
        };
        if object.len() < min {
            return false;
        }
        let declared = object
            .keys()
            .filter(|key| {
                property_schemas(maps, key).next().is_some()
                    || is_required(maps, key)
                    || !self.pattern_schemas(maps, key).is_empty()
            })
            .count();
        declared < min
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
}

/// What happens to object keys no schema declares.
pub(super) enum Extra<'a> {
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
    /// How the merged `maps` treat undeclared keys.
    pub(super) fn of(maps: &[&'a Keywords]) -> Self {
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

/// The keys `dependentRequired` requires because a key naming them is present: they count
/// as declared.
fn dependent_required<'a>(maps: &[&'a Keywords], object: &Keywords) -> Vec<&'a str> {
    maps.iter()
        .filter_map(|map| map.get("dependentRequired").and_then(Value::as_object))
        .flatten()
        .filter(|(key, _)| object.contains_key(key.as_str()))
        .filter_map(|(_, required)| required.as_array())
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}
