//! Property tests at two more boundaries: wire-event decoding on arbitrary bytes and JSON,
//! and normalization (cast) on generated schema/value pairs.

use opkit::protocol::CallEvent;
use opkit::schema::{CompiledSchema, cast};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

fn arb_json() -> impl Strategy<Value = Value> + Clone {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        (-1e6f64..1e6).prop_map(Value::from),
        "[a-z.:]{0,8}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 40, 5, |inner| {
        let key = prop_oneof![
            Just("type".to_owned()),
            Just("requestId".to_owned()),
            Just("operationId".to_owned()),
            Just("input".to_owned()),
            Just("output".to_owned()),
            Just("code".to_owned()),
            Just("message".to_owned()),
            "[a-z]{1,4}",
        ];
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(key, inner, 0..5)
                .prop_map(|map| Value::Object(map.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// Values shaped like the five events, with fields randomly present, missing or mistyped.
fn arb_event_like() -> impl Strategy<Value = Value> {
    let kind = prop_oneof![
        Just("call.requested"),
        Just("call.responded"),
        Just("call.completed"),
        Just("call.error"),
        Just("call.aborted"),
        Just("call.unknown"),
    ];
    (
        kind,
        prop::collection::btree_map(
            prop_oneof![
                Just("requestId"),
                Just("operationId"),
                Just("input"),
                Just("output"),
                Just("code"),
                Just("message"),
                Just("deadline"),
                Just("identity"),
            ],
            arb_json(),
            0..6,
        ),
    )
        .prop_map(|(kind, fields)| {
            let mut object: Map<String, Value> =
                fields.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
            object.insert("type".into(), json!(kind));
            Value::Object(object)
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    #[test]
    fn decoding_arbitrary_bytes_answers_without_panicking(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        let _ = CallEvent::from_slice(&bytes);
    }

    #[test]
    fn decoded_events_re_encode_to_what_decodes_again(value in prop_oneof![arb_json(), arb_event_like()]) {
        let bytes = serde_json::to_vec(&value).unwrap();
        let from_bytes = CallEvent::from_slice(&bytes);
        let from_value = CallEvent::from_value(value);
        prop_assert_eq!(from_bytes.is_ok(), from_value.is_ok());
        if let Ok(event) = from_value {
            let bytes = event.to_bytes().expect("a decoded event encodes");
            let again = CallEvent::from_slice(&bytes).expect("and decodes again");
            prop_assert_eq!(again, event);
        }
    }
}

/// Schemas satisfiable by construction: types, nested objects and arrays, nullable unions,
/// string enums — no constraint that a created value could miss.
fn arb_schema() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(json!({"type": "null"})),
        Just(json!({"type": "boolean"})),
        Just(json!({"type": "integer"})),
        Just(json!({"type": "number"})),
        Just(json!({"type": "string"})),
        Just(json!({"type": ["string", "null"]})),
        Just(json!({"enum": ["a", "b", "c"]})),
        Just(json!({"type": "integer", "default": 7})),
        Just(json!(true)),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            inner
                .clone()
                .prop_map(|items| json!({"type": "array", "items": items})),
            (
                prop::collection::btree_map("[a-d]", inner.clone(), 0..4),
                prop::collection::vec(any::<bool>(), 4),
                prop_oneof![
                    Just(None),
                    Just(Some(json!(false))),
                    Just(Some(json!(true)))
                ],
            )
                .prop_map(|(properties, required_flags, additional)| {
                    let required: Vec<&String> = properties
                        .keys()
                        .zip(required_flags)
                        .filter(|(_, required)| *required)
                        .map(|(key, _)| key)
                        .collect();
                    let mut schema =
                        json!({"type": "object", "properties": properties, "required": required});
                    if let Some(additional) = additional {
                        schema["additionalProperties"] = additional;
                    }
                    schema
                }),
            inner.prop_map(|some| json!({"anyOf": [some, {"type": "null"}]})),
        ]
    })
}

/// A generated schema, sometimes reached through a root `$ref` into `$defs`.
fn arb_root_schema() -> impl Strategy<Value = Value> {
    prop_oneof![
        arb_schema(),
        arb_schema().prop_map(|item| json!({"$defs": {"Item": item}, "$ref": "#/$defs/Item"})),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn cast_output_satisfies_every_satisfiable_schema(schema in arb_root_schema(), value in arb_json()) {
        let validator = CompiledSchema::compile(&schema).expect("generated schemas compile");
        let output = cast(&schema, value.clone());
        prop_assert!(
            validator.is_valid(&output),
            "cast({}, {}) = {} does not validate: {:?}", schema, value, output, validator.validate(&output)
        );
        // Casting is idempotent: a value that fits stays as it is.
        prop_assert_eq!(cast(&schema, output.clone()), output);
    }
}
