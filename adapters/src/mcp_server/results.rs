//! Envelopes and errors → `tools/call` results.
//!
//! - A plain envelope: `structuredContent` (in the tool's output form) plus the same JSON as
//!   one text block — except for string data, whose text block is the string itself
//!   (`hello`, not `"hello"` or `{"result":"hello"}`), as hosts show it; the envelope's
//!   meta in `_meta["opkit/meta"]` (a local envelope's only when the server asks for it:
//!   [`McpServer::local_meta`](super::McpServer::local_meta)).
//! - An MCP envelope ([`mcp_envelope`](opkit::envelope::mcp_envelope), what an imported MCP
//!   tool returns): its content blocks as they are, its `isError`, its `structuredContent`
//!   (in the tool's output form) and its `_meta`.
//! - A [`CallError`]: `isError: true`, `CODE: message` as the only text block, no
//!   `structuredContent` (it could not match the tool's `outputSchema`, which clients check),
//!   and the `CallError` wire JSON in `_meta["opkit/error"]` for opkit's own MCP import.

use super::tools::OutputForm;
use opkit::envelope::{McpMeta, ResponseMeta};
use opkit::schema::CompiledSchema;
use opkit::{CallError, ResponseEnvelope};
use rmcp::model::{CallToolResult, ContentBlock, JsonObject, MetaObject};
use serde_json::{Map, Value, json};

use crate::mcp_meta::{META_ENVELOPE, META_ERROR};

/// The `structuredContent` of `data` in the given form (not for [`OutputForm::Items`],
/// whose value the caller builds).
pub(crate) fn structured(data: Value, form: OutputForm) -> Option<Value> {
    match form {
        OutputForm::Plain | OutputForm::Items => Some(data),
        OutputForm::Wrapped => Some(json!({"result": data})),
        OutputForm::Content => None,
    }
}

/// The result of a successful call; `schema` is the declared `outputSchema` (if any),
/// `legacy` a client before 2026-07-28 (which takes only objects as `structuredContent`)
/// and `local_meta` writes a local envelope's meta too.
pub(crate) fn envelope_result(
    envelope: ResponseEnvelope,
    form: OutputForm,
    schema: Option<&JsonObject>,
    legacy: bool,
    local_meta: bool,
) -> CallToolResult {
    match envelope.meta {
        ResponseMeta::Mcp(meta) => mcp_result(envelope.data, meta, form, schema, legacy),
        meta => {
            let mut result = data_result(envelope.data, form);
            let written = local_meta || !matches!(meta, ResponseMeta::Local(_));
            if let Some(meta) = written.then(|| meta_value(meta)).flatten() {
                let mut result_meta = Map::new();
                result_meta.insert(META_ENVELOPE.to_owned(), meta);
                result.meta = Some(MetaObject(result_meta));
            }
            result
        }
    }
}

/// The result of a successful call's `data` (not an MCP envelope's) in the tool's output
/// form, without its meta.
pub(crate) fn data_result(data: Value, form: OutputForm) -> CallToolResult {
    match (form, data) {
        (OutputForm::Content, data) => {
            CallToolResult::success(vec![ContentBlock::text(data_text(data))])
        }
        // A string is its own text; `structuredContent` keeps the tool's form.
        (form, Value::String(text)) => {
            let value = structured(Value::String(text.clone()), form);
            let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
            result.structured_content = value;
            result
        }
        // The data moves into the result (its text is serialized once from it).
        (form, data) => structured_result(structured(data, form).unwrap_or(Value::Null)),
    }
}

/// [`CallToolResult::structured`]: `value` as `structuredContent` and its JSON as the one
/// text block, serialized straight into a buffer (the same text as `value.to_string()`,
/// without going through `fmt`).
fn structured_result(value: Value) -> CallToolResult {
    let mut result = CallToolResult::success(vec![ContentBlock::text(json_text(&value))]);
    result.structured_content = Some(value);
    result
}

/// The text block of data: a string itself, anything else as its compact JSON.
fn data_text(data: Value) -> String {
    match data {
        Value::String(text) => text,
        data => json_text(&data),
    }
}

/// The compact JSON of `value` (what its `Display` writes).
fn json_text(value: &Value) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| value.to_string())
}

/// The wire JSON of an envelope's meta, as `serde_json::to_value` makes it; a local meta
/// (every local call's) is built directly, without serde's tagged-enum serializer.
fn meta_value(meta: ResponseMeta) -> Option<Value> {
    match meta {
        ResponseMeta::Local(local) => {
            let mut map = Map::new();
            map.insert("source".to_owned(), Value::String("local".to_owned()));
            map.insert(
                "operationId".to_owned(),
                Value::String(String::from(&*local.operation_id)),
            );
            map.insert("timestamp".to_owned(), Value::from(local.timestamp));
            Some(Value::Object(map))
        }
        meta => serde_json::to_value(&meta).ok(),
    }
}

/// An MCP envelope served as it is (see the module docs).
fn mcp_result(
    data: Value,
    meta: McpMeta,
    form: OutputForm,
    schema: Option<&JsonObject>,
    legacy: bool,
) -> CallToolResult {
    let content: Vec<ContentBlock> = meta.content.iter().filter_map(content_block).collect();
    let structured_content = if meta.is_error {
        // An error's structured content is kept only when the client can accept it.
        meta.structured_content
            .and_then(|value| match form {
                OutputForm::Content => Some(value),
                _ => structured(value, form),
            })
            .filter(|value| fits(value, schema, legacy))
    } else {
        match form {
            OutputForm::Content => meta
                .structured_content
                .filter(|value| !legacy || value.is_object()),
            _ => structured(meta.structured_content.unwrap_or(data), form),
        }
    };
    let mut result = if meta.is_error {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    };
    result.structured_content = structured_content;
    if let Some(Value::Object(object)) = meta.meta {
        result.meta = Some(MetaObject(object));
    }
    result
}

/// `true` when `value` may be sent as `structuredContent` of a tool with `schema`.
fn fits(value: &Value, schema: Option<&JsonObject>, legacy: bool) -> bool {
    if legacy && !value.is_object() {
        return false;
    }
    match schema {
        None => true,
        Some(schema) => CompiledSchema::compile(&Value::Object(schema.clone()))
            .is_ok_and(|compiled| compiled.is_valid(value)),
    }
}

/// One opkit content block as an rmcp one (both are the MCP wire form).
fn content_block(block: &opkit::envelope::McpContentBlock) -> Option<ContentBlock> {
    let value = serde_json::to_value(block).ok()?;
    match serde_json::from_value(value) {
        Ok(block) => Some(block),
        Err(error) => {
            tracing::warn!(%error, "a content block rmcp cannot represent is left out");
            None
        }
    }
}

/// A failed call's result (see the module docs).
pub(crate) fn failure(error: &CallError) -> CallToolResult {
    let mut result = CallToolResult::error(vec![ContentBlock::text(error.to_string())]);
    if let Ok(wire) = serde_json::to_value(error) {
        let mut meta = Map::new();
        meta.insert(META_ERROR.to_owned(), wire);
        result.meta = Some(MetaObject(meta));
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use opkit::envelope::{EmbeddedResource, McpContentBlock, mcp_envelope};

    #[test]
    fn structured_results_are_rmcps() {
        let value = json!({"a": [1, "x\"y", null, 2.5], "b": {"c": true}});
        let expected = serde_json::to_value(CallToolResult::structured(value.clone())).unwrap();
        let built = serde_json::to_value(structured_result(value)).unwrap();
        assert_eq!(built, expected);
    }

    #[test]
    fn a_string_is_its_own_text_in_every_form() {
        let envelope = || opkit::envelope::local_envelope(json!("hello \"world\""), "a.b");
        for (form, structured_content) in [
            (OutputForm::Plain, Some(json!("hello \"world\""))),
            (
                OutputForm::Wrapped,
                Some(json!({"result": "hello \"world\""})),
            ),
            (OutputForm::Content, None),
        ] {
            let result = envelope_result(envelope(), form, None, true, true);
            let wire = serde_json::to_value(&result).unwrap();
            assert_eq!(
                wire["content"],
                json!([{"type": "text", "text": "hello \"world\""}]),
                "{form:?}"
            );
            assert_eq!(wire.get("structuredContent").cloned(), structured_content);
        }
        // Other data stays JSON text.
        let result = envelope_result(
            opkit::envelope::local_envelope(json!(42), "a.b"),
            OutputForm::Wrapped,
            None,
            true,
            true,
        );
        assert_eq!(
            result.content[0].as_text().unwrap().text,
            r#"{"result":42}"#
        );
    }

    #[test]
    fn local_meta_is_its_serde_json() {
        for meta in [
            ResponseMeta::Local(opkit::envelope::LocalMeta {
                operation_id: "math.add".into(),
                timestamp: 1_700_000_000_123,
            }),
            opkit::envelope::http_envelope(json!(1), 200, Default::default(), "text/plain").meta,
        ] {
            let expected = serde_json::to_value(&meta).unwrap();
            let built = meta_value(meta).unwrap();
            assert_eq!(built, expected);
            assert_eq!(built.to_string(), expected.to_string(), "same key order");
        }
    }

    #[test]
    fn a_local_envelope_s_meta_is_written_when_asked_and_an_imported_one_s_always() {
        let local = || opkit::envelope::local_envelope(json!({"sum": 42}), "math.add");
        let result = envelope_result(local(), OutputForm::Plain, None, true, false);
        assert_eq!(result.meta, None);
        assert_eq!(result.structured_content, Some(json!({"sum": 42})));
        let result = envelope_result(local(), OutputForm::Plain, None, true, true);
        let meta = result.meta.expect("_meta").0;
        assert_eq!(meta[META_ENVELOPE]["source"], "local");
        assert_eq!(meta[META_ENVELOPE]["operationId"], "math.add");
        for local_meta in [false, true] {
            let http =
                opkit::envelope::http_envelope(json!(1), 200, Default::default(), "text/plain");
            let result = envelope_result(http, OutputForm::Wrapped, None, true, local_meta);
            let meta = result.meta.expect("_meta").0;
            assert_eq!(meta[META_ENVELOPE]["source"], "http");
            assert_eq!(meta[META_ENVELOPE]["statusCode"], 200);
        }
    }

    #[test]
    fn failures_carry_no_structured_content() {
        let result = failure(&CallError::not_found("no user 7"));
        assert_eq!(result.is_error, Some(true));
        assert_eq!(result.structured_content, None);
        let meta = result.meta.unwrap();
        assert_eq!(meta.0[META_ERROR]["kind"], "NOT_FOUND");
        assert_eq!(
            result.content[0].as_text().unwrap().text,
            CallError::not_found("no user 7").to_string()
        );
    }

    #[test]
    fn mcp_envelopes_keep_their_blocks_and_error_flag() {
        let blocks = vec![
            McpContentBlock::text("hi"),
            McpContentBlock::Image {
                data: "AAAA".into(),
                mime_type: "image/png".into(),
                annotations: None,
            },
            McpContentBlock::Resource {
                resource: EmbeddedResource {
                    uri: "test://r".into(),
                    mime_type: Some("text/plain".into()),
                    text: Some("body".into()),
                    blob: None,
                },
                annotations: None,
            },
        ];
        let meta = McpMeta {
            is_error: true,
            content: blocks,
            structured_content: Some(json!({"code": 1})),
            meta: Some(json!({"trace": "t"})),
        };
        let envelope = mcp_envelope(json!(null), meta);
        let schema: JsonObject = serde_json::from_value(
            json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}),
        )
        .unwrap();
        let result = envelope_result(
            envelope.clone(),
            OutputForm::Plain,
            Some(&schema),
            true,
            true,
        );
        let wire = serde_json::to_value(&result).unwrap();
        assert_eq!(wire["isError"], true);
        assert_eq!(wire["content"][1]["type"], "image");
        assert_eq!(wire["content"][2]["resource"]["text"], "body");
        assert!(
            wire.get("structuredContent").is_none(),
            "it does not match the schema"
        );
        assert_eq!(wire["_meta"], json!({"trace": "t"}));
        let result = envelope_result(envelope, OutputForm::Content, None, true, true);
        assert_eq!(result.structured_content, Some(json!({"code": 1})));
    }
}
