//! The closed form (see [`super::closed`]) of a shared [`Schema`]: its root closed, pointing
//! into a closed twin of its import's [`Definitions`] that is built once and shared, so the
//! output fast path of every operation of an import compiles each closed definition once,
//! instead of a self-contained closed copy of everything each operation reaches.

use super::closed::closed_schema;
use super::shared::{ClosedTwin, Definitions, Schema, collect_refs};
use serde_json::Value;
use std::collections::BTreeSet;
use std::sync::Arc;

/// The closed form of `schema`, or `None` when it (or a definition it reaches) has none.
pub(crate) fn closed_form(schema: &Schema) -> Option<Schema> {
    let Some(definitions) = schema.definitions() else {
        return closed_schema(schema.root()).map(Schema::new);
    };
    let root = closed_schema(schema.root())?;
    let twin = definitions
        .closed_twin()
        .get_or_init(|| twin_of(definitions));
    // The closed root keeps the root's references; each flag covers all a definition
    // reaches, so the root's own references are enough to look at.
    let mut direct = BTreeSet::new();
    collect_refs(&root, &definitions.index, &mut direct);
    if direct.into_iter().any(|id| !twin.closable[id as usize]) {
        return None;
    }
    Some(Schema::with_definitions(root, twin.definitions.clone()))
}

/// Every body of `definitions` closed, or `true` where it has no closed form; marked
/// closable when it and every definition it reaches have one (computed once here, so a
/// schema's closed form looks only at its root's references).
fn twin_of(definitions: &Definitions) -> ClosedTwin {
    let mut closable = Vec::with_capacity(definitions.len());
    let bodies: Vec<(String, Value)> = definitions
        .iter()
        .map(|(name, body)| {
            let closed = closed_schema(body);
            closable.push(closed.is_some());
            (name.to_owned(), closed.unwrap_or(Value::Bool(true)))
        })
        .collect();
    // Until nothing changes: a definition that refers to one without a closed form (itself,
    // or through what it reaches) has none either. Each round clears at least one mark or
    // ends, so there are at most as many rounds as definitions.
    let mut changed = true;
    while changed {
        changed = false;
        for (id, refs) in definitions.refs.iter().enumerate() {
            if closable[id] && refs.iter().any(|&next| !closable[next as usize]) {
                closable[id] = false;
                changed = true;
            }
        }
    }
    ClosedTwin {
        definitions: Arc::new(Definitions::new(bodies)),
        closable: closable.into_boxed_slice(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::CompiledSchema;
    use serde_json::json;

    fn definitions() -> Arc<Definitions> {
        Arc::new(Definitions::new([
            (
                "Pet".to_owned(),
                json!({"type": "object", "properties": {"tag": {"$ref": "#/$defs/Tag"}}}),
            ),
            (
                "Tag".to_owned(),
                json!({"type": "object", "properties": {"name": {"type": "string"}}}),
            ),
            (
                "Either".to_owned(),
                json!({"anyOf": [{"type": "string"}, {"$ref": "#/$defs/Tag"}]}),
            ),
            (
                "Holder".to_owned(),
                json!({"type": "object", "properties": {"either": {"$ref": "#/$defs/Either"}}}),
            ),
        ]))
    }

    #[test]
    fn a_shared_schema_closes_into_one_twin_of_its_definitions() {
        let defs = definitions();
        let pets = Schema::with_definitions(
            json!({"type": "array", "items": {"$ref": "#/$defs/Pet"}}),
            defs.clone(),
        );
        let closed = closed_form(&pets).expect("closable");
        let twin = closed.definitions().expect("still shared").clone();
        let tag = Schema::with_definitions(json!({"$ref": "#/$defs/Tag"}), defs.clone());
        let again = closed_form(&tag).unwrap();
        assert!(
            Arc::ptr_eq(&twin, again.definitions().unwrap()),
            "one twin per import"
        );
        let validator = CompiledSchema::compile(&closed).unwrap();
        assert!(validator.is_valid(&json!([{"tag": {"name": "a"}}])));
        assert!(
            !validator.is_valid(&json!([{"tag": {"name": "a", "extra": 1}}])),
            "a nested extra is refused"
        );
        // The same answers as the self-contained closed copy.
        let alone = closed_schema(&pets).unwrap();
        assert_eq!(closed.as_value(), &alone);
        // A definition without a closed form, reached: no closed form.
        let either = Schema::with_definitions(json!({"$ref": "#/$defs/Either"}), defs.clone());
        assert!(closed_form(&either).is_none());
        // Nor one that reaches it through a definition that has one itself.
        let holder = Schema::with_definitions(
            json!({"type": "array", "items": {"$ref": "#/$defs/Holder"}}),
            defs,
        );
        assert!(closed_form(&holder).is_none());
        // Self-contained schemas close as before.
        let owned = Schema::new(json!({"type": "object", "properties": {}}));
        assert_eq!(
            closed_form(&owned).unwrap(),
            json!({"type": "object", "properties": {}, "additionalProperties": false})
        );
    }
}
