//! Call events decoded straight from their bytes, without building a JSON tree first.
//!
//! A request or a reply that starts with its `type`, as opkit writes them, is read by the
//! one-pass scanner of `scan/` (its input or data built as it is read); what the scanner
//! declines is read by serde's derived structs below.
//!
//! The receivers ([`CallEvent::from_slice`], the call handler and the pending-request map) try
//! [`decode_fast`] first and fall back to [`CallEvent::from_value`] when it declines, so every
//! error message still comes from one place. The fast path is only ever stricter: whatever it
//! accepts, `from_value` accepts too and decodes to the same event (pinned by a property test
//! in `core/tests/prop_boundaries.rs` and below); repeated keys (refused by both, under the
//! rule of `json.rs`), unknown fields, mistyped fields of other event types and anything
//! unusual are left to the slow path.

use super::json::unique_value;
use super::{CallAborted, CallCompleted, CallEvent, CallFailed, CallRequested, CallResponded};
use crate::access::Identity;
use crate::envelope::{ResponseEnvelope, ResponseMeta};
use crate::error::ErrorCode;
use serde::de::IgnoredAny;
use serde::{Deserialize, Deserializer};
use serde_json::Value;
use std::borrow::Cow;

/// Every field any event may carry; which ones must be there depends on `type`. A field it
/// does not know declines the fast path; derived structs refuse a field written twice, and the
/// values below are read by [`unique_value`], so no repeated key passes at any depth.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawEvent<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    request_id: String,
    operation_id: Option<String>,
    /// `Some(Value::Null)` for `"input": null`, `None` when the key is absent.
    #[serde(default, deserialize_with = "present")]
    input: Option<Value>,
    parent_request_id: Option<String>,
    #[serde(default, deserialize_with = "identity")]
    identity: Option<Identity>,
    identity_token: Option<String>,
    deadline: Option<u64>,
    subscription: Option<bool>,
    traceparent: Option<String>,
    tracestate: Option<String>,
    output: Option<RawEnvelope>,
    code: Option<ErrorCode>,
    message: Option<String>,
    #[serde(default, deserialize_with = "non_null")]
    details: Option<Value>,
    #[serde(rename = "kind", default, deserialize_with = "non_null")]
    error_kind: Option<Value>,
    /// The signature of a reply or an abort. Lenient, as the slow path reads it: a value that
    /// is not a string is dropped.
    #[serde(default, deserialize_with = "lenient_string")]
    signature: Option<String>,
}

/// A `call.requested` that starts with its `type` (as every opkit caller writes it): a
/// request's fields only, read into a struct half the size of [`RawEvent`] (moved the fewer
/// bytes). Any other field, or a field missing, declines this reader, and [`RawEvent`] reads
/// the event as it reads any other.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawRequested {
    /// `call.requested`: the event's first bytes said so (a second `type` key is refused).
    #[serde(rename = "type")]
    _kind: IgnoredAny,
    request_id: String,
    operation_id: String,
    #[serde(default, deserialize_with = "present")]
    input: Option<Value>,
    parent_request_id: Option<String>,
    #[serde(default, deserialize_with = "identity")]
    identity: Option<Identity>,
    identity_token: Option<String>,
    deadline: Option<u64>,
    subscription: Option<bool>,
    traceparent: Option<String>,
    tracestate: Option<String>,
}

/// A `call.responded` that starts with its `type` (as every opkit handler writes it), read
/// as [`RawRequested`] reads a request.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawResponded {
    /// `call.responded`: the event's first bytes said so.
    #[serde(rename = "type")]
    _kind: IgnoredAny,
    request_id: String,
    output: RawEnvelope,
    #[serde(default, deserialize_with = "lenient_string")]
    signature: Option<String>,
}

/// The first bytes of the two events every call carries, as opkit writes them.
const REQUESTED_HEAD: &[u8] = br#"{"type":"call.requested","#;
const RESPONDED_HEAD: &[u8] = br#"{"type":"call.responded","#;

/// The event in `bytes` when it is a request or a reply that starts with its `type`; `None`
/// leaves it to [`RawEvent`].
fn decode_common(bytes: &[u8]) -> Option<CallEvent> {
    if bytes.starts_with(REQUESTED_HEAD) {
        if let Some(request) = super::scan::request(bytes, |scan| scan.build(1)) {
            return Some(scanned_request(request));
        }
        let raw: RawRequested = super::json::from_bytes(bytes).ok()?;
        Some(CallEvent::Requested(CallRequested {
            request_id: raw.request_id,
            operation_id: raw.operation_id,
            input: raw.input?,
            parent_request_id: raw.parent_request_id,
            identity: raw.identity,
            identity_token: raw.identity_token,
            deadline: raw.deadline,
            subscription: raw.subscription.unwrap_or(false),
            traceparent: raw.traceparent,
            tracestate: raw.tracestate,
        }))
    } else if bytes.starts_with(RESPONDED_HEAD) {
        if let Some(reply) =
            super::scan::responded(bytes, |scan| scan.build(2), super::fast_meta::scanned)
        {
            return Some(scanned_reply(reply));
        }
        let raw: RawResponded = super::json::from_bytes(bytes).ok()?;
        Some(CallEvent::Responded(CallResponded {
            request_id: raw.request_id,
            output: ResponseEnvelope {
                data: raw.output.data?,
                meta: raw.output.meta,
            },
            signature: raw.signature,
        }))
    } else {
        None
    }
}

/// A request the scanner read (its input built as serde_json builds it).
fn scanned_request(request: super::scan::Request<'_, Value>) -> CallEvent {
    CallEvent::Requested(CallRequested {
        request_id: request.request_id.to_owned(),
        operation_id: request.operation_id.to_owned(),
        input: request.input,
        parent_request_id: request.parent_request_id.map(str::to_owned),
        identity: None,
        identity_token: request.identity_token.map(str::to_owned),
        deadline: request.deadline,
        subscription: request.subscription.unwrap_or(false),
        traceparent: request.traceparent.map(str::to_owned),
        tracestate: request.tracestate.map(str::to_owned),
    })
}

/// A reply the scanner read (its data built as serde_json builds it, its meta as
/// [`RawEnvelope`] reads it).
fn scanned_reply(reply: super::scan::Responded<'_, Value, ResponseMeta>) -> CallEvent {
    CallEvent::Responded(CallResponded {
        request_id: reply.request_id.to_owned(),
        output: ResponseEnvelope {
            data: reply.data,
            meta: reply.meta,
        },
        signature: reply.signature.map(str::to_owned),
    })
}

/// An envelope as the wire carries it: `data` must be present (it may be `null`).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawEnvelope {
    #[serde(default, deserialize_with = "present")]
    data: Option<Value>,
    #[serde(deserialize_with = "super::fast_meta::meta")]
    meta: ResponseMeta,
}

/// Wraps a present value in `Some`, so that `null` and an absent key can be told apart.
fn present<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Value>, D::Error> {
    unique_value(deserializer).map(Some)
}

/// An optional value: `null` counts as absent, as `Option<Value>` reads it.
fn non_null<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Value>, D::Error> {
    unique_value(deserializer).map(|value| (!value.is_null()).then_some(value))
}

/// A string, or nothing for any other value (read without repeated keys).
fn lenient_string<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<String>, D::Error> {
    match unique_value(deserializer)? {
        Value::String(text) => Ok(Some(text)),
        _ => Ok(None),
    }
}

/// An identity, read as the slow path reads it (from a value without repeated keys).
pub(super) fn identity<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Identity>, D::Error> {
    match unique_value(deserializer)? {
        Value::Null => Ok(None),
        value => serde_json::from_value(value)
            .map(Some)
            .map_err(serde::de::Error::custom),
    }
}

/// `true` when `bytes` start a JSON object: derived structs also read a JSON array (fields in
/// declaration order), and events are objects.
pub(super) fn is_object(bytes: &[u8]) -> bool {
    bytes.trim_ascii_start().first() == Some(&b'{')
}

/// The event in `bytes`, or `None` when the fast path declines (the caller then decodes through
/// [`CallEvent::from_value`], which names what is wrong or accepts what this path left out).
pub(crate) fn decode_fast(bytes: &[u8]) -> Option<CallEvent> {
    if !is_object(bytes) {
        return None;
    }
    if let Some(event) = decode_common(bytes) {
        return Some(event);
    }
    let raw: RawEvent<'_> = super::json::from_bytes(bytes).ok()?;
    let request_id = raw.request_id;
    Some(match &*raw.kind {
        "call.requested" => CallEvent::Requested(CallRequested {
            request_id,
            operation_id: raw.operation_id?,
            input: raw.input?,
            parent_request_id: raw.parent_request_id,
            identity: raw.identity,
            identity_token: raw.identity_token,
            deadline: raw.deadline,
            subscription: raw.subscription.unwrap_or(false),
            traceparent: raw.traceparent,
            tracestate: raw.tracestate,
        }),
        "call.responded" => {
            let output = raw.output?;
            CallEvent::Responded(CallResponded {
                request_id,
                output: ResponseEnvelope {
                    data: output.data?,
                    meta: output.meta,
                },
                signature: raw.signature,
            })
        }
        "call.completed" => CallEvent::Completed(CallCompleted {
            request_id,
            signature: raw.signature,
        }),
        "call.error" => CallEvent::Error(CallFailed {
            request_id,
            code: raw.code?,
            message: raw.message?,
            details: raw.details,
            kind: raw.error_kind.and_then(super::error_kind),
            signature: raw.signature,
        }),
        "call.aborted" => CallEvent::Aborted(CallAborted {
            request_id,
            signature: raw.signature,
        }),
        _ => return None,
    })
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::{Map, json};

    /// One value for a field: absent, or one of a few well- and ill-typed candidates.
    fn field(candidates: Vec<Value>) -> impl Strategy<Value = Option<Value>> {
        prop_oneof![
            1 => Just(None),
            4 => proptest::sample::select(candidates).prop_map(Some),
        ]
    }

    fn envelope_candidates() -> Vec<Value> {
        let meta = json!({"source": "local", "operationId": "a.b", "timestamp": 1});
        vec![
            json!({"data": {"sum": 1}, "meta": meta}),
            json!({"data": null, "meta": meta}),
            json!({"meta": meta}),
            json!({"data": 1, "meta": {"source": "ftp"}}),
            json!({"data": 1, "meta": {"source": "local", "operationId": "a.b", "timestamp": -1}}),
            json!({"data": 1, "meta": {"source": "http", "statusCode": 200, "headers": {}, "contentType": ""}}),
            json!({"data": 1, "meta": null, "extra": true}),
            json!([1]),
            Value::Null,
        ]
    }

    /// Objects shaped like call events, with every field right, wrong, null or missing.
    pub(in crate::protocol::wire) fn event_like() -> impl Strategy<Value = Value> {
        let kinds = vec![
            json!("call.requested"),
            json!("call.responded"),
            json!("call.completed"),
            json!("call.error"),
            json!("call.aborted"),
            json!("call.other"),
            json!(7),
            Value::Null,
        ];
        let strings = vec![json!("c:1"), json!(""), Value::Null, json!(3), json!(["x"])];
        let inputs = vec![Value::Null, json!({"a": 1}), json!([1, "x"]), json!("s")];
        let identities = vec![
            Value::Null,
            json!({"id": "ann", "scopes": ["a"], "roles": []}),
            json!({"id": "ann"}),
            json!({"scopes": ["a"]}),
            json!({"id": 5}),
            json!("ann"),
        ];
        let deadlines = vec![Value::Null, json!(5), json!(-1), json!(1.5), json!("soon")];
        let codes = vec![json!("TIMEOUT"), json!("NOPE"), json!(5), Value::Null];
        let details = vec![Value::Null, json!({"why": 1}), json!(0)];
        let traceparents = vec![
            json!("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
            json!("junk"),
            json!(7),
            Value::Null,
        ];
        (
            (
                field(kinds),
                field(strings.clone()),
                field(strings.clone()),
                field(inputs),
                field(strings.clone()),
            ),
            (
                field(identities),
                field(deadlines),
                field(envelope_candidates()),
                field(codes),
                field(strings),
                field(details),
                field(traceparents),
            ),
        )
            .prop_map(|(head, tail)| {
                let (kind, request_id, operation_id, input, parent) = head;
                let (identity, deadline, output, code, message, details, traceparent) = tail;
                let mut event = Map::new();
                for (key, value) in [
                    ("type", kind),
                    ("requestId", request_id),
                    ("operationId", operation_id),
                    ("input", input),
                    ("parentRequestId", parent),
                    ("identity", identity),
                    ("deadline", deadline),
                    ("output", output),
                    ("code", code),
                    ("message", message),
                    ("details", details),
                    ("traceparent", traceparent),
                ] {
                    if let Some(value) = value {
                        event.insert(key.to_owned(), value);
                    }
                }
                Value::Object(event)
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

        /// Whatever the fast path accepts, the slow path accepts and decodes the same way; a
        /// repeated key is refused by both.
        #[test]
        fn the_fast_path_agrees_with_from_value(
            event in event_like(),
            duplicate in any::<bool>(),
            type_first in any::<bool>(),
        ) {
            let mut bytes = match (type_first, event.get("type")) {
                // As opkit writes its events (the readers of a request's or a reply's own
                // fields take those): `type` first, then the rest.
                (true, Some(kind)) => {
                    let mut rest = event.as_object().unwrap().clone();
                    rest.remove("type");
                    let mut bytes = format!("{{\"type\":{kind}").into_bytes();
                    let rest = serde_json::to_vec(&rest).unwrap();
                    if rest.len() > 2 {
                        bytes.push(b',');
                        bytes.extend_from_slice(&rest[1..]);
                    } else {
                        bytes.push(b'}');
                    }
                    bytes
                }
                _ => serde_json::to_vec(&event).unwrap(),
            };
            let repeats = duplicate && event.get("type").is_some();
            if repeats {
                // A repeated key: which one counts would depend on the parser.
                let mut with_duplicate = br#"{"type":"call.completed","#.to_vec();
                with_duplicate.extend_from_slice(&bytes[1..]);
                bytes = with_duplicate;
            }
            let slow = super::super::json::parse(&bytes).and_then(CallEvent::from_value);
            if let Some(fast) = decode_fast(&bytes) {
                prop_assert!(!repeats);
                prop_assert_eq!(slow, Ok(fast));
            } else if repeats {
                prop_assert_eq!(slow, Err(super::super::WireError::DuplicateKey { key: "type".into() }));
            }
        }
    }

    /// A request's or a reply's fields only, right, wrong, null or missing, `type` first (as
    /// opkit writes them: what the readers of [`decode_common`] take).
    fn request_or_reply() -> impl Strategy<Value = Vec<u8>> {
        let strings = vec![json!("c:1"), json!("é\"x"), Value::Null, json!(3)];
        let inputs = vec![Value::Null, json!({"a": 1}), json!([1, "x"])];
        let identities = vec![
            Value::Null,
            json!({"id": "ann", "scopes": ["a"]}),
            json!({"id": 5}),
        ];
        let deadlines = vec![Value::Null, json!(5), json!(-1)];
        let flags = vec![json!(true), json!(false), Value::Null, json!("yes")];
        let request = (
            (
                field(strings.clone()),
                field(strings.clone()),
                field(inputs),
                field(strings.clone()),
                field(identities),
            ),
            (
                field(strings.clone()),
                field(deadlines),
                field(flags),
                field(strings.clone()),
                field(strings.clone()),
            ),
        )
            .prop_map(|(head, tail)| {
                let (request_id, operation_id, input, parent, identity) = head;
                let (token, deadline, subscription, traceparent, tracestate) = tail;
                (
                    "call.requested",
                    vec![
                        ("requestId", request_id),
                        ("operationId", operation_id),
                        ("input", input),
                        ("parentRequestId", parent),
                        ("identity", identity),
                        ("identityToken", token),
                        ("deadline", deadline),
                        ("subscription", subscription),
                        ("traceparent", traceparent),
                        ("tracestate", tracestate),
                    ],
                )
            });
        let reply = (
            field(strings.clone()),
            field(envelope_candidates()),
            field(strings),
        )
            .prop_map(|(request_id, output, signature)| {
                (
                    "call.responded",
                    vec![
                        ("requestId", request_id),
                        ("output", output),
                        ("signature", signature),
                    ],
                )
            });
        prop_oneof![request, reply].prop_map(|(kind, fields)| {
            let mut bytes = format!("{{\"type\":\"{kind}\"").into_bytes();
            for (key, value) in fields {
                if let Some(value) = value {
                    bytes.extend_from_slice(format!(",\"{key}\":{value}").as_bytes());
                }
            }
            bytes.push(b'}');
            bytes
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

        /// A request or a reply written as opkit writes it is read by its own reader exactly
        /// as the slow path reads it (the fast path may only decline more).
        #[test]
        fn requests_and_replies_read_as_from_value_reads_them(bytes in request_or_reply()) {
            let slow = super::super::json::parse(&bytes).and_then(CallEvent::from_value);
            if let Some(fast) = decode_fast(&bytes) {
                prop_assert_eq!(slow, Ok(fast));
            }
        }
    }

    #[test]
    fn well_formed_events_take_the_fast_path() {
        let events = [
            CallEvent::Requested(CallRequested::new("c:1", "math.add", json!({"a": 1}))),
            CallEvent::responded(
                "c:1",
                crate::envelope::local_envelope(json!({"sum": 3}), "math.add"),
            ),
            CallEvent::completed("c:1"),
            CallEvent::error("c:1", crate::CallError::timeout("late")),
            CallEvent::aborted("c:1"),
        ];
        for event in events {
            let bytes = event.to_bytes().unwrap();
            let common = matches!(event, CallEvent::Requested(_) | CallEvent::Responded(_));
            assert_eq!(decode_common(&bytes).is_some(), common, "{event:?}");
            assert_eq!(decode_fast(&bytes), Some(event));
        }
    }

    #[test]
    fn repeated_keys_at_any_depth_and_non_objects_decline() {
        for declined in [
            &br#"{"type":"call.requested","requestId":"c:1","operationId":"a.b","input":{"x":1,"x":2}}"#[..],
            br#"{"type":"call.requested","requestId":"c:1","operationId":"a.b","input":1,"identity":{"id":"a","id":"b"}}"#,
            br#"{"type":"call.responded","requestId":"c:1","output":{"data":1,"meta":{"source":"http","statusCode":200,"headers":{"a":"1","a":"2"},"contentType":""}}}"#,
            br#"{"type":"call.error","requestId":"c:1","code":"TIMEOUT","message":"m","details":{"a":1,"a":1}}"#,
            br#"{"type":"call.aborted","requestId":"c:1","extra":1,"extra":2}"#,
            br#"["call.completed","c:1"]"#,
        ] {
            assert_eq!(decode_fast(declined), None, "{}", String::from_utf8_lossy(declined));
            assert!(matches!(
                CallEvent::from_slice(declined),
                Err(super::super::WireError::DuplicateKey { .. } | super::super::WireError::NotAnObject { .. })
            ));
        }
    }
}
