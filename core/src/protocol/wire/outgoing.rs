//! `call.requested` written from what a caller holds ([`RequestOut`]): the same JSON as
//! [`CallEvent::Requested`](super::CallEvent::Requested), without owned copies of the ids, the
//! parent id, the identity or the `traceparent` text a [`CallRequested`](super::CallRequested)
//! would need; and an unsigned `call.responded` written around a reply's own JSON
//! ([`responded`]), without the envelope as a `Value` first (tests below hold each to the
//! bytes of its `CallEvent`).

use crate::access::Identity;
use crate::envelope::write_json_str;
use crate::error::CallError;
use crate::middleware::Reply;
use crate::trace::TraceContext;
use bytes::Bytes;
use serde_json::Value;

/// A `call.requested` borrowing its parts. Written in [`CallRequested`](super::CallRequested)'s
/// field order, with its omissions; `identityToken` is never written (a signed request is
/// built whole, since the signature covers it).
pub(crate) struct RequestOut<'a> {
    pub(crate) request_id: &'a str,
    pub(crate) operation_id: &'a str,
    pub(crate) input: &'a Value,
    pub(crate) parent_request_id: Option<&'a str>,
    pub(crate) identity: Option<&'a Identity>,
    pub(crate) deadline: Option<u64>,
    pub(crate) subscription: bool,
    /// Written as `traceparent` and, when it has one, `tracestate`.
    pub(crate) trace: Option<&'a TraceContext>,
    /// `trace`'s `tracestate` ([`with_trace`](Self::with_trace) sets both).
    pub(crate) tracestate: Option<&'a str>,
}

impl<'a> RequestOut<'a> {
    /// A request with no parent, identity, deadline or trace.
    pub(crate) fn new(request_id: &'a str, operation_id: &'a str, input: &'a Value) -> Self {
        Self {
            request_id,
            operation_id,
            input,
            parent_request_id: None,
            identity: None,
            deadline: None,
            subscription: false,
            trace: None,
            tracestate: None,
        }
    }

    /// Carries `trace` on (`traceparent`, and `tracestate` when it has one).
    pub(crate) fn with_trace(mut self, trace: Option<&'a TraceContext>) -> Self {
        self.trace = trace;
        self.tracestate = trace.and_then(TraceContext::tracestate);
        self
    }

    /// The request's wire bytes.
    pub(crate) fn to_bytes(&self) -> Result<Bytes, super::WireError> {
        super::encode_with(|out| self.write_json(out))
            .map_err(|error| super::WireError::Encode(error.to_string()))
    }

    /// Appends the request's JSON to `out`, by hand: the keys are fixed text (through serde
    /// each would be escaped byte by byte on every request), the ids copied between quotes
    /// when nothing in them needs an escape ([`write_json_str`]), the rest written by
    /// `serde_json`.
    fn write_json(&self, out: &mut Vec<u8>) -> Result<(), serde_json::Error> {
        out.extend_from_slice(br#"{"type":"call.requested","requestId":"#);
        write_json_str(out, self.request_id)?;
        out.extend_from_slice(br#","operationId":"#);
        write_json_str(out, self.operation_id)?;
        out.extend_from_slice(br#","input":"#);
        serde_json::to_writer(&mut *out, self.input)?;
        if let Some(parent) = self.parent_request_id {
            out.extend_from_slice(br#","parentRequestId":"#);
            write_json_str(out, parent)?;
        }
        if let Some(identity) = self.identity {
            out.extend_from_slice(br#","identity":"#);
            serde_json::to_writer(&mut *out, identity)?;
        }
        if let Some(deadline) = self.deadline {
            out.extend_from_slice(br#","deadline":"#);
            out.extend_from_slice(itoa::Buffer::new().format(deadline).as_bytes());
        }
        if self.subscription {
            out.extend_from_slice(br#","subscription":true"#);
        }
        if let Some(trace) = self.trace {
            // Hex digits and dashes: nothing to escape.
            out.extend_from_slice(br#","traceparent":""#);
            out.extend_from_slice(trace.traceparent_text().as_str().as_bytes());
            out.push(b'"');
        }
        if let Some(state) = self.tracestate {
            out.extend_from_slice(br#","tracestate":"#);
            serde_json::to_writer(&mut *out, state)?;
        }
        out.push(b'}');
        Ok(())
    }
}

/// The unsigned `call.responded` of `reply` to `request_id`: the bytes
/// `CallEvent::responded(request_id, reply.into_envelope()?)` encodes, with an `#[operation]`
/// fn's data serialized from its own type straight into them. An error is the reply's (an
/// output that would not serialize).
pub(crate) fn responded(request_id: &str, reply: Reply) -> Result<Bytes, CallError> {
    super::encode_with(|out| {
        out.extend_from_slice(br#"{"type":"call.responded","requestId":"#);
        write_json_str(out, request_id).map_err(|error| {
            CallError::execution(format!("a reply could not be encoded: {error}"))
        })?;
        out.extend_from_slice(br#","output":"#);
        reply.write_json(out)?;
        out.push(b'}');
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::envelope::local_envelope;
    use crate::protocol::wire::{CallEvent, CallRequested};
    use serde_json::json;

    #[test]
    fn writes_what_call_responded_writes() {
        let id = "caller\"1:2";
        let data = json!({"sum": 3, "text": "ünï \"quoted\""});
        // An `#[operation]` fn's data, and a JSON envelope (a middleware's, an import's).
        let typed = Reply::data(
            crate::middleware::typed_data(data.clone()),
            "math.add".into(),
        );
        let mut copy = Reply::data(
            crate::middleware::typed_data(data.clone()),
            "math.add".into(),
        );
        let envelope = copy.envelope().unwrap().clone();
        assert_eq!(
            responded(id, typed).unwrap(),
            CallEvent::responded(id, envelope).to_bytes().unwrap()
        );
        let json = local_envelope(data, "math.add");
        assert_eq!(
            responded(id, Reply::new(json.clone())).unwrap(),
            CallEvent::responded(id, json).to_bytes().unwrap()
        );
    }

    #[test]
    fn writes_what_call_requested_writes() {
        let identity = Identity::new("ann").with_scopes(["a"]);
        let traced = TraceContext::new_root();
        let with_state =
            TraceContext::from_parts(Some(&traced.traceparent()), Some("vendor=1")).unwrap();
        let input = json!({"a": 1, "nested": {"b": [1, "x\"ü"]}});
        // Ids a writer must escape (a caller's are never such, but the writer must not rely
        // on it).
        let (odd_id, odd_op) = ("c\"\\\u{1}:1", "math.\u{e9}\n");
        for (request_id, operation_id) in [("c:1", "math.add"), (odd_id, odd_op)] {
            for parent in [None, Some("c:0"), Some(odd_id)] {
                for identity in [None, Some(&identity)] {
                    for deadline in [None, Some(1_700_000_000_000)] {
                        for subscription in [false, true] {
                            for trace in [None, Some(&traced), Some(&with_state)] {
                                let out = RequestOut {
                                    parent_request_id: parent,
                                    identity,
                                    deadline,
                                    subscription,
                                    ..RequestOut::new(request_id, operation_id, &input)
                                }
                                .with_trace(trace);
                                let owned = CallRequested {
                                    parent_request_id: parent.map(str::to_owned),
                                    identity: identity.cloned(),
                                    deadline,
                                    subscription,
                                    ..CallRequested::new(request_id, operation_id, input.clone())
                                }
                                .with_trace_context(trace);
                                assert_eq!(
                                    out.to_bytes().unwrap(),
                                    CallEvent::Requested(owned).to_bytes().unwrap()
                                );
                            }
                        }
                    }
                }
            }
        }
    }
}
