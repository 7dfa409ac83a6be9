//! Local `$ref` resolution for Reference Objects (parameters, request bodies, responses,
//! headers, security schemes, path items) and the lookup that schema bundling
//! ([`super::bundle`]) builds on.
//!
//! Only local references (`#/...`, JSON pointers with `~0`/`~1` escapes, percent-decoded)
//! are followed; a reference to another file or URL, an anchor, or a pointer that leads
//! nowhere is a [`MapError`] naming the pointer of the `$ref`, and the operation that needs
//! it is skipped. A chain of references is followed until it ends, closes a cycle, or passes
//! [`MAX_REF_HOPS`]. In 3.1+ the `summary`/`description` next to a `$ref` override the
//! target's.

use super::document::{SpecVersion, join_pointer};
use super::error::MapError;
use percent_encoding::percent_decode_str;
use serde_json::{Map, Value};
use std::collections::HashSet;

/// The longest chain of references (`$ref` to `$ref` ...) followed; cycles are found
/// before it, whatever their length.
pub(crate) const MAX_REF_HOPS: usize = 10_000;

/// Follows Reference Objects within one document.
#[derive(Clone, Copy)]
pub(crate) struct Resolver<'a> {
    pub root: &'a Value,
    pub version: SpecVersion,
}

impl<'a> Resolver<'a> {
    /// The value a local reference points to, with its pointer (without the `#`).
    pub fn lookup(&self, reference: &str, at: &str) -> Result<(&'a Value, String), MapError> {
        let Some(fragment) = reference.strip_prefix('#') else {
            return Err(MapError::new(
                at,
                format!(
                    "the reference {reference:?} points outside the document; only local references (#/...) are supported"
                ),
            ));
        };
        let pointer = percent_decode_str(fragment)
            .decode_utf8_lossy()
            .into_owned();
        if !pointer.is_empty() && !pointer.starts_with('/') {
            return Err(MapError::new(
                at,
                format!(
                    "the reference {reference:?} is an anchor; only JSON-pointer references are supported"
                ),
            ));
        }
        self.root
            .pointer(&pointer)
            .map(|value| (value, pointer.clone()))
            .ok_or_else(|| {
                MapError::new(at, format!("the reference {reference:?} points to nothing"))
            })
    }

    /// Resolves a Reference Object chain: returns the target object, its pointer, and (3.1+)
    /// the `summary`/`description` overrides found on the way.
    pub fn deref(
        &self,
        value: &'a Value,
        pointer: &str,
    ) -> Result<(&'a Value, String, Map<String, Value>), MapError> {
        let mut current = value;
        let mut current_pointer = pointer.to_owned();
        let mut overrides = Map::new();
        let mut seen = HashSet::new();
        for _ in 0..MAX_REF_HOPS {
            let Some(reference) = current.get("$ref") else {
                return Ok((current, current_pointer, overrides));
            };
            let Some(reference) = reference.as_str() else {
                return Err(MapError::new(
                    join_pointer(&current_pointer, "$ref"),
                    "`$ref` must be a string",
                ));
            };
            if self.version >= SpecVersion::V3_1 {
                for key in ["summary", "description"] {
                    if let Some(text) = current.get(key)
                        && !overrides.contains_key(key)
                    {
                        overrides.insert(key.into(), text.clone());
                    }
                }
            }
            let (target, target_pointer) =
                self.lookup(reference, &join_pointer(&current_pointer, "$ref"))?;
            if !seen.insert(target_pointer.clone()) {
                return Err(MapError::new(
                    pointer,
                    format!("the reference chain is circular (it comes back to {target_pointer})"),
                ));
            }
            current = target;
            current_pointer = target_pointer;
        }
        Err(MapError::new(
            pointer,
            format!("the reference chain is longer than {MAX_REF_HOPS} hops"),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reference_objects_follow_chains_and_detect_cycles() {
        let mut parameters = json!({
            "A": {"$ref": "#/components/parameters/B", "description": "outer"},
            "B": {"name": "b", "in": "query"},
            "L1": {"$ref": "#/components/parameters/L2"},
            "L2": {"$ref": "#/components/parameters/L1"}
        });
        // A long chain that is not a cycle resolves.
        for i in 0..200 {
            parameters[format!("C{i}")] =
                json!({"$ref": format!("#/components/parameters/C{}", i + 1)});
        }
        parameters["C200"] = json!({"name": "c", "in": "query"});
        let root = json!({"components": {"parameters": parameters}});
        let resolver = Resolver {
            root: &root,
            version: SpecVersion::V3_1,
        };
        let reference = json!({"$ref": "#/components/parameters/A"});
        let (target, pointer, overrides) = resolver.deref(&reference, "/x").unwrap();
        assert_eq!(target["name"], "b");
        assert_eq!(pointer, "/components/parameters/B");
        assert_eq!(overrides["description"], "outer");
        let error = resolver
            .deref(&json!({"$ref": "#/components/parameters/L1"}), "/x")
            .unwrap_err();
        assert!(error.message.contains("circular"), "{error:?}");
        let long = json!({"$ref": "#/components/parameters/C0"});
        let (target, _, _) = resolver.deref(&long, "/x").unwrap();
        assert_eq!(target["name"], "c");
    }
}
