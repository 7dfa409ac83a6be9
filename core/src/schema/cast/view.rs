//! Schema views: the schema objects that apply together to one value (a schema, its `$ref`
//! targets and `allOf` members, and the union branches chosen for the value), local `$ref`
//! resolution, and `patternProperties` matching.

use serde_json::Value;

use super::json::percent_decode;
use super::types::Types;
use super::{Caster, Keywords, MAX_VIEW_MAPS};
use crate::schema::pointer;

/// The schema objects that apply together to one value.
#[derive(Default)]
pub(super) struct View<'a> {
    pub(super) maps: Vec<&'a Keywords>,
    /// A `$ref` could not be resolved locally: the value is left alone.
    pub(super) opaque: bool,
    /// A `false` schema applies: no value is valid.
    pub(super) never: bool,
}

impl<'a> View<'a> {
    /// The first value of `keyword` among the maps.
    pub(super) fn first(&self, keyword: &str) -> Option<&'a Value> {
        self.maps.iter().find_map(|map| map.get(keyword))
    }

    /// Every well-formed `enum` list among the maps.
    pub(super) fn enums(&self) -> impl Iterator<Item = &'a Vec<Value>> + '_ {
        self.maps
            .iter()
            .filter_map(|map| map.get("enum").and_then(Value::as_array))
    }

    /// The allowed JSON types: the intersection of every `type`, or, when no member has one,
    /// the types implied by object / array keywords. `None`: no type information.
    pub(super) fn types(&self) -> Option<Types> {
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
    pub(super) fn preferred_type(&self, allowed: Types) -> Types {
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

    /// The `properties` the maps declare, in order, with their schemas.
    pub(super) fn declared_properties(&self) -> impl Iterator<Item = (&'a str, &'a Value)> + '_ {
        self.maps
            .iter()
            .filter_map(|map| map.get("properties").and_then(Value::as_object))
            .flat_map(|properties| properties.iter().map(|(k, v)| (k.as_str(), v)))
    }
}

impl<'a> Caster<'a> {
    /// The view of `schema`: it, its `$ref` targets and `allOf` members, transitively, each
    /// once.
    pub(super) fn view(&self, schema: &'a Value) -> View<'a> {
        let mut view = View::default();
        self.collect(schema, &mut view);
        view
    }

    /// Adds `schema` (and what it pulls in through `$ref` and `allOf`) to `view`.
    pub(super) fn collect(&self, schema: &'a Value, view: &mut View<'a>) {
        let map = match schema {
            Value::Object(map) => map,
            Value::Bool(false) => {
                view.never = true;
                return;
            }
            _ => return, // `true` and malformed schemas constrain nothing
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
    pub(super) fn resolve(&self, reference: &str) -> Option<&'a Value> {
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
        let walk = |from: &'a Value, mut tokens: std::str::Split<'_, char>| {
            tokens.try_fold(from, |node, token| {
                let token = pointer::unescape(token);
                match node {
                    Value::Object(map) => map.get(token.as_ref()),
                    Value::Array(items) => token.parse::<usize>().ok().and_then(|i| items.get(i)),
                    _ => None,
                }
            })
        };
        let path = fragment.strip_prefix('/')?;
        walk(self.root, path.split('/')).or_else(|| {
            // Not in the root: a shared definition, when the schema has them.
            let mut tokens = path.split('/');
            if tokens.next() != Some("$defs") {
                return None;
            }
            let name = pointer::unescape(tokens.next()?);
            walk(self.definitions?.get(&name)?, tokens)
        })
    }

    /// The `patternProperties` schemas whose pattern matches `key`.
    pub(super) fn pattern_schemas(&self, maps: &[&'a Keywords], key: &str) -> Vec<&'a Value> {
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
    pub(super) fn pattern_matches(&self, pattern: &'a str, text: &str) -> bool {
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
            .is_some_and(|validator| validator.is_valid(&Value::String(text.to_owned())))
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

/// The schemas `properties` gives `key` across the maps.
pub(super) fn property_schemas<'a, 'k>(
    maps: &'k [&'a Keywords],
    key: &'k str,
) -> impl Iterator<Item = &'a Value> + 'k {
    maps.iter().filter_map(move |map| {
        map.get("properties")
            .and_then(Value::as_object)
            .and_then(|properties| properties.get(key))
    })
}

/// Every key the maps list in `required`.
pub(super) fn required_keys<'a>(maps: &[&'a Keywords]) -> impl Iterator<Item = &'a str> {
    maps.iter()
        .filter_map(|map| map.get("required").and_then(Value::as_array))
        .flatten()
        .filter_map(Value::as_str)
}

/// `key` is listed in some `required`.
pub(super) fn is_required(maps: &[&Keywords], key: &str) -> bool {
    required_keys(maps).any(|required| required == key)
}
