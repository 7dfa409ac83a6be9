//! Validators of shared schemas that share the compiled definitions of their import.
//!
//! A [`Schema`] made with [`Schema::with_definitions`] refers into one import's
//! [`Definitions`]. Compiling its self-contained form would compile, for every operation,
//! every definition it reaches (Microsoft Graph's operations reach thousands of mutually
//! recursive definitions each). Here each definition is compiled once per [`Definitions`],
//! into a validator of its own, and kept there; a schema's validator compiles only its root,
//! where each `{"$ref": "#/$defs/<name>"}` becomes the keyword [`KEYWORD`], which runs the
//! named definition's shared validator. Definitions refer to each other the same way.
//!
//! The keyword reports the violations of the definition it runs with their paths relative
//! to the value it was given (jsonschema places a custom keyword's errors at the keyword);
//! [`encode`] carries that path in the message and [`decode`] recovers it (both in `validate`, which reads every violation), so a violation
//! keeps its full JSON-pointer path.
//!
//! Where sharing would change what the schema means, the self-contained form is compiled as
//! before: a root with its own `$defs` or `$schema`, a reference that is not exactly
//! `#/$defs/<a definition>`, identifiers and anchors (`$id`, `$anchor`, `$dynamicRef`,
//! `$dynamicAnchor`, `$recursiveRef`, `$recursiveAnchor`), and `unevaluatedProperties` /
//! `unevaluatedItems` (which would not see what a shared definition evaluated).

use super::compiled_definitions::Unshareable;
use super::error::SchemaError;
use super::refs::{DATA_KEYWORDS, DEFS_PREFIX, NAME_MAPS};
use super::shared::{Definitions, Schema};
use super::validate::{CompileSource, CompiledSchema, decode, encode, plain_options};
use jsonschema::{Keyword, ValidationError, Validator};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};

/// The keyword a shared reference becomes; its value is the definition's index.
pub(super) const KEYWORD: &str = "x-opkit-shared-definition";

impl CompileSource for Schema {
    fn compile_validator(&self) -> Result<CompiledSchema, SchemaError> {
        if let Some(definitions) = self.definitions() {
            match compile(self, definitions) {
                SharedCompile::Compiled(validator, definitions) => {
                    return Ok(CompiledSchema {
                        validator,
                        _definitions: Some(definitions),
                    });
                }
                SharedCompile::Invalid(error) => return Err(error),
                SharedCompile::SelfContained => {}
            }
        }
        self.transient_value().compile_validator()
    }
}

/// What compiling a shared schema gives.
enum SharedCompile {
    /// The root's validator; it runs the shared definitions through `definitions`.
    Compiled(Validator, Arc<Definitions>),
    /// Sharing does not apply: compile the self-contained form.
    SelfContained,
    /// A definition it reaches does not compile.
    Invalid(SchemaError),
}

/// Compiles `schema` (made with shared `definitions`) against the shared definitions.
fn compile(schema: &Schema, definitions: &Arc<Definitions>) -> SharedCompile {
    let root = schema.root();
    if let Value::Object(map) = root
        && (map.contains_key("$defs") || map.contains_key("$schema"))
    {
        return SharedCompile::SelfContained;
    }
    let Some(rewritten) = rewrite(root, &definitions.index) else {
        return SharedCompile::SelfContained;
    };
    if let Err(outcome) = compile_reached(root, definitions) {
        return outcome;
    }
    match options(Arc::downgrade(definitions)).build(&rewritten) {
        Ok(validator) => SharedCompile::Compiled(validator, definitions.clone()),
        Err(error) => SharedCompile::Invalid(SchemaError {
            path: error.schema_path().to_string(),
            message: error.to_string(),
        }),
    }
}

/// Compiles every definition `root` reaches that is not compiled yet (with the definitions
/// it reaches); `Err` when one cannot be shared or does not compile.
fn compile_reached(root: &Value, definitions: &Arc<Definitions>) -> Result<(), SharedCompile> {
    let compiled = definitions.compiled();
    let mut direct = std::collections::BTreeSet::new();
    super::shared::collect_refs(root, &definitions.index, &mut direct);
    let mut todo: Vec<u32> = direct.into_iter().collect();
    let mut seen: std::collections::HashSet<u32> = std::collections::HashSet::new();
    while let Some(id) = todo.pop() {
        let index = id as usize;
        if compiled.closed[index].load(Ordering::Acquire) || !seen.insert(id) {
            continue;
        }
        let slot = compiled.slots[index].get_or_init(|| compile_one(definitions, index));
        match slot {
            Ok(_) => todo.extend(definitions.refs[index].iter().copied()),
            Err(Unshareable::Context) => return Err(SharedCompile::SelfContained),
            Err(Unshareable::Invalid(error)) => {
                let name = super::pointer::escape(&definitions.names[index]);
                return Err(SharedCompile::Invalid(SchemaError {
                    path: format!("/$defs/{name}{}", error.path),
                    message: error.message.clone(),
                }));
            }
        }
    }
    // Everything reached from here compiled: later schemas stop at these.
    for id in seen {
        compiled.closed[id as usize].store(true, Ordering::Release);
    }
    Ok(())
}

/// Compiles definition `index` on its own.
fn compile_one(
    definitions: &Arc<Definitions>,
    index: usize,
) -> Result<Arc<Validator>, Unshareable> {
    let body = &definitions.bodies[index];
    let rewritten = rewrite(body, &definitions.index).ok_or(Unshareable::Context)?;
    options(Arc::downgrade(definitions))
        .build(&rewritten)
        .map(Arc::new)
        .map_err(|error| {
            Unshareable::Invalid(SchemaError {
                path: error.schema_path().to_string(),
                message: error.to_string(),
            })
        })
}

fn options(definitions: Weak<Definitions>) -> jsonschema::ValidationOptions<'static> {
    plain_options().with_keyword(
        KEYWORD,
        move |_parent: &Map<String, Value>, value: &Value, _| {
            let index = value
                .as_u64()
                .and_then(|index| usize::try_from(index).ok())
                .ok_or_else(|| {
                    ValidationError::custom("a shared definition is named by its index")
                })?;
            Ok(Box::new(SharedReference {
                definitions: definitions.clone(),
                index,
            }) as Box<dyn for<'i> Keyword<'i>>)
        },
    )
}

/// Keywords that tie a schema to the document around it.
const CONTEXT_KEYWORDS: &[&str] = &[
    "$id",
    "$anchor",
    "$dynamicRef",
    "$dynamicAnchor",
    "$recursiveRef",
    "$recursiveAnchor",
    "unevaluatedProperties",
    "unevaluatedItems",
];

/// `schema` with each `{"$ref": "#/$defs/<name>"}` turned into `{KEYWORD: <index>}`;
/// `None` when it cannot be compiled apart from its document (see the module doc).
fn rewrite(schema: &Value, index: &HashMap<String, u32>) -> Option<Value> {
    match schema {
        Value::Object(map) => {
            let mut out = Map::with_capacity(map.len());
            for (key, member) in map {
                if CONTEXT_KEYWORDS.contains(&key.as_str()) {
                    return None;
                }
                if key == "$ref" {
                    let Value::String(target) = member else {
                        return None;
                    };
                    let token = target.strip_prefix(DEFS_PREFIX)?;
                    if token.contains('/') || token.contains('%') {
                        return None;
                    }
                    let id = *index.get(&*super::pointer::unescape(token))?;
                    out.insert(KEYWORD.to_owned(), Value::from(id));
                } else if DATA_KEYWORDS.contains(&key.as_str()) {
                    out.insert(key.clone(), member.clone());
                } else if NAME_MAPS.contains(&key.as_str())
                    && let Value::Object(named) = member
                {
                    let mut rewritten = Map::with_capacity(named.len());
                    for (name, schema) in named {
                        rewritten.insert(name.clone(), rewrite(schema, index)?);
                    }
                    out.insert(key.clone(), Value::Object(rewritten));
                } else {
                    out.insert(key.clone(), rewrite(member, index)?);
                }
            }
            Some(Value::Object(out))
        }
        Value::Array(items) => items
            .iter()
            .map(|item| rewrite(item, index))
            .collect::<Option<Vec<_>>>()
            .map(Value::Array),
        other => Some(other.clone()),
    }
}

/// The keyword: runs the shared validator of one definition.
struct SharedReference {
    definitions: Weak<Definitions>,
    index: usize,
}

impl SharedReference {
    /// The definition's validator (`None` once the definitions are gone, or when it did not
    /// compile: the schema's validator holds the definitions, and compiled them first).
    fn target(&self) -> Option<Arc<Validator>> {
        let definitions = self.definitions.upgrade()?;
        let slot = definitions
            .compiled()
            .slots
            .get(self.index)?
            .get_or_init(|| compile_one(&definitions, self.index));
        slot.as_ref().ok().cloned()
    }
}

impl<'i> Keyword<'i> for SharedReference {
    fn validate(&self, instance: &'i Value) -> Result<(), ValidationError<'i>> {
        match self.iter_errors(instance).next() {
            Some(error) => Err(error),
            None => Ok(()),
        }
    }

    fn is_valid(&self, instance: &'i Value) -> bool {
        self.target()
            .is_none_or(|validator| validator.is_valid(instance))
    }

    fn iter_errors(
        &self,
        instance: &'i Value,
    ) -> Box<dyn Iterator<Item = ValidationError<'i>> + 'i> {
        let Some(validator) = self.target() else {
            return Box::new(std::iter::empty());
        };
        let errors: Vec<ValidationError<'i>> = validator
            .iter_errors(instance)
            .map(|error| {
                let (path, message) = decode(error.instance_path(), &error);
                ValidationError::custom(encode(&path, &message))
            })
            .collect();
        Box::new(errors.into_iter())
    }
}

#[cfg(test)]
mod tests {
    use super::super::CompiledSchema;
    use super::*;
    use serde_json::json;

    fn definitions() -> Arc<Definitions> {
        Arc::new(Definitions::new([
            (
                "Node".to_owned(),
                json!({"type": "object", "required": ["tag"], "properties": {
                    "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
                    "tag": {"$ref": "#/$defs/a~1Tag"}}}),
            ),
            (
                "a/Tag".to_owned(),
                json!({"type": "string", "minLength": 2}),
            ),
            (
                "Named".to_owned(),
                json!({"properties": {"default": {"$ref": "#/$defs/a~1Tag"}, "enum": {"type": "integer"}}}),
            ),
        ]))
    }

    /// The violations of `value` as (path, message), sorted.
    fn violations(validator: &CompiledSchema, value: &Value) -> Vec<(String, String)> {
        let mut found: Vec<(String, String)> = validator
            .validate(value)
            .err()
            .unwrap_or_default()
            .into_iter()
            .map(|violation| (violation.path, violation.message))
            .collect();
        found.sort();
        found
    }

    #[test]
    fn shared_and_self_contained_validators_agree_on_every_violation() {
        let definitions = definitions();
        let schema = Schema::with_definitions(
            json!({"type": "object", "properties": {"root": {"$ref": "#/$defs/Node"}}}),
            definitions.clone(),
        );
        let shared = CompiledSchema::compile(&schema).unwrap();
        assert!(
            shared._definitions.is_some(),
            "compiled against the shared definitions"
        );
        let alone = CompiledSchema::compile(&*schema.transient_value()).unwrap();
        for value in [
            json!({"root": {"tag": "ok", "children": [{"tag": "x"}, {"children": [{"tag": 3}]}]}}),
            json!({"root": {"tag": "ok", "children": [{"tag": "fine"}]}}),
            json!({"root": []}),
            json!({}),
        ] {
            assert_eq!(shared.is_valid(&value), alone.is_valid(&value), "{value}");
            assert_eq!(
                violations(&shared, &value),
                violations(&alone, &value),
                "{value}"
            );
        }
        let deep = json!({"root": {"tag": "ok", "children": [{"tag": "x"}]}});
        assert_eq!(violations(&shared, &deep)[0].0, "/root/children/0/tag");
        // A second schema reuses the compiled definitions.
        let other =
            Schema::with_definitions(json!({"$ref": "#/$defs/a~1Tag"}), definitions.clone());
        let other = CompiledSchema::compile(&other).unwrap();
        assert!(!other.is_valid(&json!("x")));
        // Properties named like data keywords are schemas all the same.
        let named = Schema::with_definitions(json!({"$ref": "#/$defs/Named"}), definitions.clone());
        let named = CompiledSchema::compile(&named).unwrap();
        assert_eq!(
            violations(&named, &json!({"default": "x", "enum": "y"})).len(),
            2
        );
        assert!(
            definitions
                .compiled()
                .slots
                .iter()
                .all(|slot| slot.get().is_some())
        );
    }

    #[test]
    fn context_bound_schemas_compile_their_self_contained_form() {
        let definitions = Arc::new(Definitions::new([
            (
                "Open".to_owned(),
                json!({"properties": {"a": {}}, "unevaluatedProperties": false}),
            ),
            (
                "Deep".to_owned(),
                json!({"$ref": "#/$defs/Open/properties/a"}),
            ),
            ("Bad".to_owned(), json!({"type": 7})),
        ]));
        for root in [
            json!({"$ref": "#/$defs/Open"}),
            json!({"$ref": "#/$defs/Deep"}),
            json!({"$ref": "#"}),
            json!({"$defs": {"X": {}}, "$ref": "#/$defs/X"}),
        ] {
            let schema = Schema::with_definitions(root.clone(), definitions.clone());
            let compiled = CompiledSchema::compile(&schema).unwrap();
            assert!(compiled._definitions.is_none(), "{root}");
        }
        let open = Schema::with_definitions(json!({"$ref": "#/$defs/Open"}), definitions.clone());
        let open = CompiledSchema::compile(&open).unwrap();
        assert!(open.is_valid(&json!({"a": 1})) && !open.is_valid(&json!({"b": 1})));
        let bad = Schema::with_definitions(json!({"$ref": "#/$defs/Bad"}), definitions);
        let error = CompiledSchema::compile(&bad).unwrap_err();
        assert!(error.path.starts_with("/$defs/Bad"), "{error}");
    }
}
