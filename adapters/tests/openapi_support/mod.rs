//! Test harness for the OpenAPI import tests: the real peers (uvicorn running the FastAPI
//! app, Prism mocking a document) are the test kit's (`opkit_testkit::peers`: on
//! 127.0.0.1, waited for, killed by PID when dropped), and examples for schemas.

#![allow(dead_code)]

#[allow(unused_imports)]
pub use opkit_testkit::ports::free_port;
use serde_json::{Map, Value, json};
use std::path::{Path, PathBuf};

/// `adapters/peers/openapi`.
pub fn peers_dir() -> PathBuf {
    opkit_testkit::peers::peers_dir("openapi")
}

/// The ReadMe example document at `<version>/json/<name>.json`.
pub fn oas_example(version: &str, name: &str) -> PathBuf {
    let path = peers_dir()
        .join("node_modules/@readme/oas-examples")
        .join(version)
        .join("json")
        .join(format!("{name}.json"));
    assert!(
        path.exists(),
        "{} is missing: run `bash scripts/install-peers.sh` first",
        path.display()
    );
    path
}

/// A running peer process; killed (by its PID) and reaped on drop.
pub type Peer = opkit_testkit::peers::PeerProcess;

/// Starts the FastAPI app (`peers/openapi/app.py`) under uvicorn.
pub async fn start_fastapi() -> Peer {
    tokio::task::spawn_blocking(opkit_testkit::peers::start_fastapi)
        .await
        .expect("uvicorn starts")
}

/// Starts Prism mocking `document` (loopback only).
pub async fn start_prism(document: &Path) -> Peer {
    let document = document.to_path_buf();
    tokio::task::spawn_blocking(move || opkit_testkit::peers::start_prism(&document))
        .await
        .expect("prism starts")
}

/// A value that satisfies `schema` (resolving `#/$defs/..` against `root`): required
/// properties only, one item per array, the first enum member, examples and defaults first.
pub fn example_for(root: &Value, schema: &Value, depth: usize) -> Value {
    if depth > 12 {
        return Value::Null;
    }
    let Some(map) = schema.as_object() else {
        return Value::Null;
    };
    if let Some(reference) = map.get("$ref").and_then(Value::as_str) {
        let target = root
            .pointer(reference.trim_start_matches('#'))
            .cloned()
            .unwrap_or(json!({}));
        return example_for(root, &target, depth + 1);
    }
    if let Some(value) = map.get("const") {
        return value.clone();
    }
    if let Some(Value::Array(members)) = map.get("enum")
        && let Some(first) = members.iter().find(|m| !m.is_null())
    {
        return first.clone();
    }
    if let Some(value) = map.get("default") {
        return value.clone();
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = map.get(key)
            && let Some(branch) = branches
                .iter()
                .find(|b| b.get("type") != Some(&json!("null")))
        {
            return example_for(root, branch, depth + 1);
        }
    }
    if let Some(Value::Array(members)) = map.get("allOf") {
        let mut merged = Map::new();
        for member in members {
            if let Value::Object(part) = example_for(root, member, depth + 1) {
                merged.extend(part);
            }
        }
        return Value::Object(merged);
    }
    let ty = match map.get("type") {
        Some(Value::String(ty)) => ty.as_str(),
        Some(Value::Array(types)) => types
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .unwrap_or("null"),
        _ if map.contains_key("properties") => "object",
        _ => "string",
    };
    match ty {
        "object" => {
            let mut out = Map::new();
            let required: Vec<&str> = map
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            if let Some(Value::Object(properties)) = map.get("properties") {
                for (name, property) in properties {
                    if required.contains(&name.as_str()) {
                        out.insert(name.clone(), example_for(root, property, depth + 1));
                    }
                }
            }
            Value::Object(out)
        }
        "array" => json!([example_for(
            root,
            map.get("items").unwrap_or(&json!({})),
            depth + 1
        )]),
        "integer" => json!(
            map.get("minimum")
                .and_then(Value::as_i64)
                .unwrap_or(1)
                .max(1)
        ),
        "number" => json!(1.5),
        "boolean" => json!(true),
        "null" => Value::Null,
        _ => {
            if map.get("contentEncoding").and_then(Value::as_str) == Some("base64") {
                return json!("aGVsbG8=");
            }
            match map.get("format").and_then(Value::as_str) {
                Some("date-time") => json!("2024-01-01T00:00:00Z"),
                Some("date") => json!("2024-01-01"),
                Some("email") => json!("ada@example.com"),
                Some("uri" | "url") => json!("https://example.com/a"),
                Some("uuid") => json!("123e4567-e89b-12d3-a456-426614174000"),
                _ => json!("doggie"),
            }
        }
    }
}
