//! Checking a `call.requested` without decoding it: what a router needs of a request (its
//! id, operation, deadline and `subscription` flag), after the same checks a handler's decoder
//! makes, with nothing built (no input tree, no owned strings where the bytes have no
//! escapes).
//!
//! A request as opkit writes it is judged by the one-pass scanner of `scan/`, which checks
//! the input's JSON without building it; what the scanner declines is read here by serde.
//!
//! [`check_request`] accepts only what the fast decoder accepts, field for field: the same
//! field types, unknown fields declined, every nested value walked under the wire's one rule
//! (no repeated key, `json.rs`). So what it accepts, `CallEvent::from_slice` decodes to a
//! `call.requested` with the same head (pinned by a property test below); anything else,
//! including what the full decoder would accept, it declines, and the caller decodes in full
//! to learn what the bytes are.

use super::fast_decode::{RawEnvelope, identity, is_object};
use super::json::{CowStr, unique_check};
use super::{CallRequested, REQUESTED};
use crate::access::Identity;
use crate::error::ErrorCode;
use serde::{Deserialize, Deserializer};
use std::borrow::Cow;

/// What a router reads of a `call.requested`: see [`check_request`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestHead<'a> {
    /// Its `requestId`.
    pub request_id: Cow<'a, str>,
    /// Its `operationId`.
    pub operation_id: Cow<'a, str>,
    /// Its deadline, in milliseconds since the Unix epoch.
    pub deadline: Option<u64>,
    /// A request for a subscription.
    pub subscription: bool,
}

impl<'a> From<&'a CallRequested> for RequestHead<'a> {
    fn from(request: &'a CallRequested) -> Self {
        Self {
            request_id: Cow::Borrowed(&request.request_id),
            operation_id: Cow::Borrowed(&request.operation_id),
            deadline: request.deadline,
            subscription: request.subscription,
        }
    }
}

impl From<CallRequested> for RequestHead<'static> {
    fn from(request: CallRequested) -> Self {
        Self {
            request_id: Cow::Owned(request.request_id),
            operation_id: Cow::Owned(request.operation_id),
            deadline: request.deadline,
            subscription: request.subscription,
        }
    }
}

/// Every field of a call event, as the fast decoder reads them (`fast_decode.rs`'s
/// `RawEvent`), with strings borrowed and values walked instead of built. Fields of other
/// events are checked as that decoder checks them, since it accepts them on a request too.
/// Most fields are read only to be checked (hence `dead_code`).
#[derive(Deserialize)]
#[allow(dead_code)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawRequest<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(borrow)]
    request_id: Cow<'a, str>,
    #[serde(borrow)]
    operation_id: Option<CowStr<'a>>,
    /// `Some(())` when present (even `null`), as the decoder tells them apart.
    #[serde(default, deserialize_with = "checked")]
    input: Option<()>,
    #[serde(borrow)]
    parent_request_id: Option<CowStr<'a>>,
    #[serde(default, deserialize_with = "identity")]
    identity: Option<Identity>,
    #[serde(borrow)]
    identity_token: Option<CowStr<'a>>,
    deadline: Option<u64>,
    subscription: Option<bool>,
    #[serde(borrow)]
    traceparent: Option<CowStr<'a>>,
    #[serde(borrow)]
    tracestate: Option<CowStr<'a>>,
    output: Option<RawEnvelope>,
    code: Option<ErrorCode>,
    #[serde(borrow)]
    message: Option<CowStr<'a>>,
    #[serde(default, deserialize_with = "checked")]
    details: Option<()>,
    #[serde(rename = "kind", default, deserialize_with = "checked")]
    error_kind: Option<()>,
    #[serde(default, deserialize_with = "checked")]
    signature: Option<()>,
}

/// A present value of any kind, walked under the wire's rule.
fn checked<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<()>, D::Error> {
    unique_check(deserializer).map(Some)
}

/// The head of the `call.requested` in `bytes`, when it is one that
/// [`CallEvent::from_slice`](super::CallEvent::from_slice) accepts; `None` when this check
/// declines (another event, a malformed request, or one only the full decoder reads: decode it
/// with `from_slice` to know which, and why).
///
/// ```
/// use opkit::protocol::wire::check_request;
/// let request = br#"{"type":"call.requested","requestId":"c:1","operationId":"a.b","input":{"x":[1]},"deadline":9}"#;
/// let head = check_request(request).unwrap();
/// assert_eq!((&*head.request_id, &*head.operation_id, head.deadline), ("c:1", "a.b", Some(9)));
/// // A key written twice anywhere is refused, as every reader of the wire refuses it.
/// assert!(check_request(br#"{"type":"call.requested","requestId":"c:1","operationId":"a.b","input":{"x":1,"x":2}}"#).is_none());
/// ```
pub fn check_request(bytes: &[u8]) -> Option<RequestHead<'_>> {
    if let Some(request) = super::scan::request(bytes, |scan| scan.value(1)) {
        return Some(RequestHead {
            request_id: Cow::Borrowed(request.request_id),
            operation_id: Cow::Borrowed(request.operation_id),
            deadline: request.deadline,
            subscription: request.subscription.unwrap_or(false),
        });
    }
    checked_by_serde(bytes)
}

/// [`check_request`] for what the scanner declines: every field read by serde.
pub(super) fn checked_by_serde(bytes: &[u8]) -> Option<RequestHead<'_>> {
    if !is_object(bytes) {
        return None;
    }
    let raw: RawRequest<'_> = super::json::from_bytes(bytes).ok()?;
    if raw.kind != REQUESTED {
        return None;
    }
    raw.input?;
    Some(RequestHead {
        request_id: raw.request_id,
        operation_id: raw.operation_id?.0,
        deadline: raw.deadline,
        subscription: raw.subscription.unwrap_or(false),
    })
}

#[cfg(test)]
mod tests {
    use super::super::fast_decode::{decode_fast, tests::event_like};
    use super::*;
    use crate::protocol::wire::CallEvent;
    use proptest::prelude::*;
    use serde_json::json;

    /// The head the fast decoder gives, when it reads a `call.requested`.
    fn decoded_head(bytes: &[u8]) -> Option<RequestHead<'static>> {
        match decode_fast(bytes)? {
            CallEvent::Requested(request) => Some(request.into()),
            _ => None,
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

        /// The check accepts exactly the requests the fast decoder reads, with the same head;
        /// and what it accepts, `from_slice` decodes to that request.
        #[test]
        fn the_check_agrees_with_the_decoder(mut event in event_like(), base in any::<u8>(), nested in any::<u8>()) {
            // Mostly a well-formed request under the generator's other fields, so that both
            // sides of the check are reached.
            if let Some(object) = event.as_object_mut() {
                if base % 4 != 0 {
                    object.insert("type".into(), json!("call.requested"));
                    object.insert("requestId".into(), json!("c:1"));
                    object.insert("operationId".into(), json!("a.b"));
                    object.entry("input").or_insert(json!({"a": 1}));
                }
                if base % 8 < 4 {
                    for other in ["output", "code", "message", "details", "identity"] {
                        object.remove(other);
                    }
                }
                // Repeated keys below the top level, where only a walk of the values finds them.
                match nested % 4 {
                    0 => { object.insert("input".into(), json!({"x": 1})); }
                    1 => { object.insert("details".into(), json!([{"k": {"k": 1}}])); }
                    _ => {}
                }
            }
            let mut bytes = serde_json::to_vec(&event).unwrap();
            if nested % 4 == 0 {
                let text = String::from_utf8(bytes).unwrap().replace(r#""x":1"#, r#""x":1,"x":2"#);
                bytes = text.into_bytes();
            }
            if nested % 4 == 1 {
                let text = String::from_utf8(bytes).unwrap().replace(r#"{"k":1}"#, r#"{"k":1,"k":2}"#);
                bytes = text.into_bytes();
            }
            let checked = check_request(&bytes);
            prop_assert_eq!(checked.clone(), decoded_head(&bytes));
            if let Some(head) = checked {
                let Ok(CallEvent::Requested(request)) = CallEvent::from_slice(&bytes) else {
                    return Err(TestCaseError::fail("from_slice refused what the check accepted"));
                };
                prop_assert_eq!(RequestHead::from(request), head);
            }
        }
    }

    #[test]
    fn strings_without_escapes_are_borrowed() {
        let bytes = br#"{"type":"call.requested","requestId":"c:1","operationId":"a\u002eb","input":null,"subscription":true}"#;
        let head = check_request(bytes).unwrap();
        assert!(matches!(head.request_id, Cow::Borrowed("c:1")));
        assert!(matches!(head.operation_id, Cow::Owned(ref id) if id == "a.b"));
        assert!(head.subscription);
        let bytes =
            br#"{"type":"call.requested","requestId":"c:\u0031","operationId":"a.b","input":null}"#;
        let head = check_request(bytes).unwrap();
        assert!(matches!(head.request_id, Cow::Owned(ref id) if id == "c:1"));
        assert!(matches!(head.operation_id, Cow::Borrowed("a.b")));
    }

    #[test]
    fn what_the_decoder_would_refuse_or_leave_out_declines() {
        for declined in [
            // No input, another event, an unknown field, a mistyped field, not an object.
            &br#"{"type":"call.requested","requestId":"c:1","operationId":"a.b"}"#[..],
            br#"{"type":"call.completed","requestId":"c:1"}"#,
            br#"{"type":"call.requested","requestId":"c:1","operationId":"a.b","input":1,"extra":1}"#,
            br#"{"type":"call.requested","requestId":"c:1","operationId":"a.b","input":1,"deadline":-1}"#,
            br#"["call.requested","c:1","a.b",1]"#,
            // A repeated key at the top and deep in a value the router does not need.
            br#"{"type":"call.requested","type":"call.requested","requestId":"c:1","operationId":"a.b","input":1}"#,
            br#"{"type":"call.requested","requestId":"c:1","operationId":"a.b","input":1,"identity":{"id":"a","id":"b"}}"#,
            br#"{"type":"call.requested","requestId":"c:1","operationId":"a.b","input":[[{"a":{"b":1,"b":1}}]]}"#,
        ] {
            assert_eq!(check_request(declined), None, "{}", String::from_utf8_lossy(declined));
        }
    }

    #[test]
    fn objects_with_many_keys_are_checked_past_the_inline_ones() {
        let keys: Vec<String> = (0..40).map(|key| format!("\"k{key}\":{key}")).collect();
        let input = format!("{{{}}}", keys.join(","));
        let request = format!(
            r#"{{"type":"call.requested","requestId":"c:1","operationId":"a.b","input":{input}}}"#
        );
        assert!(check_request(request.as_bytes()).is_some());
        let repeated = format!(
            r#"{{"type":"call.requested","requestId":"c:1","operationId":"a.b","input":{{{},"k3":0}}}}"#,
            keys.join(",")
        );
        assert!(check_request(repeated.as_bytes()).is_none());
    }
}
