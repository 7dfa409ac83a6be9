//! `is_response_envelope`, `unwrap` and `from_value` on malformed and borderline values.

use opkit::envelope::{
    EnvelopeError, ResponseEnvelope, is_response_envelope, unwrap, unwrap_value,
};
use serde_json::{Value, json};

fn local_meta() -> Value {
    json!({"source": "local", "operationId": "a.b", "timestamp": 1})
}

#[test]
fn detection_table() {
    let cases: Vec<(&str, Value, bool)> = vec![
        (
            "local envelope",
            json!({"data": 1, "meta": local_meta()}),
            true,
        ),
        (
            "null data is still data",
            json!({"data": null, "meta": local_meta()}),
            true,
        ),
        (
            "extra top-level keys are tolerated",
            json!({"data": 1, "meta": local_meta(), "x": 2}),
            true,
        ),
        ("array", json!([{"data": 1, "meta": local_meta()}]), false),
        ("null", Value::Null, false),
        ("string", json!("data"), false),
        ("number", json!(4), false),
        ("empty object", json!({}), false),
        ("missing data", json!({"meta": local_meta()}), false),
        ("missing meta", json!({"data": 1}), false),
        ("null meta", json!({"data": 1, "meta": null}), false),
        ("array meta", json!({"data": 1, "meta": []}), false),
        ("string meta", json!({"data": 1, "meta": "local"}), false),
        (
            "meta without source",
            json!({"data": 1, "meta": {"operationId": "a.b", "timestamp": 1}}),
            false,
        ),
        (
            "unknown source",
            json!({"data": 1, "meta": {"source": "ftp"}}),
            false,
        ),
        (
            "source not a string",
            json!({"data": 1, "meta": {"source": 1}}),
            false,
        ),
        (
            "source in wrong case",
            json!({"data": 1, "meta": {"source": "LOCAL", "operationId": "a", "timestamp": 1}}),
            false,
        ),
        (
            "local meta missing operationId",
            json!({"data": 1, "meta": {"source": "local", "timestamp": 1}}),
            false,
        ),
        (
            "local meta with string timestamp",
            json!({"data": 1, "meta": {"source": "local", "operationId": "a", "timestamp": "1"}}),
            false,
        ),
        (
            "http meta",
            json!({"data": 1, "meta": {"source": "http", "statusCode": 201, "headers": {}, "contentType": ""}}),
            true,
        ),
        (
            "http meta with bad status",
            json!({"data": 1, "meta": {"source": "http", "statusCode": "ok", "headers": {}, "contentType": ""}}),
            false,
        ),
        (
            "mcp meta minimal",
            json!({"data": 1, "meta": {"source": "mcp", "isError": false, "content": []}}),
            true,
        ),
        (
            "mcp meta with unknown block",
            json!({"data": 1, "meta": {"source": "mcp", "isError": false, "content": [{"type": "video"}]}}),
            false,
        ),
    ];
    for (name, value, expected) in cases {
        assert_eq!(is_response_envelope(&value), expected, "case: {name}");
        assert_eq!(
            ResponseEnvelope::from_value(value).is_ok(),
            expected,
            "from_value agrees with detection: {name}"
        );
    }
}

#[test]
fn from_value_names_what_is_wrong() {
    let cases: Vec<(Value, EnvelopeError)> = vec![
        (json!([1]), EnvelopeError::NotAnObject { found: "an array" }),
        (json!({"meta": local_meta()}), EnvelopeError::MissingData),
        (json!({"data": 1}), EnvelopeError::MissingMeta),
        (
            json!({"data": 1, "meta": null}),
            EnvelopeError::MetaNotAnObject { found: "null" },
        ),
        (json!({"data": 1, "meta": {}}), EnvelopeError::MissingSource),
        (
            json!({"data": 1, "meta": {"source": "ftp"}}),
            EnvelopeError::UnknownSource("ftp".into()),
        ),
    ];
    for (value, expected) in cases {
        assert_eq!(ResponseEnvelope::from_value(value).unwrap_err(), expected);
    }
    let invalid =
        ResponseEnvelope::from_value(json!({"data": 1, "meta": {"source": "local"}})).unwrap_err();
    assert!(matches!(invalid, EnvelopeError::InvalidMeta { .. }));
    assert!(invalid.to_string().contains("operationId"), "{invalid}");
}

#[test]
fn unwrap_takes_the_data_of_a_typed_envelope() {
    let envelope: ResponseEnvelope<Vec<u8>> = opkit::envelope::local_envelope(vec![1, 2], "a.b");
    assert_eq!(unwrap(envelope), vec![1, 2]);
}

#[test]
fn unwrap_returns_data_of_envelopes_and_other_values_unchanged() {
    assert_eq!(
        unwrap_value(json!({"data": [1, 2], "meta": local_meta()})),
        json!([1, 2])
    );
    assert_eq!(
        unwrap_value(json!({"data": 1, "meta": null})),
        json!({"data": 1, "meta": null})
    );
    assert_eq!(unwrap_value(json!([1])), json!([1]));
}

#[test]
fn envelope_errors_become_validation_errors() {
    let error: opkit::CallError = EnvelopeError::MissingData.into();
    assert_eq!(error.code, opkit::ErrorCode::ValidationError);
}
