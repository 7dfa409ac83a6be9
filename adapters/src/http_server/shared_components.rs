//! Operation schemas that share an import's definitions, placed in the OpenAPI document
//! once: each [`Definitions`] becomes one set of `components/schemas` entries
//! (`<prefix><Name>`, the prefix the namespace of the first operation that uses it), and
//! each operation's schema component is its root with its `$ref`s pointing there. Copying
//! every definition an operation reaches under its own `<id>.Input.<Name>` would repeat the
//! shared ones for every operation (Microsoft Graph's reach thousands each).
//!
//! A schema that does not share definitions, or whose root has its own `$defs`, is placed as
//! before ([`add_component`]), from a self-contained form built for it and not kept.

use super::refs::{add_component, component_key, component_rewriter, rewrite_refs};
use opkit::schema::pointer;
use opkit::schema::{Definitions, Schema};
use serde_json::{Map, Value, json};
use std::borrow::Cow;
use std::sync::Arc;

/// The shared definitions already in the document, each with its component prefix.
#[derive(Default)]
pub(crate) struct SharedComponents {
    placed: Vec<(Arc<Definitions>, String)>,
}

impl SharedComponents {
    /// Adds `schema` under `key` (its definitions shared when it shares them, else under
    /// `{key}.<Name>`); returns the reference object and the prefix its definitions'
    /// components have.
    pub(crate) fn add(
        &mut self,
        components: &mut Map<String, Value>,
        key: &str,
        schema: &Schema,
        namespace: &str,
    ) -> (Value, String) {
        let own_prefix = format!("{key}.");
        let Some(definitions) = shares(schema) else {
            let reference = add_component(components, key, &own_prefix, &schema.transient_value());
            return (reference, own_prefix);
        };
        let prefix = self.prefix_of(components, definitions, namespace);
        let mut root = match schema.root() {
            Value::Bool(true) => Value::Object(Map::new()),
            other => other.clone(),
        };
        if let Value::Object(map) = &mut root {
            map.remove("$schema");
            map.remove("$id");
        }
        rewrite_refs(&mut root, &mut component_rewriter(key, &prefix));
        components.insert(key.to_owned(), root);
        let reference = json!({ "$ref": format!("#/components/schemas/{}", pointer::escape(key)) });
        (reference, prefix)
    }

    /// The prefix of `definitions`' components, placing them the first time.
    fn prefix_of(
        &mut self,
        components: &mut Map<String, Value>,
        definitions: &Arc<Definitions>,
        namespace: &str,
    ) -> String {
        if let Some((_, prefix)) = self
            .placed
            .iter()
            .find(|(placed, _)| Arc::ptr_eq(placed, definitions))
        {
            return prefix.clone();
        }
        let mut prefix = format!("{namespace}.");
        let mut counter = 1;
        while self.placed.iter().any(|(_, taken)| *taken == prefix) {
            counter += 1;
            prefix = format!("{namespace}.{counter}.");
        }
        for (name, body) in definitions.iter() {
            let key = component_key(&format!("{prefix}{name}"));
            let mut body = body.clone();
            rewrite_refs(&mut body, &mut component_rewriter(&key, &prefix));
            components.insert(key, body);
        }
        self.placed.push((definitions.clone(), prefix.clone()));
        prefix
    }
}

/// The definitions `schema` shares, when its root can point at them as they are placed.
fn shares(schema: &Schema) -> Option<&Arc<Definitions>> {
    let definitions = schema.definitions()?;
    match schema.root() {
        Value::Object(map) if map.contains_key("$defs") || map.contains_key("definitions") => None,
        _ => Some(definitions),
    }
}

/// Enough of `schema` to read its query shape: the root, and (for a shared schema) the
/// definitions its top level and its properties name through `$ref` chains and `items`,
/// without building the self-contained form.
pub(crate) fn query_view(schema: &Schema) -> Cow<'_, Value> {
    let (Some(definitions), Value::Object(root)) = (shares(schema), schema.root()) else {
        return schema.transient_value();
    };
    let mut defs = Map::new();
    let mut todo: Vec<&Value> = vec![schema.root()];
    if let Some(Value::Object(properties)) = root.get("properties") {
        todo.extend(properties.values());
    }
    while let Some(node) = todo.pop() {
        if let Some(items) = node.get("items") {
            todo.push(items);
        }
        let Some(name) = node
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(opkit::schema::refs::definition_of)
            .map(std::borrow::Cow::into_owned)
        else {
            continue;
        };
        if defs.contains_key(&name) {
            continue;
        }
        if let Some(body) = definitions.get(&name) {
            defs.insert(name, body.clone());
            todo.push(body);
        }
    }
    let mut view = root.clone();
    if !defs.is_empty() {
        view.insert("$defs".to_owned(), Value::Object(defs));
    }
    Cow::Owned(Value::Object(view))
}

#[cfg(test)]
mod tests {
    use super::super::openapi::{DocumentInfo, document};
    use super::*;
    use opkit::{Handler, OperationKind, OperationRegistry, OperationSpec};

    /// Every `#/components/schemas/..` reference of `value` that names no component.
    fn dangling(value: &Value, schemas: &Map<String, Value>, out: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                for (key, member) in map {
                    if key == "$ref"
                        && let Some(target) = member.as_str()
                        && let Some(rest) = target.strip_prefix("#/components/schemas/")
                    {
                        let name = rest.split('/').next().unwrap_or(rest);
                        let name = pointer::unescape(name).into_owned();
                        if !schemas.contains_key(&name) {
                            out.push(target.to_owned());
                        }
                    } else {
                        dangling(member, schemas, out);
                    }
                }
            }
            Value::Array(items) => items.iter().for_each(|item| dangling(item, schemas, out)),
            _ => {}
        }
    }

    #[test]
    fn shared_definitions_are_placed_once_and_referenced() {
        let definitions = Arc::new(Definitions::new([
            (
                "Pet".to_owned(),
                json!({"type": "object", "properties": {"tag": {"$ref": "#/$defs/Tag"}}}),
            ),
            ("Tag".to_owned(), json!({"type": "string"})),
        ]));
        let registry = OperationRegistry::new();
        for name in ["get", "list"] {
            let input = Schema::with_definitions(
                json!({"type": "object", "properties": {"tag": {"$ref": "#/$defs/Tag"}}}),
                definitions.clone(),
            );
            let output = Schema::with_definitions(
                json!({"type": "array", "items": {"$ref": "#/$defs/Pet"}}),
                definitions.clone(),
            );
            let spec = OperationSpec::new("pets", name, OperationKind::Query)
                .input_schema(input)
                .output_schema(output);
            registry
                .register(spec, Handler::unary(|_, _| async { Ok(json!([])) }))
                .unwrap();
        }
        let info = DocumentInfo {
            openapi: super::super::openapi::OpenApiVersion::default(),
            title: "t".into(),
            version: "1".into(),
            description: None,
            authenticated: false,
            security: None,
            invalid_input: 400,
            invalid_parameter: 400,
        };
        let doc = document(&registry, &info, "");
        let schemas = doc["components"]["schemas"].as_object().unwrap();
        assert!(schemas.contains_key("pets.Pet") && schemas.contains_key("pets.Tag"));
        assert!(
            !schemas
                .keys()
                .any(|key| key.contains(".Input.") || key.contains(".Output."))
        );
        assert_eq!(
            schemas["pets.get.Output"],
            json!({"type": "array", "items": {"$ref": "#/components/schemas/pets.Pet"}})
        );
        assert_eq!(
            schemas["pets.Pet"]["properties"]["tag"],
            json!({"$ref": "#/components/schemas/pets.Tag"})
        );
        // The query parameter of the GET form names the shared component too.
        let parameter = &doc["paths"]["/ops/pets.get"]["get"]["parameters"][0];
        assert_eq!(
            parameter["schema"],
            json!({"$ref": "#/components/schemas/pets.Tag"})
        );
        let mut missing = Vec::new();
        dangling(&doc, schemas, &mut missing);
        assert!(missing.is_empty(), "{missing:?}");
    }
}
