//! Envelope wire format: every meta variant and content block against hand-written JSON.

use opkit::envelope::{
    Annotations, EmbeddedResource, HttpMeta, LocalMeta, McpContentBlock, McpMeta, ResponseEnvelope,
    ResponseMeta, Role, http_envelope, is_response_envelope, local_envelope, mcp_envelope,
};
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// Parses `wire` into an envelope, checks it equals `expected`, and that it serializes back
/// to exactly `wire`.
fn round_trip(wire: Value, expected: &ResponseEnvelope) {
    assert!(is_response_envelope(&wire), "not detected: {wire}");
    let parsed: ResponseEnvelope = serde_json::from_value(wire.clone()).expect("deserializes");
    assert_eq!(&parsed, expected);
    assert_eq!(serde_json::to_value(&parsed).unwrap(), wire);
    let split = ResponseEnvelope::from_value(wire.clone()).expect("from_value");
    assert_eq!(&split, expected);
}

#[test]
fn local_meta_round_trips() {
    let wire = json!({
        "data": {"sum": 3},
        "meta": {"source": "local", "operationId": "math.add", "timestamp": 1_760_000_000_000_u64}
    });
    let expected = ResponseEnvelope::new(
        json!({"sum": 3}),
        ResponseMeta::Local(LocalMeta {
            operation_id: "math.add".into(),
            timestamp: 1_760_000_000_000,
        }),
    );
    round_trip(wire, &expected);
}

#[test]
fn http_meta_round_trips() {
    let wire = json!({
        "data": "pong",
        "meta": {
            "source": "http",
            "statusCode": 200,
            "headers": {"content-type": "text/plain; charset=utf-8", "vary": "accept, origin"},
            "contentType": "text/plain; charset=utf-8"
        }
    });
    let mut headers = BTreeMap::new();
    headers.insert("content-type".into(), "text/plain; charset=utf-8".into());
    headers.insert("vary".into(), "accept, origin".into());
    let expected = http_envelope(json!("pong"), 200, headers, "text/plain; charset=utf-8");
    round_trip(wire, &expected);
}

#[test]
fn mcp_meta_with_every_block_round_trips() {
    let wire = json!({
        "data": {"temperature": 21.5},
        "meta": {
            "source": "mcp",
            "isError": false,
            "content": [
                {"type": "text", "text": "{\"temperature\":21.5}"},
                {"type": "text", "text": "for you", "annotations": {"audience": ["user", "assistant"], "priority": 0.5, "lastModified": "2026-01-02T03:04:05Z"}},
                {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
                {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav", "annotations": {"priority": 1.0}},
                {"type": "resource", "resource": {"uri": "file:///a.txt", "mimeType": "text/plain", "text": "hello"}},
                {"type": "resource", "resource": {"uri": "file:///a.bin", "blob": "AAEC"}, "annotations": {"audience": ["assistant"]}},
                {"type": "resource_link", "uri": "file:///b.md", "name": "b.md", "description": "notes", "mimeType": "text/markdown"},
                {"type": "resource_link", "uri": "file:///c", "name": "c"}
            ],
            "structuredContent": {"temperature": 21.5},
            "_meta": {"trace": "abc"}
        }
    });
    let meta = McpMeta {
        is_error: false,
        content: vec![
            McpContentBlock::text("{\"temperature\":21.5}"),
            McpContentBlock::Text {
                text: "for you".into(),
                annotations: Some(Annotations {
                    audience: Some(vec![Role::User, Role::Assistant]),
                    priority: Some(0.5),
                    last_modified: Some("2026-01-02T03:04:05Z".into()),
                }),
            },
            McpContentBlock::Image {
                data: "iVBORw0KGgo=".into(),
                mime_type: "image/png".into(),
                annotations: None,
            },
            McpContentBlock::Audio {
                data: "UklGRg==".into(),
                mime_type: "audio/wav".into(),
                annotations: Some(Annotations {
                    priority: Some(1.0),
                    ..Annotations::default()
                }),
            },
            McpContentBlock::Resource {
                resource: EmbeddedResource {
                    uri: "file:///a.txt".into(),
                    mime_type: Some("text/plain".into()),
                    text: Some("hello".into()),
                    blob: None,
                },
                annotations: None,
            },
            McpContentBlock::Resource {
                resource: EmbeddedResource {
                    uri: "file:///a.bin".into(),
                    mime_type: None,
                    text: None,
                    blob: Some("AAEC".into()),
                },
                annotations: Some(Annotations {
                    audience: Some(vec![Role::Assistant]),
                    ..Annotations::default()
                }),
            },
            McpContentBlock::ResourceLink {
                uri: "file:///b.md".into(),
                name: "b.md".into(),
                description: Some("notes".into()),
                mime_type: Some("text/markdown".into()),
            },
            McpContentBlock::ResourceLink {
                uri: "file:///c".into(),
                name: "c".into(),
                description: None,
                mime_type: None,
            },
        ],
        structured_content: Some(json!({"temperature": 21.5})),
        meta: Some(json!({"trace": "abc"})),
    };
    round_trip(wire, &mcp_envelope(json!({"temperature": 21.5}), meta));
}

#[test]
fn mcp_error_result_without_structured_content_round_trips() {
    let wire = json!({
        "data": [{"type": "text", "text": "Access denied"}],
        "meta": {"source": "mcp", "isError": true, "content": [{"type": "text", "text": "Access denied"}]}
    });
    let meta = McpMeta {
        is_error: true,
        content: vec![McpContentBlock::text("Access denied")],
        structured_content: None,
        meta: None,
    };
    let expected = mcp_envelope(json!([{"type": "text", "text": "Access denied"}]), meta);
    assert!(expected.is_error());
    round_trip(wire, &expected);
}

#[test]
fn mcp_non_object_structured_content_is_kept() {
    let wire = json!({
        "data": 42,
        "meta": {"source": "mcp", "isError": false, "content": [], "structuredContent": 42}
    });
    let parsed = ResponseEnvelope::from_value(wire.clone()).unwrap();
    let ResponseMeta::Mcp(meta) = &parsed.meta else {
        panic!("expected mcp meta")
    };
    assert_eq!(meta.structured_content, Some(json!(42)));
    assert_eq!(serde_json::to_value(&parsed).unwrap(), wire);
}

#[test]
fn absent_optional_fields_are_omitted_never_null() {
    let envelope = mcp_envelope(
        json!(0),
        McpMeta {
            is_error: false,
            content: vec![McpContentBlock::ResourceLink {
                uri: "u".into(),
                name: "n".into(),
                description: None,
                mime_type: None,
            }],
            structured_content: None,
            meta: None,
        },
    );
    let wire = serde_json::to_string(&envelope).unwrap();
    assert!(!wire.contains("null"), "{wire}");
    assert_eq!(
        wire,
        r#"{"data":0,"meta":{"source":"mcp","isError":false,"content":[{"type":"resource_link","uri":"u","name":"n"}]}}"#
    );
}

#[test]
fn local_envelope_stamps_an_integer_timestamp() {
    let before = opkit::envelope::now_millis_coarse();
    let envelope = local_envelope(json!(1), "a.b");
    let after = opkit::envelope::now_millis();
    let wire = serde_json::to_value(&envelope).unwrap();
    let timestamp = wire["meta"]["timestamp"]
        .as_u64()
        .expect("integer timestamp");
    // The coarse clock never runs ahead of the precise one, nor backwards.
    assert!(
        before <= timestamp && timestamp <= after,
        "{before} {timestamp} {after}"
    );
    assert_eq!(wire["meta"]["operationId"], "a.b");
    assert_eq!(envelope.meta.source(), "local");
}

#[test]
fn typed_envelopes_convert_to_and_from_values() {
    #[derive(serde::Serialize, serde::Deserialize, PartialEq, Debug, Clone)]
    struct Sum {
        sum: i64,
    }
    let typed = local_envelope(Sum { sum: 5 }, "math.add");
    let untyped = typed.clone().into_value_envelope().unwrap();
    assert_eq!(untyped.data, json!({"sum": 5}));
    let back: ResponseEnvelope<Sum> = untyped.into_typed().unwrap();
    assert_eq!(back, typed);
    assert_eq!(back.map(|sum| sum.sum).into_data(), 5);
}

#[test]
fn http_meta_requires_its_fields() {
    let wire = json!({"data": 1, "meta": {"source": "http", "statusCode": 200}});
    assert!(!is_response_envelope(&wire));
    let error = ResponseEnvelope::from_value(wire).unwrap_err();
    assert!(error.to_string().contains("headers"), "{error}");
    let _ = HttpMeta {
        status_code: 1,
        headers: BTreeMap::new(),
        content_type: String::new(),
        sse: None,
    };
}
