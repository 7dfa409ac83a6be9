//! Tool results → envelopes: content blocks mapped 1:1 into opkit's types, from raw JSON.
//!
//! The mapping works on the result's JSON ([`serde_json::Value`]), not on rmcp's typed
//! `CallToolResult`, so a block rmcp does not know (a newer content type) cannot fail the
//! whole result. Each block becomes one [`McpContentBlock`]:
//!
//! | MCP block | opkit block |
//! |---|---|
//! | `text {text}` | `Text` |
//! | `image {data, mimeType}` / `audio {data, mimeType}` | `Image` / `Audio` |
//! | `resource {resource: {uri, mimeType?, text \| blob}}` | `Resource` |
//! | `resource_link {uri, name, description?, mimeType?}` | `ResourceLink` (its `title`, `size`, `icons` are not kept) |
//! | anything else, or a known type missing a required field | `Text` holding the block's JSON |
//!
//! `annotations` (`audience`, `priority`, `lastModified`) are kept on every block type that
//! carries them in opkit's model (all but `ResourceLink`); unknown audience roles are dropped.
//!
//! The envelope's `data` is `structuredContent` when it is present and not `null` (cast to the
//! tool's output schema when it has one), else the mapped blocks as a JSON array. An
//! `isError` result is passed through unchanged: its data is `structuredContent` as sent, or
//! the mapped blocks, never cast (the failure is data for the caller to inspect; an opkit
//! server's [`CallError`](opkit::CallError) is read back with [`call_error`]). `meta` holds
//! `isError` (absent = `false`), every block, `structuredContent` as sent (a `null` one is
//! left out, like an absent one: an envelope reads a `null` field as absent, and the wire form omits
//! absent optional fields) and the result's `_meta`.

use opkit::envelope::{
    Annotations, EmbeddedResource, McpContentBlock, McpMeta, ResponseEnvelope, Role, mcp_envelope,
};
use serde_json::{Map, Value};

/// Maps one raw content block; never fails (see the module docs).
///
/// ```
/// use opkit::envelope::McpContentBlock;
/// use opkit_adapters::mcp::map_content_block;
/// use serde_json::json;
/// assert_eq!(map_content_block(&json!({"type": "text", "text": "hi"})), McpContentBlock::text("hi"));
/// // An unknown block type becomes a text block holding its JSON.
/// let future = json!({"type": "hologram", "frames": 3});
/// assert_eq!(map_content_block(&future), McpContentBlock::text(future.to_string()));
/// ```
pub fn map_content_block(block: &Value) -> McpContentBlock {
    known_block(block).unwrap_or_else(|| McpContentBlock::Text {
        text: block.to_string(),
        annotations: block.get("annotations").and_then(map_annotations),
    })
}

/// The block when its type is known and its required fields are there.
fn known_block(block: &Value) -> Option<McpContentBlock> {
    let fields = block.as_object()?;
    let string = |key: &str| fields.get(key).and_then(Value::as_str).map(str::to_owned);
    let annotations = || fields.get("annotations").and_then(map_annotations);
    Some(match fields.get("type")?.as_str()? {
        "text" => McpContentBlock::Text {
            text: string("text")?,
            annotations: annotations(),
        },
        "image" => McpContentBlock::Image {
            data: string("data")?,
            mime_type: string("mimeType")?,
            annotations: annotations(),
        },
        "audio" => McpContentBlock::Audio {
            data: string("data")?,
            mime_type: string("mimeType")?,
            annotations: annotations(),
        },
        "resource" => McpContentBlock::Resource {
            resource: map_resource(fields.get("resource")?.as_object()?)?,
            annotations: annotations(),
        },
        "resource_link" => McpContentBlock::ResourceLink {
            uri: string("uri")?,
            name: string("name")?,
            description: string("description"),
            mime_type: string("mimeType"),
        },
        _ => return None,
    })
}

/// Text or blob resource contents; one of the two must be there.
fn map_resource(resource: &Map<String, Value>) -> Option<EmbeddedResource> {
    let string = |key: &str| resource.get(key).and_then(Value::as_str).map(str::to_owned);
    let (text, blob) = (string("text"), string("blob"));
    if text.is_none() && blob.is_none() {
        return None;
    }
    Some(EmbeddedResource {
        uri: string("uri")?,
        mime_type: string("mimeType"),
        text,
        blob,
    })
}

/// Reads annotations leniently: malformed members are dropped, an empty result is `None`.
pub(crate) fn map_annotations(value: &Value) -> Option<Annotations> {
    let fields = value.as_object()?;
    let audience = fields
        .get("audience")
        .and_then(Value::as_array)
        .map(|roles| {
            roles
                .iter()
                .filter_map(|role| match role.as_str()? {
                    "user" => Some(Role::User),
                    "assistant" => Some(Role::Assistant),
                    _ => None,
                })
                .collect::<Vec<Role>>()
        });
    let annotations = Annotations {
        audience,
        priority: fields
            .get("priority")
            .and_then(Value::as_f64)
            .map(undo_f32_widening),
        last_modified: fields
            .get("lastModified")
            .and_then(Value::as_str)
            .map(str::to_owned),
    };
    (annotations != Annotations::default()).then_some(annotations)
}

/// rmcp holds `priority` as an `f32`: `0.7` comes back as `0.699999988079071`. A value that
/// is exactly an `f32` is given back its shortest `f32` spelling (`0.7`); others are kept.
#[allow(clippy::cast_possible_truncation)]
fn undo_f32_widening(value: f64) -> f64 {
    let narrow = value as f32;
    if f64::from(narrow) == value {
        narrow.to_string().parse().unwrap_or(value)
    } else {
        value
    }
}

/// Builds the envelope of a `tools/call` result given as raw JSON.
///
/// `output_schema` is the tool's `outputSchema` (`None` when it has none): a present,
/// non-null `structuredContent` is cast to it with [`opkit::schema::cast`], unless the result
/// is an error (`isError: true`), which is passed through unchanged.
///
/// ```
/// use opkit_adapters::mcp::result_envelope;
/// use serde_json::json;
/// let result = json!({
///     "content": [{"type": "text", "text": "{\"sum\":42}"}],
///     "structuredContent": {"sum": 42}
/// });
/// let envelope = result_envelope(&result, None);
/// assert_eq!(envelope.data, json!({"sum": 42}));
/// assert!(!envelope.is_error());
/// ```
pub fn result_envelope(result: &Value, output_schema: Option<&Value>) -> ResponseEnvelope {
    let copied = |key: &str| result.get(key).cloned();
    let parts = (copied("structuredContent"), copied("_meta"));
    envelope_from(result, parts, output_schema, false, None)
}

use crate::mcp_meta::META_ERROR;

/// The [`CallError`](opkit::CallError) behind an `isError` envelope, when the tool is served
/// by opkit (its result carries the error in `_meta["opkit/error"]`).
///
/// ```
/// use opkit_adapters::mcp::{call_error, result_envelope};
/// use serde_json::json;
/// let result = json!({
///     "content": [{"type": "text", "text": "EXECUTION_ERROR: no user 7"}],
///     "isError": true,
///     "_meta": {"opkit/error": {"code": "EXECUTION_ERROR", "message": "no user 7", "kind": "NOT_FOUND"}}
/// });
/// let envelope = result_envelope(&result, None);
/// // The data is the result's content, as for any error result.
/// assert_eq!(envelope.data[0]["text"], "EXECUTION_ERROR: no user 7");
/// let error = call_error(&envelope).unwrap();
/// assert_eq!(error.kind, Some(opkit::ErrorKind::NotFound));
/// assert_eq!(error.message, "no user 7");
/// ```
pub fn call_error(envelope: &ResponseEnvelope) -> Option<opkit::CallError> {
    let opkit::ResponseMeta::Mcp(meta) = &envelope.meta else {
        return None;
    };
    if !meta.is_error {
        return None;
    }
    let wire = meta.meta.as_ref()?.get(META_ERROR)?;
    serde_json::from_value(wire.clone()).ok()
}

/// [`result_envelope`], optionally reading a lone JSON text block as the data (see
/// [`McpOptions::parse_json_text`](super::McpOptions::parse_json_text)).
///
/// `wrapped` names the `structuredContent` property that holds the data of a successful
/// result (a tool opkit serves wrapped, see the `tools` module).
pub(crate) fn envelope_of(
    mut result: Value,
    output_schema: Option<&Value>,
    parse_json_text: bool,
    wrapped: Option<&str>,
) -> ResponseEnvelope {
    // Taken out of the result (it is not read again), not copied.
    let parts = match result.as_object_mut() {
        Some(fields) => (fields.remove("structuredContent"), fields.remove("_meta")),
        None => (None, None),
    };
    envelope_from(&result, parts, output_schema, parse_json_text, wrapped)
}

/// The envelope of `result`, whose `structuredContent` and `_meta` are given apart (taken out
/// of it, or copied from it).
fn envelope_from(
    result: &Value,
    (structured, result_meta): (Option<Value>, Option<Value>),
    output_schema: Option<&Value>,
    parse_json_text: bool,
    wrapped: Option<&str>,
) -> ResponseEnvelope {
    let content: Vec<McpContentBlock> = result
        .get("content")
        .and_then(Value::as_array)
        .map(|blocks| blocks.iter().map(map_content_block).collect())
        .unwrap_or_default();
    // `null` counts as absent (as everywhere in an envelope), in `data` and in `meta` alike: the wire
    // form omits absent optional fields, so a `null` would not survive a round trip anyway.
    let structured = structured.filter(|value| !value.is_null());
    let is_error = result
        .get("isError")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let cast = |value: Value| match output_schema {
        Some(schema) if !opkit::schema::is_unknown(schema) => opkit::schema::cast(schema, value),
        _ => value,
    };
    let blocks = || serde_json::to_value(&content).unwrap_or(Value::Array(Vec::new()));
    let data = if is_error {
        // A failure is data for the caller to inspect, never reshaped: neither cast to the
        // output schema nor read from a JSON text block.
        structured.clone().unwrap_or_else(blocks)
    } else {
        match &structured {
            Some(Value::Object(object)) if wrapped.is_some_and(|key| object.contains_key(key)) => {
                cast(object[wrapped.unwrap_or_default()].clone())
            }
            Some(value) => cast(value.clone()),
            None => match lone_json_text(&content).filter(|_| parse_json_text) {
                Some(value) => cast(value),
                None => blocks(),
            },
        }
    };
    let meta = McpMeta {
        is_error,
        content,
        structured_content: structured,
        meta: result_meta,
    };
    mcp_envelope(data, meta)
}

/// The JSON in the only block of `content`, when that is a text block holding JSON.
fn lone_json_text(content: &[McpContentBlock]) -> Option<Value> {
    match content {
        [McpContentBlock::Text { text, .. }] => serde_json::from_str(text.trim()).ok(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use opkit::envelope::ResponseMeta;
    use serde_json::json;

    fn mcp_meta(envelope: &ResponseEnvelope) -> &McpMeta {
        match &envelope.meta {
            ResponseMeta::Mcp(meta) => meta,
            other => panic!("expected an MCP meta, got {other:?}"),
        }
    }

    #[test]
    fn maps_every_known_block_type() {
        let annotations = json!({"audience": ["user", "assistant"], "priority": 0.7, "lastModified": "2025-01-12T15:00:58Z"});
        let expected_annotations = Annotations {
            audience: Some(vec![Role::User, Role::Assistant]),
            priority: Some(0.7),
            last_modified: Some("2025-01-12T15:00:58Z".into()),
        };
        let cases = [
            (
                json!({"type": "text", "text": "hi", "annotations": annotations}),
                McpContentBlock::Text {
                    text: "hi".into(),
                    annotations: Some(expected_annotations.clone()),
                },
            ),
            (
                json!({"type": "image", "data": "iVBO", "mimeType": "image/png"}),
                McpContentBlock::Image {
                    data: "iVBO".into(),
                    mime_type: "image/png".into(),
                    annotations: None,
                },
            ),
            (
                json!({"type": "audio", "data": "UklG", "mimeType": "audio/wav", "annotations": {"priority": 1}}),
                McpContentBlock::Audio {
                    data: "UklG".into(),
                    mime_type: "audio/wav".into(),
                    annotations: Some(Annotations {
                        priority: Some(1.0),
                        ..Annotations::default()
                    }),
                },
            ),
            (
                json!({"type": "resource", "resource": {"uri": "file:///a.txt", "mimeType": "text/plain", "text": "A"}}),
                McpContentBlock::Resource {
                    resource: EmbeddedResource {
                        uri: "file:///a.txt".into(),
                        mime_type: Some("text/plain".into()),
                        text: Some("A".into()),
                        blob: None,
                    },
                    annotations: None,
                },
            ),
            (
                json!({"type": "resource", "resource": {"uri": "file:///a.bin", "blob": "AAE="}, "annotations": {"audience": ["assistant"]}}),
                McpContentBlock::Resource {
                    resource: EmbeddedResource {
                        uri: "file:///a.bin".into(),
                        mime_type: None,
                        text: None,
                        blob: Some("AAE=".into()),
                    },
                    annotations: Some(Annotations {
                        audience: Some(vec![Role::Assistant]),
                        ..Annotations::default()
                    }),
                },
            ),
            (
                json!({"type": "resource_link", "uri": "demo://r/1", "name": "r1", "title": "R 1", "description": "first", "mimeType": "text/plain", "size": 3}),
                McpContentBlock::ResourceLink {
                    uri: "demo://r/1".into(),
                    name: "r1".into(),
                    description: Some("first".into()),
                    mime_type: Some("text/plain".into()),
                },
            ),
        ];
        for (raw, expected) in cases {
            assert_eq!(map_content_block(&raw), expected, "{raw}");
        }
    }

    #[test]
    fn unknown_and_malformed_blocks_become_text_holding_their_json() {
        for raw in [
            json!({"type": "hologram", "frames": [1, 2]}),
            json!({"type": "image", "data": "x"}),
            json!({"type": "resource", "resource": {"uri": "a:b"}}),
            json!({"no": "type"}),
            json!("just a string"),
        ] {
            let McpContentBlock::Text { text, annotations } = map_content_block(&raw) else {
                panic!("{raw} should map to text");
            };
            assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), raw);
            assert_eq!(annotations, None);
        }
        let with_annotations =
            json!({"type": "video", "annotations": {"audience": ["user", "robot"]}});
        assert_eq!(
            map_content_block(&with_annotations),
            McpContentBlock::Text {
                text: with_annotations.to_string(),
                annotations: Some(Annotations {
                    audience: Some(vec![Role::User]),
                    ..Annotations::default()
                }),
            }
        );
    }

    #[test]
    fn an_unknown_block_does_not_fail_the_result() {
        let result = json!({
            "content": [
                {"type": "text", "text": "before"},
                {"type": "hologram", "frames": 3},
                {"type": "text", "text": "after"}
            ]
        });
        let envelope = result_envelope(&result, None);
        let meta = mcp_meta(&envelope);
        assert_eq!(meta.content.len(), 3);
        assert_eq!(meta.content[0], McpContentBlock::text("before"));
        assert_eq!(
            meta.content[1],
            McpContentBlock::text(json!({"type": "hologram", "frames": 3}).to_string())
        );
        assert_eq!(envelope.data, serde_json::to_value(&meta.content).unwrap());
    }

    #[test]
    fn structured_content_is_the_data_when_present_and_not_null() {
        let schema = json!({"type": "object", "properties": {"sum": {"type": "integer"}}, "required": ["sum"]});
        let result = json!({
            "content": [{"type": "text", "text": "{\"sum\":42,\"extra\":1}"}],
            "structuredContent": {"sum": 42, "extra": 1},
            "_meta": {"trace": "t1"}
        });
        let envelope = result_envelope(&result, Some(&schema));
        assert_eq!(
            envelope.data,
            json!({"sum": 42}),
            "cast to the output schema"
        );
        let meta = mcp_meta(&envelope);
        assert_eq!(
            meta.structured_content,
            Some(json!({"sum": 42, "extra": 1}))
        );
        assert_eq!(meta.meta, Some(json!({"trace": "t1"})));
        assert!(!meta.is_error);
        // Without an output schema the structured content is taken as is, of any type.
        let scalar = result_envelope(&json!({"content": [], "structuredContent": 7}), None);
        assert_eq!(scalar.data, json!(7));
    }

    #[test]
    fn null_structured_content_counts_as_absent_for_data() {
        let blocks = json!([{"type": "text", "text": "t"}]);
        let absent = result_envelope(&json!({"content": blocks}), None);
        let null = result_envelope(&json!({"content": blocks, "structuredContent": null}), None);
        assert_eq!(absent.data, blocks);
        assert_eq!(null.data, blocks);
        assert_eq!(mcp_meta(&absent).structured_content, None);
        assert_eq!(mcp_meta(&null).structured_content, None);
        assert_eq!(
            serde_json::to_value(&absent).unwrap(),
            serde_json::to_value(&null).unwrap()
        );
        let wire = serde_json::to_value(&absent).unwrap();
        assert!(wire["meta"].get("structuredContent").is_none());
        assert!(wire["meta"].get("_meta").is_none());
    }

    #[test]
    fn is_error_results_are_envelopes_without_structured_content() {
        let result =
            json!({"content": [{"type": "text", "text": "Access denied"}], "isError": true});
        let schema = json!({"type": "object", "properties": {"content": {"type": "string"}}, "required": ["content"]});
        let envelope = result_envelope(&result, Some(&schema));
        assert!(envelope.is_error());
        assert_eq!(
            envelope.data,
            json!([{"type": "text", "text": "Access denied"}])
        );
        let wire = serde_json::to_value(&envelope).unwrap();
        assert!(opkit::envelope::is_response_envelope(&wire));
        assert_eq!(wire["meta"]["source"], "mcp");
        assert_eq!(wire["meta"]["isError"], true);
    }

    #[test]
    fn is_error_structured_content_is_passed_through_uncast() {
        let result = json!({
            "content": [{"type": "text", "text": "no such note"}],
            "structuredContent": {"reason": "missing"},
            "isError": true
        });
        let schema = json!({"type": "object", "properties": {"id": {"type": "integer"}, "title": {"type": "string"}}, "required": ["id", "title"], "additionalProperties": false});
        let envelope = result_envelope(&result, Some(&schema));
        assert!(envelope.is_error());
        assert_eq!(envelope.data, json!({"reason": "missing"}), "never cast");
    }

    #[test]
    fn f32_priorities_read_back_as_written() {
        let widened = f64::from(0.7f32);
        assert_ne!(widened, 0.7);
        let annotations = map_annotations(&json!({"priority": widened})).unwrap();
        assert_eq!(annotations.priority, Some(0.7));
        let exact = map_annotations(&json!({"priority": 0.3})).unwrap();
        assert_eq!(exact.priority, Some(0.3));
    }

    #[test]
    fn lone_json_text_is_the_data_when_asked() {
        let result =
            json!({"content": [{"type": "text", "text": "{\"temperature\": 21, \"extra\": 1}"}]});
        let schema = json!({"type": "object", "properties": {"temperature": {"type": "number"}}, "required": ["temperature"], "additionalProperties": false});
        let off = envelope_of(result.clone(), Some(&schema), false, None);
        assert!(
            off.data.is_array(),
            "off by default: the blocks are the data"
        );
        let on = envelope_of(result, Some(&schema), true, None);
        assert_eq!(
            on.data,
            json!({"temperature": 21}),
            "cast to the output schema"
        );
        assert_eq!(mcp_meta(&on).content.len(), 1, "the original block is kept");
        assert_eq!(mcp_meta(&on).structured_content, None);
        let plain = json!({"content": [{"type": "text", "text": "not json"}]});
        assert!(envelope_of(plain, None, true, None).data.is_array());
        let two =
            json!({"content": [{"type": "text", "text": "1"}, {"type": "text", "text": "2"}]});
        assert!(envelope_of(two, None, true, None).data.is_array());
        let error = json!({"content": [{"type": "text", "text": "{}"}], "isError": true});
        assert!(envelope_of(error, None, true, None).data.is_array());
    }

    #[test]
    fn opkit_errors_are_recovered() {
        let wire = serde_json::to_value(opkit::CallError::not_found("no user 7")).unwrap();
        let result = json!({
            "content": [{"type": "text", "text": "EXECUTION_ERROR: no user 7"}],
            "isError": true,
            "_meta": {"opkit/error": wire}
        });
        let envelope = result_envelope(&result, None);
        assert!(envelope.is_error());
        assert_eq!(
            envelope.data,
            json!([{"type": "text", "text": "EXECUTION_ERROR: no user 7"}]),
            "the data is the content, as for any error result"
        );
        let error = call_error(&envelope).unwrap();
        assert_eq!(
            error,
            serde_json::from_value::<opkit::CallError>(wire).unwrap()
        );
        assert_eq!(
            call_error(&result_envelope(&json!({"content": []}), None)),
            None
        );
    }

    #[test]
    fn a_missing_content_is_empty() {
        let envelope = result_envelope(&json!({"isError": false}), None);
        assert_eq!(envelope.data, json!([]));
        assert!(mcp_meta(&envelope).content.is_empty());
    }
}
