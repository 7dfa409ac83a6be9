//! [`Walker`]: converts one schema (or one definition's body) node by node — 3.0 and 3.1
//! keywords, `$ref` siblings, sanitizing — charging the budget and turning `$ref`s into
//! references to definitions.

use super::{ANNOTATIONS, Definitions, MAX_DEPTH};
use crate::openapi::convert::{convert_30_node, convert_31_node};
use crate::openapi::document::{SpecVersion, join_pointer};
use crate::openapi::error::MapError;
use crate::openapi::sanitize;
use serde_json::{Map, Value, json};

/// One walk over a schema: converts it, turning `$ref`s into `$defs` references.
pub(super) struct Walker<'d, 'a> {
    defs: &'d Definitions<'a>,
    /// The definition being built (for `$recursiveRef`), `None` at an operation's top.
    current: Option<usize>,
    pub(super) refs: Vec<usize>,
    pub(super) nodes: usize,
}

impl<'d, 'a> Walker<'d, 'a> {
    pub(super) fn new(defs: &'d Definitions<'a>, current: Option<usize>) -> Self {
        Self {
            defs,
            current,
            refs: Vec::new(),
            nodes: 0,
        }
    }

    fn version(&self) -> SpecVersion {
        self.defs.resolver.version
    }

    pub(super) fn walk(
        &mut self,
        schema: &'a Value,
        pointer: &str,
        depth: usize,
    ) -> Result<Value, MapError> {
        if depth > MAX_DEPTH {
            return Err(MapError::new(pointer, "the schema is nested too deeply"));
        }
        self.nodes += 1;
        let map = match schema {
            Value::Object(map) => map,
            Value::Bool(_) => return Ok(schema.clone()),
            other => {
                return Err(MapError::new(
                    pointer,
                    format!("a schema must be an object or a boolean, found {other}"),
                ));
            }
        };
        if let Some(reference) = map.get("$ref") {
            let ref_pointer = join_pointer(pointer, "$ref");
            let Some(reference) = reference.as_str() else {
                return Err(MapError::new(ref_pointer, "`$ref` must be a string"));
            };
            let id = self.defs.entry_for(reference, &ref_pointer)?;
            self.refs.push(id);
            let target = json!({"$ref": format!("#/$defs/{}", self.defs.name(id))});
            return self.with_siblings(map, target, false, pointer, depth);
        }
        let out = self.keywords(map, pointer, depth)?;
        Ok(if self.version() == SpecVersion::V3_0 {
            convert_30_node(out)
        } else {
            convert_31_node(out)
        })
    }

    /// Combines a resolved `$ref` (`resolved`: a `$defs` reference, or the target's body
    /// when `inlined`) with the keywords next to it.
    pub(super) fn with_siblings(
        &mut self,
        map: &'a Map<String, Value>,
        resolved: Value,
        inlined: bool,
        pointer: &str,
        depth: usize,
    ) -> Result<Value, MapError> {
        if self.version() == SpecVersion::V3_0 {
            // Siblings are ignored in 3.0, except the `nullable` generators put there.
            return Ok(if map.get("nullable") == Some(&Value::Bool(true)) {
                json!({"anyOf": [resolved, {"type": "null"}]})
            } else {
                resolved
            });
        }
        if map.len() == 1 {
            return Ok(resolved);
        }
        let annotations_only = map
            .keys()
            .all(|key| key == "$ref" || ANNOTATIONS.contains(&key.as_str()));
        let siblings = self.keywords(map, pointer, depth)?;
        match resolved {
            Value::Object(mut target) if annotations_only && inlined => {
                target.extend(siblings);
                Ok(Value::Object(target))
            }
            Value::Object(mut target) if !inlined => {
                // 2020-12 applies keywords next to `$ref` together with the target.
                target.extend(siblings);
                Ok(Value::Object(target))
            }
            resolved => {
                let mut out = siblings;
                out.insert("allOf".into(), json!([resolved]));
                Ok(Value::Object(out))
            }
        }
    }

    /// Walks the subschemas of a schema object's keywords (all but `$ref`).
    fn keywords(
        &mut self,
        map: &'a Map<String, Value>,
        pointer: &str,
        depth: usize,
    ) -> Result<Map<String, Value>, MapError> {
        let mut out = Map::new();
        for (key, value) in map {
            let child = join_pointer(pointer, key);
            let converted = match key.as_str() {
                "$ref" => continue,
                "properties" | "patternProperties" | "$defs" | "definitions"
                | "dependentSchemas" => match value {
                    Value::Object(members) => {
                        let mut walked = Map::new();
                        for (name, member) in members {
                            let member_pointer = join_pointer(&child, name);
                            walked.insert(
                                name.clone(),
                                self.walk(member, &member_pointer, depth + 1)?,
                            );
                        }
                        Value::Object(walked)
                    }
                    other => other.clone(),
                },
                "allOf" | "anyOf" | "oneOf" | "prefixItems" => self.array(value, &child, depth)?,
                "items" if value.is_array() => self.array(value, &child, depth)?,
                "items"
                | "additionalProperties"
                | "additionalItems"
                | "contains"
                | "propertyNames"
                | "not"
                | "if"
                | "then"
                | "else"
                | "unevaluatedItems"
                | "unevaluatedProperties"
                | "contentSchema"
                    if value.is_object() || value.is_boolean() =>
                {
                    self.walk(value, &child, depth + 1)?
                }
                _ => {
                    let current = self.current.map(|id| self.defs.name(id));
                    let mut inner = self.defs.inner.borrow_mut();
                    match inner
                        .sanitizer
                        .keyword(map, key, value, &child, current.as_deref())
                    {
                        sanitize::Keyword::Keep => value.clone(),
                        sanitize::Keyword::Drop => continue,
                        sanitize::Keyword::Replace(new_key, new_value) => {
                            drop(inner);
                            if new_key == "$ref"
                                && let Some(id) = self.current
                            {
                                self.refs.push(id);
                            }
                            out.insert(new_key, new_value);
                            continue;
                        }
                    }
                }
            };
            out.insert(key.clone(), converted);
        }
        Ok(out)
    }

    fn array(&mut self, value: &'a Value, pointer: &str, depth: usize) -> Result<Value, MapError> {
        match value {
            Value::Array(members) => Ok(Value::Array(
                members
                    .iter()
                    .enumerate()
                    .map(|(i, member)| {
                        self.walk(member, &join_pointer(pointer, &i.to_string()), depth + 1)
                    })
                    .collect::<Result<_, _>>()?,
            )),
            other => Ok(other.clone()),
        }
    }
}
