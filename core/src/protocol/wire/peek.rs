//! What a transport may read of a call event without decoding it: its [`EventKind`], its
//! request id, the request's deadline and whether it is a subscription ([`peek`]), and
//! which event ends a call ([`EventKind::ends_call`]).
//!
//! Transports move bytes; the few that keep track of calls in flight (to acknowledge a
//! request once it was answered, or to fail the requests of a peer that went away) read this
//! one definition rather than the event JSON, so they agree on when a call is over.

use super::json::{CowStr, SeenKeys};
use serde::Deserialize;
use serde::de::{Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::borrow::Cow;
use std::fmt;

/// The five call events.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventKind {
    /// `call.requested`.
    Requested,
    /// `call.responded`: the one result of a call, or one item of a subscription.
    Responded,
    /// `call.completed`: a subscription's end.
    Completed,
    /// `call.error`: the request failed; nothing follows.
    Error,
    /// `call.aborted`: the caller gave up.
    Aborted,
}

impl EventKind {
    /// The `type` of this event on the wire.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Requested => super::REQUESTED,
            Self::Responded => super::RESPONDED,
            Self::Completed => super::COMPLETED,
            Self::Error => super::ERROR,
            Self::Aborted => super::ABORTED,
        }
    }

    /// The event whose wire `type` is `kind`.
    pub(super) fn of(kind: &str) -> Option<Self> {
        Some(match kind {
            super::REQUESTED => Self::Requested,
            super::RESPONDED => Self::Responded,
            super::COMPLETED => Self::Completed,
            super::ERROR => Self::Error,
            super::ABORTED => Self::Aborted,
            _ => return None,
        })
    }

    /// `true` when this event ends the call of a request whose `subscription` flag is given
    /// (see [`Peek::subscription`] of its `call.requested`): `call.error` and `call.aborted`
    /// always, `call.completed` always (a subscription's end), `call.responded` only for a
    /// call (a subscription's items are not its end).
    pub const fn ends_call(self, subscription: bool) -> bool {
        match self {
            Self::Requested => false,
            Self::Responded => !subscription,
            Self::Completed | Self::Error | Self::Aborted => true,
        }
    }
}

/// The parts of a call event a transport reads: see [`peek`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Peek<'a> {
    /// Which event it is.
    pub kind: EventKind,
    /// Its `requestId`.
    pub request_id: Cow<'a, str>,
    /// A request's deadline, in milliseconds since the Unix epoch.
    pub deadline: Option<u64>,
    /// A request for a subscription (its `subscription` flag).
    pub subscription: bool,
}

/// The four fields [`peek`] reads; every other value is skipped.
struct Raw<'a> {
    kind: Cow<'a, str>,
    request_id: Cow<'a, str>,
    deadline: Scalar,
    subscription: Scalar,
}

impl<'de> Deserialize<'de> for Raw<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(RawVisitor)
    }
}

/// Reads the top-level object: a key seen twice is an error (the rule of `json.rs`), and so
/// are a missing or non-string `type` or `requestId`.
struct RawVisitor;

impl<'de> Visitor<'de> for RawVisitor {
    type Value = Raw<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a call event object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut entries: A) -> Result<Raw<'de>, A::Error> {
        let mut seen = SeenKeys::default();
        let (mut kind, mut request_id) = (None, None);
        let (mut deadline, mut subscription) = (Scalar::Other, Scalar::Other);
        while let Some(CowStr(key)) = entries.next_key()? {
            match &*key {
                "type" => kind = Some(entries.next_value::<CowStr<'de>>()?.0),
                "requestId" => request_id = Some(entries.next_value::<CowStr<'de>>()?.0),
                "deadline" => deadline = entries.next_value()?,
                "subscription" => subscription = entries.next_value()?,
                _ => {
                    entries.next_value::<IgnoredAny>()?;
                }
            }
            seen.insert(key)?;
        }
        Ok(Raw {
            kind: kind.ok_or_else(|| serde::de::Error::missing_field("type"))?,
            request_id: request_id.ok_or_else(|| serde::de::Error::missing_field("requestId"))?,
            deadline,
            subscription,
        })
    }
}

/// A field read leniently: a whole number, a boolean, or anything else (skipped without
/// building it), so that a malformed optional field does not hide the event.
#[derive(Default)]
enum Scalar {
    Number(u64),
    Bool(bool),
    #[default]
    Other,
}

impl<'de> Deserialize<'de> for Scalar {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Lenient;
        impl<'de> Visitor<'de> for Lenient {
            type Value = Scalar;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_u64<E>(self, value: u64) -> Result<Scalar, E> {
                Ok(Scalar::Number(value))
            }
            fn visit_i64<E>(self, value: i64) -> Result<Scalar, E> {
                Ok(u64::try_from(value).map_or(Scalar::Other, Scalar::Number))
            }
            fn visit_f64<E>(self, _: f64) -> Result<Scalar, E> {
                Ok(Scalar::Other)
            }
            fn visit_bool<E>(self, value: bool) -> Result<Scalar, E> {
                Ok(Scalar::Bool(value))
            }
            fn visit_str<E>(self, _: &str) -> Result<Scalar, E> {
                Ok(Scalar::Other)
            }
            fn visit_unit<E>(self) -> Result<Scalar, E> {
                Ok(Scalar::Other)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<Scalar, A::Error> {
                while items.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Scalar::Other)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut entries: A) -> Result<Scalar, A::Error> {
                while entries.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Scalar::Other)
            }
        }
        deserializer.deserialize_any(Lenient)
    }
}

/// The kind, request id, deadline and subscription flag of the call event in `payload`, or
/// `None` when it is not one (not a JSON object, no known `type`, no string `requestId`, or a
/// top-level key written twice: the wire's one rule, see [`CallEvent::from_slice`](super::CallEvent::from_slice)). A deadline
/// that is not a whole number reads as absent, a `subscription` that is not `true` as false.
/// Everything else is skipped without building values, and skipping does not recurse,
/// whatever the nesting of the input.
///
/// ```
/// use opkit::protocol::wire::{EventKind, peek};
/// let request = br#"{"type":"call.requested","requestId":"c:1","operationId":"a.b","input":{},"subscription":true}"#;
/// let peeked = peek(request).unwrap();
/// assert_eq!(peeked.kind, EventKind::Requested);
/// assert!(peeked.subscription);
/// // An item of that subscription does not end it; a call's one reply ends the call.
/// assert!(!EventKind::Responded.ends_call(peeked.subscription));
/// assert!(EventKind::Responded.ends_call(false));
/// ```
pub fn peek(payload: &[u8]) -> Option<Peek<'_>> {
    let raw: Raw<'_> = super::json::from_bytes(payload).ok()?;
    Some(Peek {
        kind: EventKind::of(&raw.kind)?,
        request_id: raw.request_id,
        deadline: match raw.deadline {
            Scalar::Number(deadline) => Some(deadline),
            Scalar::Bool(_) | Scalar::Other => None,
        },
        subscription: matches!(raw.subscription, Scalar::Bool(true)),
    })
}

/// The kind and request id of a call event, read from its first bytes only, when they are
/// what opkit writes first in every event: `{"type":"<kind>","requestId":"<id>"`, with no
/// escape in the id (a [`PendingRequestMap`](crate::protocol::PendingRequestMap)'s ids have
/// none). `None` for anything written otherwise: [`peek`] reads it.
///
/// Nothing after the id is read. For an event [`peek`] accepts, the two agree; unlike
/// [`peek`], this does not refuse an event that is malformed further on (invalid JSON, a key
/// written twice), and it reads no deadline or `subscription` flag. It is for a transport
/// that must know which call an event is about and leaves the rest to the event's receiver,
/// which reads it whole and drops what it cannot read (the Redis transport noting the replies
/// its own process publishes and the requests it holds for redelivery, the WebSocket hub
/// routing a reply to its caller); never for deciding on anything after the head (a
/// request's operation, identity or deadline: see [`check_request`](super::check_request)).
///
/// ```
/// use opkit::protocol::wire::{EventKind, peek_head};
/// let reply = br#"{"type":"call.responded","requestId":"c:1","output":{"data":1,"meta":{}}}"#;
/// assert_eq!(peek_head(reply), Some((EventKind::Responded, "c:1")));
/// // Written otherwise: left to `peek`.
/// assert_eq!(peek_head(br#"{ "type":"call.responded","requestId":"c:1"}"#), None);
/// assert_eq!(peek_head(br#"{"type":"call.responded","requestId":"c:\u0031"}"#), None);
/// ```
pub fn peek_head(payload: &[u8]) -> Option<(EventKind, &str)> {
    let rest = payload.strip_prefix(br#"{"type":""#)?;
    let (kind, rest) = EVENT_KINDS.iter().find_map(|&kind| {
        let rest = rest.strip_prefix(kind.as_str().as_bytes())?;
        Some((kind, rest.strip_prefix(br#"","requestId":""#)?))
    })?;
    let id = &rest[..memchr::memchr(b'"', rest)?];
    // An id with an escape ends elsewhere, or reads otherwise, than these bytes say. (A raw
    // control byte makes the event invalid JSON, which `peek` refuses: no agreement needed.)
    if memchr::memchr(b'\\', id).is_some() {
        return None;
    }
    Some((kind, std::str::from_utf8(id).ok()?))
}

/// The kind and request id of a call event: by [`peek_head`] when its first bytes are what
/// opkit writes, else by [`peek`]; `None` when neither reads it. As with [`peek_head`], the
/// rest of an event read by its head is left to its receiver.
///
/// ```
/// use opkit::protocol::wire::{EventKind, peek_kind_and_id};
/// let written = br#"{"type":"call.completed","requestId":"c:1"}"#;
/// let spaced = br#"{ "requestId": "c:1", "type": "call.completed" }"#;
/// for event in [&written[..], spaced] {
///     let (kind, request_id) = peek_kind_and_id(event).unwrap();
///     assert_eq!((kind, &*request_id), (EventKind::Completed, "c:1"));
/// }
/// ```
pub fn peek_kind_and_id(payload: &[u8]) -> Option<(EventKind, Cow<'_, str>)> {
    match peek_head(payload) {
        Some((kind, request_id)) => Some((kind, Cow::Borrowed(request_id))),
        None => peek(payload).map(|peeked| (peeked.kind, peeked.request_id)),
    }
}

/// Every [`EventKind`].
const EVENT_KINDS: [EventKind; 5] = [
    EventKind::Requested,
    EventKind::Responded,
    EventKind::Completed,
    EventKind::Error,
    EventKind::Aborted,
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::wire::{CallEvent, CallRequested};
    use serde_json::json;

    #[test]
    fn peek_agrees_with_the_encoder() {
        let mut request = CallRequested::new("c:7", "a.b", json!({"deep": [[[1]]]}));
        request.deadline = Some(5);
        request.subscription = true;
        let bytes = CallEvent::Requested(request).to_bytes().unwrap();
        let peeked = peek(&bytes).unwrap();
        assert_eq!(
            (
                peeked.kind,
                &*peeked.request_id,
                peeked.deadline,
                peeked.subscription
            ),
            (EventKind::Requested, "c:7", Some(5), true)
        );
        let call = CallEvent::Requested(CallRequested::new("c:8", "a.b", json!(null)));
        let bytes = call.to_bytes().unwrap();
        assert!(!String::from_utf8_lossy(&bytes).contains("subscription"));
        assert!(!peek(&bytes).unwrap().subscription);
        for (event, kind) in [
            (CallEvent::completed("c:1"), EventKind::Completed),
            (CallEvent::aborted("c:1"), EventKind::Aborted),
        ] {
            let bytes = event.to_bytes().unwrap();
            assert_eq!(peek(&bytes).unwrap().kind, kind);
            assert_eq!(
                kind.as_str(),
                serde_json::from_slice::<serde_json::Value>(&bytes).unwrap()["type"]
            );
        }
        assert_eq!(peek(b"not json"), None);
        assert_eq!(peek(br#"{"type":"call.other","requestId":"c:1"}"#), None);
        assert_eq!(peek(br#"{"type":"call.aborted"}"#), None);
        let odd = peek(br#"{"type":"call.requested","requestId":"c:2","deadline":"soon","subscription":[1,{"a":[]}]}"#).unwrap();
        assert_eq!((odd.deadline, odd.subscription), (None, false));
        let deep = format!(
            r#"{{"type":"call.requested","requestId":"c:3","input":{}{}}}"#,
            "[".repeat(100_000),
            "]".repeat(100_000)
        );
        assert_eq!(peek(deep.as_bytes()).unwrap().request_id, "c:3");
    }

    #[test]
    fn a_top_level_key_written_twice_is_no_event() {
        for twice in [
            &br#"{"type":"call.requested","type":"call.aborted","requestId":"c:1"}"#[..],
            br#"{"type":"call.requested","requestId":"c:1","requestId":"c:2"}"#,
            br#"{"type":"call.requested","requestId":"c:1","deadline":1,"deadline":2}"#,
            br#"{"type":"call.requested","requestId":"c:1","subscription":true,"subscription":false}"#,
            br#"{"type":"call.requested","requestId":"c:1","identity":{"id":"a"},"identity":{"id":"b"}}"#,
            br#"{"type":"call.requested","requestId":"c:1","operationId":"a.b","operationId":"c.d"}"#,
            br#"{"type":"call.requested","requestId":"c:1","\u0069nput":1,"input":2}"#,
        ] {
            assert_eq!(peek(twice), None, "{}", String::from_utf8_lossy(twice));
        }
        // Not an object: an array in field order is no event either.
        assert_eq!(peek(br#"["call.requested","c:1",5,true]"#), None);
        // Escaped strings are read (owned), like plain ones.
        let escaped = peek(br#"{"type":"call.aborted","requestId":"c:\u0031"}"#).unwrap();
        assert_eq!(escaped.request_id, "c:1");
    }

    /// Every event as opkit writes it is read by its head, as `peek` reads it; anything
    /// written otherwise is left to `peek`.
    #[test]
    fn the_head_agrees_with_peek() {
        use crate::envelope::local_envelope;
        let mut request = CallRequested::new("c:7", "a.b", json!({"requestId": "x"}));
        request.deadline = Some(5);
        let events = [
            CallEvent::Requested(request),
            CallEvent::responded("c:7", local_envelope(json!({"requestId": "y"}), "a.b")),
            CallEvent::completed("c:7"),
            CallEvent::error("c:7", crate::error::CallError::execution("no")),
            CallEvent::aborted("c:7"),
        ];
        for mut event in events {
            // Signed or not.
            if matches!(event, CallEvent::Completed(_)) {
                event.set_signature(Some("sig".into()));
            }
            let bytes = event.to_bytes().unwrap();
            let peeked = peek(&bytes).unwrap();
            assert_eq!(
                peek_head(&bytes),
                Some((peeked.kind, &*peeked.request_id)),
                "{}",
                String::from_utf8_lossy(&bytes)
            );
        }
        for other in [
            &br#"{"requestId":"c:1","type":"call.aborted"}"#[..],
            br#"{"type":"call.other","requestId":"c:1"}"#,
            br#"{"type":"call.aborted","requestId":"c:\u0031"}"#,
            br#"{"type":"call.aborted","requestId":"c:1"#,
            br#"{"type":"call.aborted","requestId":1}"#,
            br#"{"type":"call.abo\"rted","requestId":"c:1"}"#,
            b"",
        ] {
            assert_eq!(peek_head(other), None, "{}", String::from_utf8_lossy(other));
        }
        // Malformed further on, or in a way only a full read sees: `peek` refuses it, the
        // head does not read that far.
        for malformed in [
            &br#"{"type":"call.aborted","requestId":"c:1","requestId":"c:2"}"#[..],
            br#"{"type":"call.aborted","requestId":"c:1",}"#,
            b"{\"type\":\"call.aborted\",\"requestId\":\"c:\n\"}",
        ] {
            assert_eq!(peek(malformed), None);
            assert!(peek_head(malformed).is_some());
        }
    }

    #[test]
    fn which_events_end_a_call() {
        use EventKind::*;
        for subscription in [false, true] {
            assert!(!Requested.ends_call(subscription));
            assert!(Completed.ends_call(subscription) && Error.ends_call(subscription));
            assert!(Aborted.ends_call(subscription));
        }
        assert!(Responded.ends_call(false));
        assert!(!Responded.ends_call(true));
    }
}
