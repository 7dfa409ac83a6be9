//! Topic names and request ids: how the call protocol lays its traffic out on a bus.
//!
//! | topic | events | published by | received by | delivery |
//! |---|---|---|---|---|
//! | `opkit.request.<operationId>` | `call.requested` | callers | every [`CallHandler`](super::CallHandler) serving the operation, in the group [`HANDLER_GROUP`] | each message to **one** member (competing consumers) |
//! | `opkit.abort.<operationId>` | `call.aborted` | callers | every handler serving the operation | every listener (broadcast) |
//! | `opkit.reply.<callerId>` | `call.responded`, `call.completed`, `call.error` | handlers | the one [`PendingRequestMap`](super::PendingRequestMap) owning `callerId` | every listener |
//! | `opkit.reply` (fallback) | the same | handlers, for request ids without a caller part | foreign callers, which filter by request id | every listener |
//!
//! This is the one copy of the table; the [protocol docs](super#topic-layout) say why the
//! layout is so.
//!
//! Request ids minted by a [`PendingRequestMap`](super::PendingRequestMap) are
//! `<callerId>:<sequence>`; a handler answers on the reply topic of the part before the last
//! `:` (see [`reply_topic_for`]).

/// The group every [`CallHandler`](super::CallHandler) joins on the request topics: each
/// request goes to exactly one of the handlers serving the operation.
pub const HANDLER_GROUP: &str = "opkit.handlers";

/// Where handlers answer requests whose id carries no (valid) caller part.
pub const FALLBACK_REPLY_TOPIC: &str = "opkit.reply";

/// The longest caller id a reply topic is derived from.
pub const MAX_CALLER_ID_LEN: usize = 128;

/// The topic `call.requested` events for `operation_id` are published on.
///
/// ```
/// assert_eq!(opkit::protocol::topics::request_topic("math.add"), "opkit.request.math.add");
/// ```
pub fn request_topic(operation_id: &str) -> String {
    [REQUEST_PREFIX, operation_id].concat()
}

/// What a request topic starts with.
const REQUEST_PREFIX: &str = "opkit.request.";
/// What a caller's reply topic starts with.
const REPLY_PREFIX: &str = "opkit.reply.";

/// The topic `call.aborted` events for requests to `operation_id` are published on.
pub fn abort_topic(operation_id: &str) -> String {
    ["opkit.abort.", operation_id].concat()
}

/// The topic a caller with id `caller_id` receives its replies on.
pub fn reply_topic(caller_id: &str) -> String {
    [REPLY_PREFIX, caller_id].concat()
}

/// `true` when `caller_id` is 1 to [`MAX_CALLER_ID_LEN`] characters of `[A-Za-z0-9_-]`, so
/// that the reply topic is a single, wildcard-free topic segment on every transport.
pub fn is_valid_caller_id(caller_id: &str) -> bool {
    !caller_id.is_empty()
        && caller_id.len() <= MAX_CALLER_ID_LEN
        && caller_id
            .bytes()
            .all(|byte| CALLER_ID_BYTES[usize::from(byte)])
}

/// Which bytes a caller id may hold (`[A-Za-z0-9_-]`), one lookup per byte: a handler checks
/// the caller part of every request id it answers.
static CALLER_ID_BYTES: [bool; 256] = {
    let mut table = [false; 256];
    let mut byte = 0;
    while byte < 256 {
        let b = byte as u8;
        table[byte] = b.is_ascii_alphanumeric() || b == b'_' || b == b'-';
        byte += 1;
    }
    table
};

/// The caller part of a request id: the text before its last `:`, when it is a valid caller id.
///
/// ```
/// use opkit::protocol::topics::caller_of;
/// assert_eq!(caller_of("c0ffee:42"), Some("c0ffee"));
/// assert_eq!(caller_of("no-caller"), None);
/// assert_eq!(caller_of("bad caller:1"), None);
/// ```
pub fn caller_of(request_id: &str) -> Option<&str> {
    let (caller, _) = request_id.rsplit_once(':')?;
    is_valid_caller_id(caller).then_some(caller)
}

/// The topic a handler answers `request_id` on: the caller's reply topic, or
/// [`FALLBACK_REPLY_TOPIC`] when the id has no valid caller part.
///
/// ```
/// use opkit::protocol::topics::reply_topic_for;
/// assert_eq!(reply_topic_for("c0ffee:42"), "opkit.reply.c0ffee");
/// assert_eq!(reply_topic_for("4d2c-uuid-only"), "opkit.reply");
/// ```
pub fn reply_topic_for(request_id: &str) -> String {
    reply_parts(request_id).concat()
}

/// [`reply_topic_for`]`(request_id)` in two parts: a prefix and the caller id, or
/// [`FALLBACK_REPLY_TOPIC`] and nothing.
fn reply_parts(request_id: &str) -> [&str; 2] {
    match caller_of(request_id) {
        Some(caller) => [REPLY_PREFIX, caller],
        None => [FALLBACK_REPLY_TOPIC, ""],
    }
}

/// `true` when `topic` is [`reply_topic_for`]`(request_id)`, compared without building it.
///
/// ```
/// use opkit::protocol::topics::is_reply_topic_for;
/// assert!(is_reply_topic_for("opkit.reply.c0ffee", "c0ffee:42"));
/// assert!(is_reply_topic_for("opkit.reply", "4d2c-uuid-only"));
/// assert!(!is_reply_topic_for("opkit.reply", "c0ffee:42"));
/// ```
pub fn is_reply_topic_for(topic: &str, request_id: &str) -> bool {
    match caller_of(request_id) {
        Some(caller) => {
            topic
                .strip_prefix(FALLBACK_REPLY_TOPIC)
                .and_then(|rest| rest.strip_prefix('.'))
                == Some(caller)
        }
        None => topic == FALLBACK_REPLY_TOPIC,
    }
}

/// A fresh random caller id (32 hex digits).
pub fn new_caller_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

/// A topic name made per call (a caller's request topic, a handler's reply topic): on the stack
/// when it fits [`TopicName::INLINE`] bytes, as the protocol's topics for usual operation and
/// caller ids do, on the heap otherwise. It reads as the `str` [`request_topic`] or
/// [`reply_topic_for`] would return.
pub(crate) struct TopicName(Name);

enum Name {
    Inline {
        len: usize,
        bytes: [u8; TopicName::INLINE],
    },
    Heap(String),
}

impl TopicName {
    /// The longest name kept on the stack.
    const INLINE: usize = 80;

    /// `prefix` followed by `rest`.
    fn joined(prefix: &str, rest: &str) -> Self {
        let len = prefix.len() + rest.len();
        if len > Self::INLINE {
            return Self(Name::Heap([prefix, rest].concat()));
        }
        let mut bytes = [0; Self::INLINE];
        bytes[..prefix.len()].copy_from_slice(prefix.as_bytes());
        bytes[prefix.len()..len].copy_from_slice(rest.as_bytes());
        Self(Name::Inline { len, bytes })
    }

    /// [`request_topic`]`(operation_id)`.
    pub(crate) fn request(operation_id: &str) -> Self {
        Self::joined(REQUEST_PREFIX, operation_id)
    }

    /// [`reply_topic_for`]`(request_id)`.
    pub(crate) fn reply_for(request_id: &str) -> Self {
        let [prefix, caller] = reply_parts(request_id);
        Self::joined(prefix, caller)
    }
}

impl std::ops::Deref for TopicName {
    type Target = str;

    fn deref(&self) -> &str {
        match &self.0 {
            // Two `str`s joined whole: UTF-8, checked rather than assumed (no `unsafe`).
            Name::Inline { len, bytes } => {
                std::str::from_utf8(&bytes[..*len]).expect("two joined strs are UTF-8")
            }
            Name::Heap(name) => name,
        }
    }
}

impl std::fmt::Display for TopicName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caller_ids_are_the_bytes_the_rule_names() {
        for byte in 0..=255u8 {
            let expected = byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-';
            assert_eq!(CALLER_ID_BYTES[usize::from(byte)], expected, "{byte}");
        }
        assert!(is_valid_caller_id("A-z_09"));
        assert!(is_valid_caller_id(&"c".repeat(MAX_CALLER_ID_LEN)));
        for invalid in [
            "",
            "a b",
            "a:b",
            "a.b",
            "é",
            &"c".repeat(MAX_CALLER_ID_LEN + 1),
        ] {
            assert!(!is_valid_caller_id(invalid), "{invalid}");
        }
    }

    #[test]
    fn the_reply_topic_check_agrees_with_the_reply_topic() {
        let ids = [
            "c0ffee:42",
            "a:b:1",
            "no-caller",
            "bad caller:1",
            ":1",
            "x:",
            "",
        ];
        for request_id in ids {
            let expected = reply_topic_for(request_id);
            for topic in [
                expected.as_str(),
                FALLBACK_REPLY_TOPIC,
                "opkit.reply.c0ffee",
                "opkit.replyc0ffee",
                "opkit.reply.",
                "opkit.reply.a:b",
                "opkit.reply.a",
            ] {
                assert_eq!(
                    is_reply_topic_for(topic, request_id),
                    topic == expected,
                    "{topic} for {request_id}"
                );
            }
        }
    }

    /// A per-call name reads as the `String` the public functions make, short or long.
    #[test]
    fn topic_names_read_as_the_public_functions_write_them() {
        let long = "x".repeat(200);
        for id in ["math.add", "ünï.cöde", long.as_str()] {
            assert_eq!(&*TopicName::request(id), request_topic(id));
            let name = TopicName::request(id);
            assert_eq!(name.to_string(), request_topic(id));
        }
        let long_caller = format!("{}:1", "c".repeat(100));
        for request_id in [
            "c0ffee:42",
            "4d2c-uuid-only",
            "bad caller:1",
            long_caller.as_str(),
        ] {
            assert_eq!(
                &*TopicName::reply_for(request_id),
                reply_topic_for(request_id)
            );
        }
    }
}
