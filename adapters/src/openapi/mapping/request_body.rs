//! Request bodies: an operation's `requestBody` as the `body` input property and the
//! [`BodyPlan`] its handler encodes with (see [`crate::openapi::body`] for the encodings).
//!
//! GET and HEAD request bodies are not imported. Of the body's media types the best ranked
//! wins; form encodings with `style`/`explode`/`allowReserved` switch a property to
//! query-style serialization; multipart binary properties become base64 strings.

use super::Found;
use super::parameters::explode_and_reserved;
use crate::openapi::body::{self, BodyKind, BodyPlan};
use crate::openapi::bundle::SchemaBundle;
use crate::openapi::document::{SpecVersion, join_pointer};
use crate::openapi::error::MapError;
use crate::openapi::params::Style;
use crate::openapi::refs::Resolver;
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, BTreeSet};

/// The request body: its input schema, whether it is required, and its plan.
#[derive(Debug)]
pub(super) struct MappedBody {
    pub schema: Value,
    pub required: bool,
    pub plan: BodyPlan,
}

/// The operation's `requestBody` and its pointer; `None` for GET and HEAD, whose bodies
/// are not imported.
pub(super) fn declared<'a>(
    op: &Found<'a>,
    operation: &'a Map<String, Value>,
) -> Option<(&'a Value, String)> {
    match operation.get("requestBody") {
        Some(value) if !matches!(op.method.as_str(), "get" | "head") => {
            Some((value, join_pointer(&op.pointer, "requestBody")))
        }
        _ => None,
    }
}

/// Maps a `requestBody` (at `pointer`); `None` when its `content` map is empty.
pub(super) fn map_request_body<'a>(
    bundle: &mut SchemaBundle<'_, 'a>,
    resolver: Resolver<'a>,
    value: &'a Value,
    pointer: &str,
) -> Result<Option<MappedBody>, MapError> {
    let (request_body, rb_pointer, _) = resolver.deref(value, pointer)?;
    let content = request_body
        .get("content")
        .and_then(Value::as_object)
        .ok_or_else(|| {
            MapError::new(
                join_pointer(&rb_pointer, "content"),
                "a request body needs a `content` map",
            )
        })?;
    let Some(key) = content
        .keys()
        .min_by_key(|key| (body::rank(key), key.as_str()))
    else {
        return Ok(None);
    };
    let media_pointer = join_pointer(&join_pointer(&rb_pointer, "content"), key);
    let media = &content[key.as_str()];
    let mut kind = body::kind_for(key);
    let mut schema = match media.get("schema") {
        Some(schema) => bundle.schema(schema, &join_pointer(&media_pointer, "schema"))?,
        None => match kind {
            BodyKind::Text => json!({"type": "string"}),
            _ => json!({}),
        },
    };
    match &mut kind {
        BodyKind::Raw => {
            schema = json!({"type": "string", "contentEncoding": "base64", "description": format!("The {key} body, base64-encoded.")});
        }
        BodyKind::Form { styled } => *styled = styled_properties(media),
        BodyKind::Multipart {
            binary,
            content_types,
        } => {
            *content_types = part_content_types(media);
            if let Some(raw) = media.get("schema") {
                *binary = binary_properties(resolver, raw, &media_pointer);
            }
            mark_base64(&mut schema, binary);
        }
        BodyKind::Json | BodyKind::Text => {}
    }
    if let Some(description) = request_body.get("description").and_then(Value::as_str)
        && let Value::Object(map) = &mut schema
        && !map.contains_key("description")
    {
        map.insert("description".into(), Value::String(description.to_owned()));
    }
    let required = request_body
        .get("required")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    Ok(Some(MappedBody {
        schema,
        required,
        plan: BodyPlan {
            content_type: body::concrete_content_type(key),
            kind,
        },
    }))
}

/// Form properties whose `encoding` entry sets `style`, `explode` or `allowReserved`:
/// (style, explode, allowReserved).
fn styled_properties(media: &Value) -> BTreeMap<String, (Style, bool, bool)> {
    let mut styled = BTreeMap::new();
    let Some(Value::Object(encoding)) = media.get("encoding") else {
        return styled;
    };
    for (prop, entry) in encoding {
        if entry.get("style").is_some()
            || entry.get("explode").is_some()
            || entry.get("allowReserved").is_some()
        {
            let style = entry
                .get("style")
                .and_then(Value::as_str)
                .and_then(Style::parse)
                .unwrap_or(Style::Form);
            let (explode, reserved) = explode_and_reserved(entry, style);
            styled.insert(prop.clone(), (style, explode, reserved));
        }
    }
    styled
}

/// Multipart properties whose `encoding` entry sets a `contentType` (the first one listed).
fn part_content_types(media: &Value) -> BTreeMap<String, String> {
    let mut content_types = BTreeMap::new();
    let Some(Value::Object(encoding)) = media.get("encoding") else {
        return content_types;
    };
    for (prop, entry) in encoding {
        if let Some(content_type) = entry.get("contentType").and_then(Value::as_str) {
            content_types.insert(
                prop.clone(),
                content_type
                    .split(',')
                    .next()
                    .unwrap_or("")
                    .trim()
                    .to_owned(),
            );
        }
    }
    content_types
}

/// Properties of a multipart schema that carry binary content.
fn binary_properties(resolver: Resolver<'_>, schema: &Value, pointer: &str) -> BTreeSet<String> {
    let v30 = resolver.version == SpecVersion::V3_0;
    let mut out = BTreeSet::new();
    let Ok((schema, _, _)) = resolver.deref(schema, pointer) else {
        return out;
    };
    let mut objects = vec![schema];
    if let Some(Value::Array(members)) = schema.get("allOf") {
        for member in members {
            if let Ok((member, _, _)) = resolver.deref(member, pointer) {
                objects.push(member);
            }
        }
    }
    for object in objects {
        let Some(Value::Object(properties)) = object.get("properties") else {
            continue;
        };
        for (name, property) in properties {
            let Ok((property, _, _)) = resolver.deref(property, pointer) else {
                continue;
            };
            let items = property
                .get("items")
                .and_then(|items| resolver.deref(items, pointer).ok())
                .map(|(items, _, _)| items);
            if body::is_binary_schema(property, v30)
                || items.is_some_and(|items| body::is_binary_schema(items, v30))
            {
                out.insert(name.clone());
            }
        }
    }
    out
}

/// Adds `contentEncoding: base64` to binary properties of a bundled multipart schema.
fn mark_base64(schema: &mut Value, binary: &BTreeSet<String>) {
    let Some(Value::Object(properties)) = schema.get_mut("properties") else {
        return;
    };
    for name in binary {
        let Some(Value::Object(property)) = properties.get_mut(name) else {
            continue;
        };
        let target = match property.get_mut("items") {
            Some(Value::Object(items)) => items,
            _ => property,
        };
        target.insert("contentEncoding".into(), json!("base64"));
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{document, found};
    use super::*;
    use crate::openapi::bundle::Definitions;

    /// Maps the request body of `POST /up` in a 3.1 document whose body is `body`.
    fn body_of(body: Value) -> Result<Option<MappedBody>, MapError> {
        let root = json!({"openapi": "3.1.0", "info": {"title": "t", "version": "1"}, "paths": {"/up": {"post": {"requestBody": body}, "get": {"requestBody": {}}}}});
        let doc = document(root);
        let resolver = Resolver {
            root: &doc.root,
            version: doc.version,
        };
        let defs = Definitions::new(resolver, usize::MAX);
        let mut bundle = SchemaBundle::new(&defs);
        let get = found(resolver, "/up", "get");
        assert!(declared(&get, get.operation.as_object().unwrap()).is_none());
        let op = found(resolver, "/up", "post");
        let (value, pointer) = declared(&op, op.operation.as_object().unwrap()).unwrap();
        let mapped = map_request_body(&mut bundle, resolver, value, &pointer)?;
        Ok(mapped.map(|mut mapped| {
            mapped.schema = bundle.finish(mapped.schema).unwrap();
            mapped
        }))
    }

    #[test]
    fn json_wins_and_takes_the_description() {
        let mapped = body_of(
            json!({"required": true, "description": "A pet.", "content": {
                "text/plain": {},
                "application/json": {"schema": {"type": "object"}}
            }}),
        )
        .unwrap()
        .unwrap();
        assert!(mapped.required);
        assert_eq!(mapped.plan.content_type, "application/json");
        assert_eq!(mapped.plan.kind, BodyKind::Json);
        assert_eq!(
            mapped.schema,
            json!({"type": "object", "description": "A pet."})
        );
    }

    #[test]
    fn raw_form_and_multipart_bodies() {
        let raw = body_of(json!({"content": {"application/octet-stream": {}}}))
            .unwrap()
            .unwrap();
        assert_eq!(raw.plan.kind, BodyKind::Raw);
        assert_eq!(raw.schema["contentEncoding"], "base64");

        let form = body_of(json!({"content": {"application/x-www-form-urlencoded": {
            "schema": {"type": "object"},
            "encoding": {"tags": {"explode": false}, "plain": {"contentType": "text/plain"}}
        }}}))
        .unwrap()
        .unwrap();
        let BodyKind::Form { styled } = form.plan.kind else {
            panic!("{:?}", form.plan.kind)
        };
        assert_eq!(
            styled.into_iter().collect::<Vec<_>>(),
            [("tags".to_owned(), (Style::Form, false, false))]
        );

        let multipart = body_of(json!({"content": {"multipart/form-data": {
            "schema": {"type": "object", "properties": {
                "file": {"type": "string", "contentMediaType": "image/png"},
                "files": {"type": "array", "items": {"type": "string", "contentMediaType": "image/png"}},
                "name": {"type": "string"}
            }},
            "encoding": {"file": {"contentType": "image/png, image/jpeg"}}
        }}}))
        .unwrap()
        .unwrap();
        let BodyKind::Multipart {
            binary,
            content_types,
        } = multipart.plan.kind
        else {
            panic!("{:?}", multipart.plan.kind)
        };
        assert_eq!(binary.into_iter().collect::<Vec<_>>(), ["file", "files"]);
        assert_eq!(content_types["file"], "image/png");
        let properties = &multipart.schema["properties"];
        assert_eq!(properties["file"]["contentEncoding"], "base64");
        assert_eq!(properties["files"]["items"]["contentEncoding"], "base64");
        assert!(properties["name"].get("contentEncoding").is_none());
    }

    #[test]
    fn empty_and_missing_content() {
        assert!(body_of(json!({"content": {}})).unwrap().is_none());
        let error = body_of(json!({"description": "no content"})).unwrap_err();
        assert_eq!(error.pointer, "/paths/~1up/post/requestBody/content");
    }
}
