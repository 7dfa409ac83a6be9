//! Property tests: envelope detection and decoding on arbitrary JSON, and input validation on
//! arbitrary inputs. Every case must answer (no panic) and the answers must agree.

use opkit::envelope::{
    EmbeddedResource, McpContentBlock, McpMeta, ResponseEnvelope, http_envelope,
    is_response_envelope, local_envelope, mcp_envelope, unwrap_value,
};
use opkit::{
    ErrorCode, Handler, OperationContext, OperationKind, OperationRegistry, OperationSpec,
};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

/// Arbitrary JSON, biased towards envelope-like objects.
fn arb_json() -> impl Strategy<Value = Value> + Clone {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        "[a-z]{0,6}".prop_map(Value::String),
        prop_oneof![Just("local"), Just("http"), Just("mcp"), Just("ftp")].prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        let key = prop_oneof![
            Just("data".to_owned()),
            Just("meta".to_owned()),
            Just("source".to_owned()),
            Just("operationId".to_owned()),
            Just("timestamp".to_owned()),
            Just("isError".to_owned()),
            Just("content".to_owned()),
            Just("statusCode".to_owned()),
            Just("headers".to_owned()),
            Just("contentType".to_owned()),
            "[a-z]{1,4}",
        ];
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(key, inner, 0..5)
                .prop_map(|map| Value::Object(map.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// Arbitrary well-formed envelopes of every source.
fn arb_envelope() -> impl Strategy<Value = ResponseEnvelope> {
    let data = arb_json();
    prop_oneof![
        (data.clone(), "[a-z]{1,5}\\.[a-z]{1,5}").prop_map(|(data, id)| local_envelope(data, id)),
        (
            data.clone(),
            100u16..600,
            prop::collection::btree_map("[a-z-]{1,8}", "[ -~]{0,12}", 0..4),
            "[a-z]+/[a-z+]+",
        )
            .prop_map(|(data, status, headers, content_type)| {
                http_envelope(data, status, headers, content_type)
            }),
        (
            data,
            any::<bool>(),
            prop::option::of(arb_json()),
            "[ -~]{0,10}"
        )
            .prop_map(|(data, is_error, structured, text)| {
                mcp_envelope(
                    data,
                    McpMeta {
                        is_error,
                        content: vec![
                            McpContentBlock::text(text.clone()),
                            McpContentBlock::Resource {
                                resource: EmbeddedResource {
                                    uri: "file:///x".into(),
                                    mime_type: None,
                                    text: Some(text),
                                    blob: None,
                                },
                                annotations: None,
                            },
                        ],
                        structured_content: structured.filter(|value| !value.is_null()),
                        meta: None,
                    },
                )
            }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn detection_decoding_and_unwrap_agree_on_arbitrary_json(value in arb_json()) {
        let detected = is_response_envelope(&value);
        let decoded = ResponseEnvelope::from_value(value.clone());
        prop_assert_eq!(detected, decoded.is_ok());
        let via_serde = serde_json::from_value::<ResponseEnvelope>(value.clone());
        if detected {
            prop_assert!(via_serde.is_ok());
            prop_assert_eq!(unwrap_value(value.clone()), value["data"].clone());
        } else {
            prop_assert_eq!(unwrap_value(value.clone()), value);
        }
    }

    #[test]
    fn well_formed_envelopes_round_trip(envelope in arb_envelope()) {
        let wire = serde_json::to_value(&envelope).unwrap();
        prop_assert!(is_response_envelope(&wire));
        let back = ResponseEnvelope::from_value(wire.clone()).unwrap();
        prop_assert_eq!(&back, &envelope);
        let text = serde_json::to_string(&envelope).unwrap();
        let parsed: ResponseEnvelope = serde_json::from_str(&text).unwrap();
        prop_assert_eq!(parsed, envelope);
    }
}

/// Built once: compiling the validator per case would dominate the test's time.
static REGISTRY: std::sync::LazyLock<OperationRegistry> = std::sync::LazyLock::new(registry);

fn registry() -> OperationRegistry {
    let registry = OperationRegistry::new();
    let spec = OperationSpec::new("users", "create", OperationKind::Mutation).input_schema(json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "minLength": 1},
            "age": {"type": ["integer", "null"], "minimum": 0},
            "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
            "address": {"$ref": "#/$defs/Address"}
        },
        "required": ["name"],
        "additionalProperties": false,
        "$defs": {"Address": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"]
        }}
    }));
    registry
        .register(spec, Handler::unary(|input, _| async move { Ok(input) }))
        .unwrap();
    registry
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn input_validation_answers_every_input_with_pointers_into_it(input in arb_json()) {
        let ctx = OperationContext::default();
        let outcome = futures::executor::block_on(REGISTRY.execute("users.create", input.clone(), &ctx));
        match outcome {
            Ok(envelope) => prop_assert_eq!(envelope.data, input),
            Err(error) => {
                prop_assert_eq!(error.code, ErrorCode::ValidationError);
                let details = error.details.expect("violations are listed");
                let violations = details.as_array().expect("a list");
                prop_assert!(!violations.is_empty());
                for violation in violations {
                    let path = violation["path"].as_str().expect("a JSON pointer");
                    prop_assert!(input.pointer(path).is_some(), "{} is not a pointer into {}", path, input);
                }
            }
        }
    }
}
