//! Array casting: items cast by position (`prefixItems`, `items`, the pre-2020 tuple form),
//! duplicates removed for `uniqueItems`, then truncated to `maxItems` and padded to
//! `minItems`.
//!
//! A valid array under `uniqueItems` whose items become equal once their undeclared keys
//! are dropped (`[{"a":1,"z":1},{"a":1}]`) is returned as it came: removing the duplicates
//! (and padding back up to `minItems` with created items) would replace data of a valid
//! value, so removal and padding happen only to an array that was invalid.

use serde_json::Value;

use super::json::{has_duplicates, remove_duplicates};
use super::view::View;
use super::{Caster, Keywords};

impl<'a> Caster<'a> {
    /// Casts an array: items cast by position, then `uniqueItems`, `maxItems` and `minItems`
    /// applied.
    pub(super) fn cast_array(&self, view: &View<'a>, mut items: Vec<Value>, depth: usize) -> Value {
        let maps = view.maps.as_slice();
        let unique = maps
            .iter()
            .any(|m| m.get("uniqueItems") == Some(&Value::Bool(true)));
        // Kept to return a valid input whose cast items turn out equal (see the module doc).
        let input = (unique && !has_duplicates(&items)).then(|| items.clone());
        let mut kept = items.len();
        for (index, slot) in items.iter_mut().enumerate() {
            if !self.cast_item(maps, index, slot, depth + 1) {
                kept = index;
                break;
            }
        }
        items.truncate(kept);
        if unique && has_duplicates(&items) {
            if let Some(input) = input.map(Value::Array)
                && self.fits_view(view, &input, depth)
            {
                return input;
            }
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
}

/// The schema one map gives an item.
pub(super) enum ItemSchema<'a> {
    Schema(&'a Value),
    Forbidden,
    Unconstrained,
}

/// The schema one map gives the item at `index` (`prefixItems` then `items`, or the
/// pre-2020 array form of `items` then `additionalItems`).
pub(super) fn item_schema<'a>(map: &'a Keywords, index: usize) -> ItemSchema<'a> {
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

/// Every non-negative integer value of `keyword` (`minItems`, `maxItems`, `minLength`) across
/// the maps.
pub(super) fn count_keyword<'m>(
    maps: &'m [&Keywords],
    keyword: &'m str,
) -> impl Iterator<Item = usize> + 'm {
    maps.iter()
        .filter_map(move |map| map.get(keyword).and_then(Value::as_u64))
        .map(|count| usize::try_from(count).unwrap_or(usize::MAX))
}
