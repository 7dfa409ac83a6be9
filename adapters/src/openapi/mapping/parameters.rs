//! Parameters: an operation's parameters as input properties and [`ParamPlan`]s, and the
//! check that every `{name}` of the path template is declared.
//!
//! Path-item parameters apply unless the operation redefines the same name and location. A
//! name already taken (by another location, or `body`) becomes `<in>_<name>` (then
//! `<in>_<name>_2`, ...). Header parameters named `Accept`, `Content-Type` or
//! `Authorization` are ignored.

use super::{Found, ParamPlan};
use crate::openapi::bundle::SchemaBundle;
use crate::openapi::document::join_pointer;
use crate::openapi::error::MapError;
use crate::openapi::params::{Location, Style};
use crate::openapi::refs::Resolver;
use opkit::schema::json_type_name;
use serde_json::{Map, Value, json};
use std::collections::HashSet;

/// The input side of an operation as it is built: properties, required ones, parameters.
#[derive(Debug, Default)]
pub(super) struct Inputs {
    pub properties: Map<String, Value>,
    pub required: Vec<Value>,
    pub params: Vec<ParamPlan>,
}

/// Maps the parameters that apply to `op` into input properties; `body_taken` reserves the
/// `body` property for the request body.
pub(super) fn map_parameters<'a>(
    bundle: &mut SchemaBundle<'_, 'a>,
    resolver: Resolver<'a>,
    op: &Found<'a>,
    body_taken: bool,
) -> Result<Inputs, MapError> {
    let mut inputs = Inputs::default();
    let mut taken: HashSet<String> = HashSet::new();
    if body_taken {
        taken.insert("body".to_owned());
    }
    for (param, pointer, overrides) in collect_parameters(resolver, op)? {
        let (plan, schema, is_required) = map_parameter(bundle, param, &pointer, &overrides)?;
        let Some(mut plan) = plan else { continue };
        let mut property = plan.name.clone();
        if taken.contains(&property) {
            property = format!("{}_{}", plan.location.as_str(), plan.name);
            let base = property.clone();
            let mut n = 2;
            while taken.contains(&property) {
                property = format!("{base}_{n}");
                n += 1;
            }
        }
        taken.insert(property.clone());
        plan.property = property.clone();
        if is_required {
            inputs.required.push(Value::String(property.clone()));
        }
        inputs.properties.insert(property, schema);
        inputs.params.push(plan);
    }
    Ok(inputs)
}

/// Every `{name}` of the path template needs a path parameter.
pub(super) fn check_path_template(op: &Found<'_>, params: &[ParamPlan]) -> Result<(), MapError> {
    for template in template_names(&op.path) {
        if !params
            .iter()
            .any(|p| p.location == Location::Path && p.name == template)
        {
            return Err(MapError::new(
                &op.pointer,
                format!(
                    "the path parameter `{template}` of {} is not declared",
                    op.path
                ),
            ));
        }
    }
    Ok(())
}

/// The `{name}`s of a path template.
pub(crate) fn template_names(path: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = path;
    while let Some(open) = rest.find('{') {
        let after = &rest[open + 1..];
        let Some(close) = after.find('}') else { break };
        names.push(after[..close].to_owned());
        rest = &after[close + 1..];
    }
    names
}

/// A parameter object, its pointer and the reference's overrides.
type RawParameter<'a> = (&'a Value, String, Map<String, Value>);

/// Path-item parameters overridden by the operation's (same name and location).
fn collect_parameters<'a>(
    resolver: Resolver<'a>,
    op: &Found<'a>,
) -> Result<Vec<RawParameter<'a>>, MapError> {
    let mut out: Vec<RawParameter<'a>> = Vec::new();
    let lists = [
        (
            op.path_item.get("parameters"),
            join_pointer(&op.path_item_pointer, "parameters"),
        ),
        (
            op.operation.get("parameters"),
            join_pointer(&op.pointer, "parameters"),
        ),
    ];
    for (list, list_pointer) in lists {
        let Some(list) = list else { continue };
        let list = list.as_array().ok_or_else(|| {
            MapError::new(
                &list_pointer,
                format!(
                    "`parameters` must be an array, found {}",
                    json_type_name(list)
                ),
            )
        })?;
        for (i, raw) in list.iter().enumerate() {
            let pointer = join_pointer(&list_pointer, &i.to_string());
            let (param, param_pointer, overrides) = resolver.deref(raw, &pointer)?;
            let key = (param.get("name").cloned(), param.get("in").cloned());
            out.retain(|(existing, _, _)| {
                (existing.get("name").cloned(), existing.get("in").cloned()) != key
            });
            out.push((param, param_pointer, overrides));
        }
    }
    Ok(out)
}

/// Maps one parameter: its plan (`None` when ignored), input schema and requiredness.
fn map_parameter<'a>(
    bundle: &mut SchemaBundle<'_, 'a>,
    param: &'a Value,
    pointer: &str,
    overrides: &Map<String, Value>,
) -> Result<(Option<ParamPlan>, Value, bool), MapError> {
    let name = param.get("name").and_then(Value::as_str).ok_or_else(|| {
        MapError::new(
            join_pointer(pointer, "name"),
            "a parameter needs a string `name`",
        )
    })?;
    let location_text = param
        .get("in")
        .and_then(Value::as_str)
        .ok_or_else(|| MapError::new(join_pointer(pointer, "in"), "a parameter needs `in`"))?;
    let location = Location::parse(location_text).ok_or_else(|| {
        MapError::new(
            join_pointer(pointer, "in"),
            format!("unknown parameter location {location_text:?}"),
        )
    })?;
    if location == Location::Header
        && ["accept", "content-type", "authorization"].contains(&name.to_ascii_lowercase().as_str())
    {
        return Ok((None, Value::Null, false));
    }
    let style = match param.get("style") {
        None => location.default_style(),
        Some(value) => value.as_str().and_then(Style::parse).ok_or_else(|| {
            MapError::new(
                join_pointer(pointer, "style"),
                format!("unknown style {value}"),
            )
        })?,
    };
    if location != Location::QueryString && !style.allowed_in(location) {
        return Err(MapError::new(
            join_pointer(pointer, "style"),
            format!(
                "style {:?} cannot be used for a {} parameter",
                param["style"],
                location.as_str()
            ),
        ));
    }
    let (explode, allow_reserved) = explode_and_reserved(param, style);
    let (mut schema, content) = parameter_schema(bundle, param, pointer)?;
    if let Value::Object(map) = &mut schema {
        let description = overrides
            .get("description")
            .or_else(|| param.get("description"));
        if let Some(description) = description
            && !map.contains_key("description")
        {
            map.insert("description".into(), description.clone());
        }
        if param.get("deprecated") == Some(&Value::Bool(true)) {
            map.insert("deprecated".into(), Value::Bool(true));
        }
    }
    let required = location == Location::Path
        || param
            .get("required")
            .and_then(Value::as_bool)
            .unwrap_or(false);
    let plan = ParamPlan {
        name: name.to_owned(),
        location,
        property: String::new(),
        style,
        explode,
        allow_reserved,
        content,
    };
    Ok((Some(plan), schema, required))
}

/// The `explode` (default: the style's) and `allowReserved` (default `false`) of a parameter
/// or of a form body's `encoding` entry.
pub(super) fn explode_and_reserved(object: &Value, style: Style) -> (bool, bool) {
    let explode = object
        .get("explode")
        .and_then(Value::as_bool)
        .unwrap_or(style.default_explode());
    let allow_reserved = object
        .get("allowReserved")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    (explode, allow_reserved)
}

/// A parameter's schema: its `schema`, else the schema of its (first) `content` entry, whose
/// media type it is serialized with.
fn parameter_schema<'a>(
    bundle: &mut SchemaBundle<'_, 'a>,
    param: &'a Value,
    pointer: &str,
) -> Result<(Value, Option<String>), MapError> {
    Ok(match (param.get("schema"), param.get("content")) {
        (Some(schema), _) => (
            bundle.schema(schema, &join_pointer(pointer, "schema"))?,
            None,
        ),
        (None, Some(Value::Object(content))) => match content.iter().next() {
            Some((media, entry)) => {
                let media_pointer = join_pointer(&join_pointer(pointer, "content"), media);
                let schema = match entry.get("schema") {
                    Some(schema) => {
                        bundle.schema(schema, &join_pointer(&media_pointer, "schema"))?
                    }
                    None => json!({}),
                };
                (schema, Some(media.clone()))
            }
            None => (json!({}), None),
        },
        _ => (json!({}), None),
    })
}

#[cfg(test)]
mod tests {
    use super::super::tests::{document, found};
    use super::*;
    use crate::openapi::bundle::Definitions;

    fn inputs_of(root: &Value, body_taken: bool) -> Result<Inputs, MapError> {
        let doc = document(root.clone());
        let resolver = Resolver {
            root,
            version: doc.version,
        };
        let defs = Definitions::new(resolver, usize::MAX);
        let mut bundle = SchemaBundle::new(&defs);
        let op = found(resolver, "/items/{id}", "get");
        map_parameters(&mut bundle, resolver, &op, body_taken)
    }

    #[test]
    fn operation_parameters_override_path_item_ones_and_names_are_deduplicated() {
        let root = json!({"openapi": "3.1.0", "info": {"title": "t", "version": "1"}, "paths": {"/items/{id}": {
            "parameters": [
                {"name": "id", "in": "path", "schema": {"type": "string"}, "description": "item"},
                {"name": "id", "in": "query", "schema": {"type": "integer"}}
            ],
            "get": {"parameters": [
                {"name": "id", "in": "path", "schema": {"type": "integer"}},
                {"name": "body", "in": "query", "required": true, "schema": {"type": "string"}},
                {"name": "Accept", "in": "header", "schema": {"type": "string"}}
            ]}
        }}});
        let inputs = inputs_of(&root, true).unwrap();
        let names: Vec<_> = inputs
            .params
            .iter()
            .map(|p| (p.name.as_str(), p.location, p.property.as_str()))
            .collect();
        assert_eq!(
            names,
            [
                ("id", Location::Query, "id"),
                ("id", Location::Path, "path_id"),
                ("body", Location::Query, "query_body"),
            ]
        );
        assert_eq!(inputs.properties["path_id"], json!({"type": "integer"}));
        assert_eq!(inputs.required, [json!("path_id"), json!("query_body")]);
    }

    #[test]
    fn content_parameters_and_bad_styles() {
        let root = json!({"openapi": "3.1.0", "info": {"title": "t", "version": "1"}, "paths": {"/items/{id}": {"get": {"parameters": [
            {"name": "id", "in": "path", "content": {"application/json": {"schema": {"type": "object"}}}},
            {"name": "f", "in": "query", "deprecated": true, "schema": {"type": "string"}}
        ]}}}});
        let inputs = inputs_of(&root, false).unwrap();
        assert_eq!(
            inputs.params[0].content.as_deref(),
            Some("application/json")
        );
        assert_eq!(
            inputs.properties["f"],
            json!({"type": "string", "deprecated": true})
        );

        let bad = json!({"openapi": "3.1.0", "info": {"title": "t", "version": "1"}, "paths": {"/items/{id}": {"get": {"parameters": [
            {"name": "id", "in": "path", "style": "deepObject", "schema": {"type": "object"}}
        ]}}}});
        let error = inputs_of(&bad, false).unwrap_err();
        assert_eq!(error.pointer, "/paths/~1items~1{id}/get/parameters/0/style");
    }

    #[test]
    fn the_path_template_needs_declared_path_parameters() {
        assert_eq!(template_names("/a/{x}/b/{y}"), ["x", "y"]);
        assert!(template_names("/a/{open").is_empty());
        let root = json!({"openapi": "3.1.0", "info": {"title": "t", "version": "1"}, "paths": {"/items/{id}": {"get": {}}}});
        let doc = document(root.clone());
        let resolver = Resolver {
            root: &root,
            version: doc.version,
        };
        let op = found(resolver, "/items/{id}", "get");
        let error = check_path_template(&op, &[]).unwrap_err();
        assert!(error.message.contains("`id`"), "{}", error.message);
        let declared = ParamPlan {
            name: "id".into(),
            location: Location::Path,
            property: "id".into(),
            style: Style::Simple,
            explode: false,
            allow_reserved: false,
            content: None,
        };
        check_path_template(&op, &[declared]).unwrap();
    }
}
