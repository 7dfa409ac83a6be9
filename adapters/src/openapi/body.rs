//! Request bodies: choosing the media type and encoding the `body` input.
//!
//! Of a `requestBody`'s media types, the first kind present wins: JSON (`application/json`,
//! `+json`), `application/x-www-form-urlencoded`, `multipart/form-data`, `text/*`, anything
//! else (sent as raw bytes).
//!
//! * JSON: the value as JSON.
//! * Form: each top-level property a `name=value` pair; arrays of primitives repeat the
//!   name, objects (and objects in arrays) are sent as their JSON text — unless the
//!   `encoding` entry of the property sets `style`/`explode`/`allowReserved`, which switches
//!   it to query-style serialization.
//! * Multipart: one part per property, array properties repeat the part name; objects are
//!   JSON parts. A *binary* property (`format: binary` in 3.0, `contentMediaType` without
//!   `contentEncoding` in 3.1+) takes its bytes as a **base64 string** in the input (the
//!   input schema says so with `contentEncoding: base64`) and is sent as a file part named
//!   after the property; `encoding.<prop>.contentType` overrides the part's type.
//! * Text: the string as is (other values as their JSON text).
//! * Raw (`application/octet-stream`, `image/*`, ...): the input is a base64 string, sent as
//!   the decoded bytes.
//!
//! GET and HEAD request bodies are not imported (3.0 says consumers SHALL ignore them; 3.1
//! discourages them); bodies of DELETE and other methods are.

use super::media::{MediaType, is_json, is_text};
use super::params::{self, Style};
use base64::Engine;
use opkit::CallError;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};

/// How the body is encoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum BodyKind {
    Json,
    Form {
        /// Properties with query-style encoding: (style, explode, allowReserved).
        styled: BTreeMap<String, (Style, bool, bool)>,
    },
    Multipart {
        /// Binary properties (base64 in the input).
        binary: BTreeSet<String>,
        /// `encoding.<prop>.contentType`.
        content_types: BTreeMap<String, String>,
    },
    Text,
    Raw,
}

/// The body part of an operation's plan.
#[derive(Debug, Clone)]
pub(crate) struct BodyPlan {
    /// The `Content-Type` sent (wildcards replaced by a concrete type).
    pub content_type: String,
    pub kind: BodyKind,
}

/// Ranks a media type key for choosing; lower is better.
pub(crate) fn rank(key: &str) -> u8 {
    let essence = MediaType::parse(key).essence;
    if essence == "application/json" {
        0
    } else if is_json(&essence) {
        1
    } else if essence == "application/x-www-form-urlencoded" {
        2
    } else if essence.starts_with("multipart/") {
        3
    } else if essence == "text/plain" {
        4
    } else if is_text(&essence) {
        5
    } else {
        6
    }
}

/// The kind of body for a chosen media type key.
pub(crate) fn kind_for(key: &str) -> BodyKind {
    match rank(key) {
        0 | 1 => BodyKind::Json,
        2 => BodyKind::Form {
            styled: BTreeMap::new(),
        },
        3 => BodyKind::Multipart {
            binary: BTreeSet::new(),
            content_types: BTreeMap::new(),
        },
        4 | 5 => BodyKind::Text,
        _ => BodyKind::Raw,
    }
}

/// The `Content-Type` to send for a media type key (`*/*`, `image/*` → octet-stream).
pub(crate) fn concrete_content_type(key: &str) -> String {
    if key.contains('*') {
        "application/octet-stream".to_owned()
    } else {
        key.to_owned()
    }
}

/// `true` when a (document) schema describes binary content.
pub(crate) fn is_binary_schema(schema: &Value, v30: bool) -> bool {
    let Some(map) = schema.as_object() else {
        return false;
    };
    if v30 {
        return map.get("format").and_then(Value::as_str) == Some("binary");
    }
    map.contains_key("contentMediaType") && !map.contains_key("contentEncoding")
        || map.get("format").and_then(Value::as_str) == Some("binary")
}

/// What the body encodes to.
pub(crate) enum Encoded {
    Bytes(Vec<u8>),
    Multipart(reqwest::multipart::Form),
}

fn b64(text: &str, what: &str) -> Result<Vec<u8>, CallError> {
    base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .map_err(|error| {
            CallError::new(
                opkit::ErrorCode::ValidationError,
                format!("{what} must be base64: {error}"),
            )
        })
}

/// Encodes the `body` input value.
pub(crate) fn encode(plan: &BodyPlan, value: &Value) -> Result<Encoded, CallError> {
    match &plan.kind {
        BodyKind::Json => Ok(Encoded::Bytes(
            serde_json::to_vec(value).map_err(|error| CallError::execution(error.to_string()))?,
        )),
        BodyKind::Text => Ok(Encoded::Bytes(match value {
            Value::String(text) => text.clone().into_bytes(),
            other => other.to_string().into_bytes(),
        })),
        BodyKind::Raw => match value {
            Value::String(text) => Ok(Encoded::Bytes(b64(text, "the body")?)),
            other => Ok(Encoded::Bytes(other.to_string().into_bytes())),
        },
        BodyKind::Form { styled } => Ok(Encoded::Bytes(form_body(styled, value).into_bytes())),
        BodyKind::Multipart {
            binary,
            content_types,
        } => {
            let mut form = reqwest::multipart::Form::new();
            let empty = Map::new();
            for (name, member) in value.as_object().unwrap_or(&empty) {
                let items: Vec<&Value> = match member {
                    Value::Array(items) => items.iter().collect(),
                    Value::Null => Vec::new(),
                    other => vec![other],
                };
                for item in items {
                    let part = if binary.contains(name) {
                        binary_part(name, item, content_types)?
                    } else {
                        text_part(name, item, content_types)?
                    };
                    form = form.part(name.clone(), part);
                }
            }
            Ok(Encoded::Multipart(form))
        }
    }
}

/// An `application/x-www-form-urlencoded` body: each property in its query style when the
/// encoding gives one, as form pairs otherwise; `null` properties left out.
fn form_body(styled: &BTreeMap<String, (Style, bool, bool)>, value: &Value) -> String {
    let empty = Map::new();
    let map = value.as_object().unwrap_or(&empty);
    let mut pieces = Vec::new();
    for (name, member) in map {
        if member.is_null() {
            continue;
        }
        if let Some((style, explode, allow_reserved)) = styled.get(name) {
            pieces.extend(params::query(
                name,
                member,
                *style,
                *explode,
                *allow_reserved,
            ));
            continue;
        }
        let single = Value::Object(Map::from_iter([(name.clone(), member.clone())]));
        pieces.extend(params::form_pairs(&single));
    }
    if !value.is_object() && !value.is_null() {
        pieces.extend(params::form_pairs(value));
    }
    pieces.join("&")
}

/// A multipart part of a binary property: its base64 decoded (other values as their JSON
/// text), sent as a file named after the property, in its `contentType`.
fn binary_part(
    name: &str,
    item: &Value,
    content_types: &BTreeMap<String, String>,
) -> Result<reqwest::multipart::Part, CallError> {
    let bytes = match item {
        Value::String(text) => b64(text, &format!("the multipart field `{name}`"))?,
        other => other.to_string().into_bytes(),
    };
    let content_type = content_types
        .get(name)
        .map_or("application/octet-stream", String::as_str);
    reqwest::multipart::Part::bytes(bytes)
        .file_name(name.to_owned())
        .mime_str(content_type)
        .map_err(|error| bad_part_type(content_type, &error))
}

/// A multipart part of another property: a string as it is, an object or array as JSON
/// (`application/json` unless the encoding says otherwise), a scalar as its JSON text.
fn text_part(
    name: &str,
    item: &Value,
    content_types: &BTreeMap<String, String>,
) -> Result<reqwest::multipart::Part, CallError> {
    let (text, default_type) = match item {
        Value::String(text) => (text.clone(), None),
        Value::Object(_) | Value::Array(_) => (item.to_string(), Some("application/json")),
        other => (other.to_string(), None),
    };
    let part = reqwest::multipart::Part::text(text);
    match content_types.get(name).map(String::as_str).or(default_type) {
        Some(content_type) => part
            .mime_str(content_type)
            .map_err(|error| bad_part_type(content_type, &error)),
        None => Ok(part),
    }
}

fn bad_part_type(content_type: &str, error: &reqwest::Error) -> CallError {
    CallError::execution(format!("bad part type {content_type:?}: {error}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn bytes(plan: &BodyPlan, value: Value) -> String {
        match encode(plan, &value).unwrap() {
            Encoded::Bytes(bytes) => String::from_utf8(bytes).unwrap(),
            Encoded::Multipart(_) => panic!("multipart"),
        }
    }

    #[test]
    fn media_types_are_ranked() {
        let mut keys = [
            "application/octet-stream",
            "text/plain",
            "multipart/form-data",
            "application/x-www-form-urlencoded",
            "application/problem+json",
            "application/json",
        ];
        keys.sort_by_key(|key| rank(key));
        assert_eq!(keys[0], "application/json");
        assert_eq!(keys[5], "application/octet-stream");
        assert_eq!(kind_for("application/json; charset=utf-8"), BodyKind::Json);
        assert_eq!(kind_for("image/png"), BodyKind::Raw);
        assert_eq!(concrete_content_type("*/*"), "application/octet-stream");
    }

    #[test]
    fn bodies_encode_by_kind() {
        let plan = |kind| BodyPlan {
            content_type: String::new(),
            kind,
        };
        assert_eq!(
            bytes(&plan(BodyKind::Json), json!({"a": [1]})),
            r#"{"a":[1]}"#
        );
        assert_eq!(bytes(&plan(BodyKind::Text), json!("hi there")), "hi there");
        assert_eq!(bytes(&plan(BodyKind::Raw), json!("aGVsbG8=")), "hello");
        assert!(encode(&plan(BodyKind::Raw), &json!("%%%")).is_err());
        let form = plan(BodyKind::Form {
            styled: BTreeMap::new(),
        });
        let encoded = bytes(
            &form,
            json!({"name": "a b", "tags": ["x", "y"], "meta": {"k": 1}, "gone": null}),
        );
        // Key order follows the JSON object's; compare as a set of pieces.
        let mut pieces: Vec<&str> = encoded.split('&').collect();
        pieces.sort_unstable();
        assert_eq!(
            pieces,
            ["meta=%7B%22k%22%3A1%7D", "name=a%20b", "tags=x", "tags=y"]
        );
        let styled = plan(BodyKind::Form {
            styled: BTreeMap::from([("meta".to_owned(), (Style::DeepObject, true, false))]),
        });
        assert_eq!(bytes(&styled, json!({"meta": {"k": 1}})), "meta%5Bk%5D=1");
    }

    #[test]
    fn binary_schemas_by_version() {
        assert!(is_binary_schema(
            &json!({"type": "string", "format": "binary"}),
            true
        ));
        assert!(!is_binary_schema(
            &json!({"type": "string", "format": "byte"}),
            true
        ));
        assert!(is_binary_schema(
            &json!({"type": "string", "contentMediaType": "image/png"}),
            false
        ));
        assert!(!is_binary_schema(
            &json!({"type": "string", "contentMediaType": "image/png", "contentEncoding": "base64"}),
            false
        ));
        assert!(!is_binary_schema(&json!({"type": "string"}), false));
    }
}
