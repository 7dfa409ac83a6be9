//! JSON Schemas (2020-12) of the envelope and of each meta variant.

use super::{HttpMeta, LocalMeta, McpMeta, ResponseEnvelope, ResponseMeta};
use serde_json::Value;

fn schema_of<T: schemars::JsonSchema>() -> Value {
    crate::schema::schema_for::<T>()
}

/// The schema of `ResponseEnvelope<Value>` (any data, any meta).
pub fn envelope_schema() -> Value {
    schema_of::<ResponseEnvelope>()
}

/// The schema of [`ResponseMeta`] (the `source`-tagged union).
pub fn response_meta_schema() -> Value {
    schema_of::<ResponseMeta>()
}

/// The schema of [`LocalMeta`] (without the `source` tag).
pub fn local_meta_schema() -> Value {
    schema_of::<LocalMeta>()
}

/// The schema of [`HttpMeta`] (without the `source` tag).
pub fn http_meta_schema() -> Value {
    schema_of::<HttpMeta>()
}

/// The schema of [`McpMeta`] (without the `source` tag).
pub fn mcp_meta_schema() -> Value {
    schema_of::<McpMeta>()
}
