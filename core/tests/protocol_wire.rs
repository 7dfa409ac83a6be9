//! The five wire events: exact JSON both ways, omitted optionals, and decode errors that
//! name what is wrong.

use opkit::envelope::{McpContentBlock, McpMeta, local_envelope, mcp_envelope};
use opkit::protocol::{
    CallAborted, CallCompleted, CallEvent, CallFailed, CallRequested, CallResponded, WireError,
};
use opkit::{CallError, ErrorCode, Identity};
use serde_json::{Value, json};

/// Decodes `text`, checks the event, and checks that encoding gives back exactly `text`.
fn round_trip(text: &str, expected: &CallEvent) {
    let decoded = CallEvent::from_slice(text.as_bytes()).unwrap();
    assert_eq!(&decoded, expected);
    let encoded = expected.to_bytes().unwrap();
    assert_eq!(std::str::from_utf8(&encoded).unwrap(), text);
    let value: Value = serde_json::from_str(text).unwrap();
    assert_eq!(expected.to_value().unwrap(), value);
    // serde's Deserialize goes through the same decoder.
    assert_eq!(&serde_json::from_str::<CallEvent>(text).unwrap(), expected);
}

fn decode_error(text: &str) -> WireError {
    CallEvent::from_slice(text.as_bytes()).unwrap_err()
}

#[test]
fn requested_with_every_field() {
    let text = r#"{"type":"call.requested","requestId":"c1:7","operationId":"math.add","input":{"a":1},"parentRequestId":"c0:3","identity":{"id":"ann","scopes":["math:use"],"roles":["admin"]},"identityToken":"eyJ.a.b","deadline":1767225600000,"subscription":true,"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","tracestate":"k=v"}"#;
    let expected = CallEvent::Requested(CallRequested {
        request_id: "c1:7".into(),
        operation_id: "math.add".into(),
        input: json!({"a": 1}),
        parent_request_id: Some("c0:3".into()),
        identity: Some(
            Identity::new("ann")
                .with_scopes(["math:use"])
                .with_roles(["admin"]),
        ),
        identity_token: Some("eyJ.a.b".into()),
        deadline: Some(1_767_225_600_000),
        subscription: true,
        traceparent: Some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".into()),
        tracestate: Some("k=v".into()),
    });
    round_trip(text, &expected);
    let CallEvent::Requested(request) = expected else {
        unreachable!()
    };
    assert_eq!(
        request.deadline().map(|d| d.epoch_millis()),
        Some(1_767_225_600_000)
    );
}

#[test]
fn requested_omits_absent_optionals() {
    let text =
        r#"{"type":"call.requested","requestId":"c1:1","operationId":"math.add","input":null}"#;
    round_trip(
        text,
        &CallEvent::Requested(CallRequested::new("c1:1", "math.add", Value::Null)),
    );
}

#[test]
fn optional_nulls_count_as_absent_and_unknown_fields_are_ignored() {
    let text = r#"{"type":"call.requested","requestId":"r","operationId":"a.b","input":[],"parentRequestId":null,"identity":null,"deadline":null,"extra":1}"#;
    assert_eq!(
        CallEvent::from_slice(text.as_bytes()).unwrap(),
        CallEvent::Requested(CallRequested::new("r", "a.b", json!([])))
    );
}

#[test]
fn identity_scopes_and_roles_default_to_empty() {
    let text = r#"{"type":"call.requested","requestId":"r","operationId":"a.b","input":{},"identity":{"id":"bob"}}"#;
    let CallEvent::Requested(request) = CallEvent::from_slice(text.as_bytes()).unwrap() else {
        panic!("not a request")
    };
    assert_eq!(request.identity, Some(Identity::new("bob")));
}

#[test]
fn responded_carries_a_local_envelope() {
    let mut output = local_envelope(json!({"sum": 3}), "math.add");
    if let opkit::ResponseMeta::Local(meta) = &mut output.meta {
        meta.timestamp = 1_767_225_600_000;
    }
    let text = r#"{"type":"call.responded","requestId":"c1:7","output":{"data":{"sum":3},"meta":{"source":"local","operationId":"math.add","timestamp":1767225600000}}}"#;
    round_trip(
        text,
        &CallEvent::Responded(CallResponded {
            request_id: "c1:7".into(),
            output,
            signature: None,
        }),
    );
}

#[test]
fn responded_carries_an_mcp_error_envelope() {
    let output = mcp_envelope(
        json!("no such file"),
        McpMeta {
            is_error: true,
            content: vec![McpContentBlock::text("no such file")],
            structured_content: None,
            meta: None,
        },
    );
    let text = r#"{"type":"call.responded","requestId":"c1:8","output":{"data":"no such file","meta":{"source":"mcp","isError":true,"content":[{"type":"text","text":"no such file"}]}}}"#;
    let event = CallEvent::responded("c1:8", output);
    round_trip(text, &event);
    let CallEvent::Responded(responded) = event else {
        unreachable!()
    };
    assert!(responded.output.is_error());
}

#[test]
fn completed() {
    round_trip(
        r#"{"type":"call.completed","requestId":"c1:9"}"#,
        &CallEvent::Completed(CallCompleted {
            request_id: "c1:9".into(),
            signature: None,
        }),
    );
}

#[test]
fn error_kind_travels_and_an_unknown_kind_is_dropped() {
    let event = CallEvent::error("c1:4", CallError::conflict("the title is taken"));
    round_trip(
        r#"{"type":"call.error","requestId":"c1:4","code":"EXECUTION_ERROR","message":"the title is taken","kind":"CONFLICT"}"#,
        &event,
    );
    // A kind from a newer peer: the error still arrives, with its code.
    let newer = CallEvent::from_slice(
        br#"{"type":"call.error","requestId":"c1:5","code":"EXECUTION_ERROR","message":"m","kind":"TEAPOT"}"#,
    )
    .unwrap();
    let CallEvent::Error(failed) = newer else {
        panic!("a call.error")
    };
    let error = failed.into_error();
    assert_eq!(error.code, ErrorCode::ExecutionError);
    assert_eq!(error.kind, None);
}

#[test]
fn error_with_and_without_details() {
    round_trip(
        r#"{"type":"call.error","requestId":"c1:2","code":"VALIDATION_ERROR","message":"input is invalid","details":[{"message":"not an integer","path":"/a"}]}"#,
        &CallEvent::Error(CallFailed {
            request_id: "c1:2".into(),
            code: ErrorCode::ValidationError,
            message: "input is invalid".into(),
            details: Some(json!([{"path": "/a", "message": "not an integer"}])),
            kind: None,
            signature: None,
        }),
    );
    let event = CallEvent::error("c1:3", CallError::timeout("too slow"));
    round_trip(
        r#"{"type":"call.error","requestId":"c1:3","code":"TIMEOUT","message":"too slow"}"#,
        &event,
    );
    let CallEvent::Error(failed) = event else {
        unreachable!()
    };
    assert_eq!(failed.into_error(), CallError::timeout("too slow"));
}

#[test]
fn every_error_code_travels() {
    for code in [
        ErrorCode::OperationNotFound,
        ErrorCode::ValidationError,
        ErrorCode::AccessDenied,
        ErrorCode::ExecutionError,
        ErrorCode::Timeout,
        ErrorCode::Aborted,
        ErrorCode::TransportError,
    ] {
        let text = format!(
            r#"{{"type":"call.error","requestId":"r","code":"{}","message":"m"}}"#,
            code.as_str()
        );
        round_trip(&text, &CallEvent::error("r", CallError::new(code, "m")));
    }
}

#[test]
fn aborted() {
    round_trip(
        r#"{"type":"call.aborted","requestId":"c1:4"}"#,
        &CallEvent::Aborted(CallAborted {
            request_id: "c1:4".into(),
            signature: None,
        }),
    );
}

#[test]
fn type_names_and_request_ids() {
    let events = [
        CallEvent::Requested(CallRequested::new("a", "x.y", json!({}))),
        CallEvent::responded("b", local_envelope(json!(1), "x.y")),
        CallEvent::completed("c"),
        CallEvent::error("d", CallError::aborted("gone")),
        CallEvent::aborted("e"),
    ];
    let names: Vec<&str> = events.iter().map(CallEvent::type_name).collect();
    assert_eq!(
        names,
        [
            "call.requested",
            "call.responded",
            "call.completed",
            "call.error",
            "call.aborted"
        ]
    );
    let ids: Vec<&str> = events.iter().map(CallEvent::request_id).collect();
    assert_eq!(ids, ["a", "b", "c", "d", "e"]);
    for event in &events {
        assert_eq!(event.to_value().unwrap()["type"], event.type_name());
    }
}

#[test]
fn not_json() {
    let error = decode_error("{not json");
    assert!(matches!(error, WireError::NotJson(_)), "{error:?}");
    assert!(error.to_string().starts_with("a call event must be JSON"));
}

#[test]
fn not_an_object() {
    let error = decode_error("[1, 2]");
    assert_eq!(error, WireError::NotAnObject { found: "an array" });
    assert_eq!(
        error.to_string(),
        "a call event must be a JSON object, found an array"
    );
}

#[test]
fn missing_or_bad_type() {
    assert_eq!(
        decode_error(r#"{"requestId": "r"}"#),
        WireError::MissingField {
            event: "call event",
            field: "type"
        }
    );
    let error = decode_error(r#"{"type": 5, "requestId": "r"}"#);
    assert!(
        error
            .to_string()
            .contains("field `type` of `call event` must be a string, found a number"),
        "{error}"
    );
    let error = decode_error(r#"{"type": "call.finished", "requestId": "r"}"#);
    assert_eq!(error, WireError::UnknownType("call.finished".into()));
    assert!(error.to_string().contains("\"call.finished\""));
}

#[test]
fn missing_required_fields_are_named() {
    let cases = [
        (r#"{"type":"call.aborted"}"#, "call.aborted", "requestId"),
        (
            r#"{"type":"call.requested","requestId":"r","input":{}}"#,
            "call.requested",
            "operationId",
        ),
        (
            r#"{"type":"call.requested","requestId":"r","operationId":"a.b"}"#,
            "call.requested",
            "input",
        ),
        (
            r#"{"type":"call.responded","requestId":"r"}"#,
            "call.responded",
            "output",
        ),
        (
            r#"{"type":"call.error","requestId":"r","message":"m"}"#,
            "call.error",
            "code",
        ),
        (
            r#"{"type":"call.error","requestId":"r","code":"TIMEOUT"}"#,
            "call.error",
            "message",
        ),
        (
            r#"{"type":"call.completed"}"#,
            "call.completed",
            "requestId",
        ),
    ];
    for (text, event, field) in cases {
        let error = decode_error(text);
        assert_eq!(error, WireError::MissingField { event, field }, "{text}");
        assert_eq!(
            error.to_string(),
            format!("`{event}` is missing the required field `{field}`")
        );
    }
}

#[test]
fn invalid_fields_are_named() {
    let cases = [
        (
            r#"{"type":"call.completed","requestId":7}"#,
            "field `requestId` of `call.completed` must be a string, found a number",
        ),
        (
            r#"{"type":"call.requested","requestId":"r","operationId":"a.b","input":{},"deadline":"soon"}"#,
            "field `deadline` of `call.requested` must be a non-negative integer (milliseconds since the Unix epoch), found a string",
        ),
        (
            r#"{"type":"call.requested","requestId":"r","operationId":"a.b","input":{},"deadline":1.5}"#,
            "found the number 1.5",
        ),
        (
            r#"{"type":"call.requested","requestId":"r","operationId":"a.b","input":{},"deadline":-1}"#,
            "found the number -1",
        ),
        (
            r#"{"type":"call.requested","requestId":"r","operationId":"a.b","input":{},"identity":{"scopes":[]}}"#,
            "field `identity` of `call.requested` must be an identity",
        ),
        (
            r#"{"type":"call.requested","requestId":"r","operationId":"a.b","input":{},"parentRequestId":false}"#,
            "field `parentRequestId` of `call.requested` must be a string, found a boolean",
        ),
        (
            r#"{"type":"call.error","requestId":"r","code":"OOPS","message":"m"}"#,
            "field `code` of `call.error` must be an error code (OPERATION_NOT_FOUND,",
        ),
    ];
    for (text, message) in cases {
        let error = decode_error(text);
        assert!(matches!(error, WireError::InvalidField { .. }), "{error:?}");
        assert!(
            error.to_string().contains(message),
            "{text}: `{error}` does not contain `{message}`"
        );
    }
}

#[test]
fn output_that_is_not_an_envelope() {
    let cases = [
        (r#"{"data": 1}"#, "an envelope must have a `meta` key"),
        (
            r#"{"meta": {"source": "local", "operationId": "a.b", "timestamp": 1}}"#,
            "an envelope must have a `data` key",
        ),
        (
            r#"[1]"#,
            "an envelope must be a JSON object, found an array",
        ),
        (
            r#"{"data": 1, "meta": {"source": "ftp"}}"#,
            "unknown envelope source \"ftp\"",
        ),
        (
            r#"{"data": 1, "meta": {"source": "local"}}"#,
            "is malformed",
        ),
    ];
    for (output, message) in cases {
        let text = format!(r#"{{"type":"call.responded","requestId":"r","output":{output}}}"#);
        let error = decode_error(&text);
        assert!(
            matches!(error, WireError::OutputNotEnvelope(_)),
            "{error:?}"
        );
        let shown = error.to_string();
        assert!(
            shown.starts_with("the `output` of `call.responded` is not a ResponseEnvelope: "),
            "{shown}"
        );
        assert!(shown.contains(message), "`{shown}` lacks `{message}`");
    }
}

#[test]
fn serde_errors_carry_the_same_message() {
    let error = serde_json::from_str::<CallEvent>(r#"{"type":"call.nope","requestId":"r"}"#)
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("unknown call event type \"call.nope\""),
        "{error}"
    );
}

#[test]
fn wire_errors_become_validation_errors() {
    let error = CallError::from(decode_error("3"));
    assert_eq!(error.code, ErrorCode::ValidationError);
    assert_eq!(
        error.message,
        "a call event must be a JSON object, found a number"
    );
}
