//! What a request answers: the tool result of a query's or mutation's reply (`tools/call`,
//! and a task's result: the envelope in the tool's output form, a binary output's content
//! block, the cache hint in `_meta`), and the JSON-RPC error of a failed read, prompt or
//! completion.

use super::names::Served;
use super::{results, tools};
use opkit::CallError;
use opkit::middleware::Reply;
use rmcp::ErrorData as McpError;
use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};
use serde_json::{Value, json};

/// The tool result of a query's or mutation's reply, with its cache hint in `_meta`;
/// `local_meta` writes a local envelope's meta there too ([`McpServer::local_meta`]).
///
/// [`McpServer::local_meta`]: super::McpServer::local_meta
pub(crate) fn unary_result(
    served: &Served,
    reply: Reply,
    modern: bool,
    local_meta: bool,
) -> CallToolResult {
    let hint = reply.cache_hint();
    let form = served.forms[usize::from(modern)];
    if !local_meta && !served.binary_output && reply.is_local_data() {
        // An `#[operation]` fn's data whose local meta is not sent: the data alone, no
        // envelope made around it (a local envelope is never an error one).
        let mut result = match reply.into_data() {
            Ok(data) => results::data_result(data, form),
            Err(error) => return results::failure(&error),
        };
        with_cache_hint(&mut result, hint);
        return result;
    }
    let envelope = match reply.into_envelope() {
        Ok(envelope) => envelope,
        Err(error) => return results::failure(&error),
    };
    // Only an error envelope's structured content is checked against the declared
    // output schema: it is built for that case alone, not on every call.
    let schema = envelope
        .is_error()
        .then(|| tools::output(&served.spec, modern).1)
        .flatten();
    let binary = served
        .binary_output
        .then(|| binary_block(&served.spec, &envelope))
        .flatten();
    let mut result = results::envelope_result(envelope, form, schema.as_ref(), !modern, local_meta);
    if let Some(block) = binary {
        result.content.push(block);
    }
    with_cache_hint(&mut result, hint);
    result
}

/// A middleware's cache hint, in the result's `_meta` (`ttlMs`, `cacheScope`).
fn with_cache_hint(result: &mut CallToolResult, hint: Option<opkit::middleware::CacheHint>) {
    if let Some(hint) = hint {
        let meta = result.meta.get_or_insert_with(Default::default);
        meta.insert(
            "ttlMs".to_owned(),
            json!(u64::try_from(hint.ttl.as_millis()).unwrap_or(u64::MAX)),
        );
        meta.insert("cacheScope".to_owned(), json!(hint.scope.as_str()));
    }
}

/// The content block of a [`Binary`](opkit::binary::Binary) output: an image or audio block
/// when its media type says so, else an embedded blob resource (`opkit:<id>`), beside the
/// structured result (the base64 string). For an operation whose output is binary
/// ([`Served::binary_output`]).
fn binary_block(
    spec: &opkit::OperationSpec,
    envelope: &opkit::ResponseEnvelope,
) -> Option<ContentBlock> {
    if envelope.is_error() {
        return None;
    }
    let data = envelope.data.as_str()?;
    let mime = spec
        .output_schema
        .get("contentMediaType")
        .and_then(Value::as_str)
        .unwrap_or("application/octet-stream");
    Some(if mime.starts_with("image/") {
        ContentBlock::image(data, mime)
    } else if mime.starts_with("audio/") {
        ContentBlock::audio(data, mime)
    } else {
        ContentBlock::resource(
            ResourceContents::blob(data, format!("opkit:{}", spec.id())).with_mime_type(mime),
        )
    })
}

/// The JSON-RPC error of a failed read, prompt or completion: a bad input is invalid
/// params (`-32602`), anything else an internal error carrying the [`CallError`](opkit::CallError)'s wire JSON.
pub(crate) fn rpc_error(error: &CallError) -> McpError {
    let data = serde_json::to_value(error).ok();
    match error.code {
        opkit::ErrorCode::ValidationError | opkit::ErrorCode::OperationNotFound => {
            McpError::invalid_params(error.to_string(), data)
        }
        _ => McpError::internal_error(error.to_string(), data),
    }
}
