//! Frames: a JSON header, then optionally `\n` and the payload's raw bytes.

use bytes::{BufMut, Bytes};
use futures::{Sink, SinkExt};
use serde::{Deserialize, Serialize};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

/// A frame's header (see the module docs for the table).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub(crate) enum Header {
    Welcome {
        spoke: String,
    },
    Subscribe {
        id: u64,
        topic: String,
    },
    SubscribeGroup {
        id: u64,
        topic: String,
        group: String,
    },
    Unsubscribe {
        id: u64,
    },
    Publish {
        id: u64,
        topic: String,
    },
    Ok {
        id: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        receivers: Option<usize>,
    },
    Error {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<u64>,
        message: String,
        /// On the answer to a `publish`: the message reached nobody (safe to publish again).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        unsent: bool,
    },
    Message {
        sub: u64,
    },
    /// Several receipts at once (late receipts): `[id, receivers]` each, as an `ok` frame
    /// with `receivers` would say it.
    Oks {
        oks: Vec<(u64, usize)>,
    },
}

/// Encodes a frame: text without a payload, binary with one.
///
/// The frames of every call (`publish`, `message`, `ok`, `oks`) are written by hand (see
/// [`fast`]), byte for byte what serde writes for them; the others go through serde.
pub(crate) fn encode(header: &Header, payload: Option<&[u8]>) -> Message {
    match payload {
        None => {
            let json = match fast::encode_ok(header) {
                Some(json) => json,
                None => serde_json::to_string(header).expect("frame headers always serialize"),
            };
            Message::text(json)
        }
        Some(payload) => {
            let mut bytes = Vec::with_capacity(fast::head_len(header) + 1 + payload.len());
            if !fast::encode_head(header, &mut bytes) {
                let json = serde_json::to_vec(header).expect("frame headers always serialize");
                bytes.put_slice(&json);
            }
            bytes.put_u8(b'\n');
            bytes.put_slice(payload);
            // As long as its capacity when `fast` wrote the head: `Bytes` takes the buffer
            // over as it is (a shorter one would cost a second allocation).
            Message::Binary(Bytes::from(bytes))
        }
    }
}

/// A `publish` frame for `topic`, written from the borrowed topic (what [`encode`] writes for
/// [`Header::Publish`], without an owned copy of the topic first): the frame every call sends
/// twice.
pub(crate) fn encode_publish(id: u64, topic: &str, payload: &[u8]) -> Message {
    if fast::needs_escape(topic.as_bytes()) {
        let header = Header::Publish {
            id,
            topic: topic.to_owned(),
        };
        return encode(&header, Some(payload));
    }
    let mut bytes = Vec::with_capacity(fast::publish_head_len(id, topic) + 1 + payload.len());
    fast::put_publish_head(id, topic, &mut bytes);
    bytes.put_u8(b'\n');
    bytes.put_slice(payload);
    Message::Binary(Bytes::from(bytes))
}

/// A `publish` frame read without copying its topic: the id, the topic borrowed from `data`,
/// and the payload. `None` for any other frame, a header over `max_head` bytes, or one
/// [`decode`] reads another way (it decides those, as before): the hub's fast path for the
/// frame every call sends twice.
pub(crate) fn decode_publish(data: &Bytes, max_head: usize) -> Option<(u64, &str, Bytes)> {
    let at = memchr::memchr(b'\n', data)?;
    if at > max_head {
        return None;
    }
    let (id, topic) = fast::publish_head(&data[..at])?;
    Some((id, topic, data.slice(at + 1..)))
}

/// Decodes a frame's bytes into its header and payload (empty when absent). A header longer
/// than `max_head` bytes is refused unread.
pub(crate) fn decode(data: &Bytes, max_head: usize) -> Result<(Header, Bytes), String> {
    let (head, payload) = match data.iter().position(|&byte| byte == b'\n') {
        Some(at) => (data.slice(..at), data.slice(at + 1..)),
        None => (data.clone(), Bytes::new()),
    };
    if head.len() > max_head {
        return Err(format!(
            "the frame header is {} bytes long, over the limit of {max_head} (names longer than HubOptions::with_max_topic_len)",
            head.len()
        ));
    }
    let header = match fast::decode_head(&head) {
        Some(header) => header,
        None => serde_json::from_slice(&head).map_err(|error| error.to_string())?,
    };
    Ok((header, payload))
}

/// The headers of the frames every call sends (`publish`, `message`, `ok`, `oks`), encoded and
/// decoded without serde: a serde internally tagged enum buffers every field before it looks
/// at the tag, which made decoding a header a noticeable part of a call's cost.
///
/// Encoding writes exactly what `serde_json` writes for these headers (fields in declaration
/// order, no spaces). Decoding accepts only those exact forms — a topic without escapes,
/// numbers without sign, fraction or leading zero — and reads them as serde would; anything
/// else (another field order, spaces, escapes, other frames) returns `None` and is left to
/// serde, which decides as before.
mod fast {
    use super::Header;
    use bytes::BufMut;

    const MESSAGE: &[u8] = br#"{"op":"message","sub":"#;
    const PUBLISH: &[u8] = br#"{"op":"publish","id":"#;
    const TOPIC: &[u8] = br#","topic":""#;
    const OK: &[u8] = br#"{"op":"ok","id":"#;
    const RECEIVERS: &[u8] = br#","receivers":"#;
    const OKS: &[u8] = br#"{"op":"oks","oks":["#;

    /// The length of what [`encode_head`] writes for `header` (0 when it writes nothing).
    pub(super) fn head_len(header: &Header) -> usize {
        let digits = |value: u64| itoa::Buffer::new().format(value).len();
        match header {
            Header::Message { sub } => MESSAGE.len() + digits(*sub) + 1,
            Header::Publish { id, topic } if !needs_escape(topic.as_bytes()) => {
                publish_head_len(*id, topic)
            }
            _ => 0,
        }
    }

    /// The length of a `publish` head [`put_publish_head`] writes.
    pub(super) fn publish_head_len(id: u64, topic: &str) -> usize {
        PUBLISH.len() + itoa::Buffer::new().format(id).len() + TOPIC.len() + topic.len() + 2
    }

    /// Writes a `publish` head for a topic serde would not escape.
    pub(super) fn put_publish_head(id: u64, topic: &str, out: &mut impl BufMut) {
        out.put_slice(PUBLISH);
        put_u64(out, id);
        out.put_slice(TOPIC);
        out.put_slice(topic.as_bytes());
        out.put_slice(b"\"}");
    }

    /// Writes the header of a frame with a payload (`message`, `publish`); `false` for
    /// another header, or a topic serde would escape.
    pub(super) fn encode_head(header: &Header, out: &mut impl BufMut) -> bool {
        match header {
            Header::Message { sub } => {
                out.put_slice(MESSAGE);
                put_u64(out, *sub);
                out.put_u8(b'}');
                true
            }
            Header::Publish { id, topic } if !needs_escape(topic.as_bytes()) => {
                put_publish_head(*id, topic, out);
                true
            }
            _ => false,
        }
    }

    /// The text of an `ok` or `oks` header; `None` for another header.
    pub(super) fn encode_ok(header: &Header) -> Option<String> {
        let mut out = Vec::with_capacity(48);
        match header {
            Header::Ok { id, receivers } => {
                out.put_slice(OK);
                put_u64(&mut out, *id);
                if let Some(receivers) = receivers {
                    out.put_slice(RECEIVERS);
                    put_u64(&mut out, *receivers as u64);
                }
                out.put_u8(b'}');
            }
            Header::Oks { oks } => {
                out.reserve(oks.len() * 12);
                out.put_slice(OKS);
                for (index, (id, receivers)) in oks.iter().enumerate() {
                    if index > 0 {
                        out.put_u8(b',');
                    }
                    out.put_u8(b'[');
                    put_u64(&mut out, *id);
                    out.put_u8(b',');
                    put_u64(&mut out, *receivers as u64);
                    out.put_u8(b']');
                }
                out.put_slice(b"]}");
            }
            _ => return None,
        }
        // Only ASCII was written.
        String::from_utf8(out).ok()
    }

    /// The id and topic of a `publish` header in the exact form [`encode_head`] writes; `None`
    /// for anything else.
    pub(super) fn publish_head(head: &[u8]) -> Option<(u64, &str)> {
        let (id, rest) = take_u64(head.strip_prefix(PUBLISH)?)?;
        let topic = rest.strip_prefix(TOPIC)?.strip_suffix(b"\"}")?;
        if needs_escape(topic) {
            return None;
        }
        Some((id, std::str::from_utf8(topic).ok()?))
    }

    /// Reads a `message`, `publish` or `ok` header in the exact form [`encode_head`] and
    /// [`encode_ok`] write; `None` for anything else.
    pub(super) fn decode_head(head: &[u8]) -> Option<Header> {
        if let Some(rest) = head.strip_prefix(MESSAGE) {
            let (sub, rest) = take_u64(rest)?;
            return (rest == b"}").then_some(Header::Message { sub });
        }
        if head.starts_with(PUBLISH) {
            let (id, topic) = publish_head(head)?;
            return Some(Header::Publish {
                id,
                topic: topic.to_owned(),
            });
        }
        if let Some(rest) = head.strip_prefix(OK) {
            let (id, rest) = take_u64(rest)?;
            if rest == b"}" {
                return Some(Header::Ok {
                    id,
                    receivers: None,
                });
            }
            let (receivers, rest) = take_u64(rest.strip_prefix(RECEIVERS)?)?;
            let receivers = usize::try_from(receivers).ok()?;
            return (rest == b"}").then_some(Header::Ok {
                id,
                receivers: Some(receivers),
            });
        }
        if let Some(mut rest) = head.strip_prefix(OKS) {
            let mut oks = Vec::new();
            if let Some(end) = rest.strip_prefix(b"]}") {
                return end.is_empty().then_some(Header::Oks { oks });
            }
            loop {
                let (id, after) = take_u64(rest.strip_prefix(b"[")?)?;
                let (receivers, after) = take_u64(after.strip_prefix(b",")?)?;
                oks.push((id, usize::try_from(receivers).ok()?));
                let after = after.strip_prefix(b"]")?;
                if let Some(next) = after.strip_prefix(b",") {
                    rest = next;
                } else {
                    return (after == b"]}").then_some(Header::Oks { oks });
                }
            }
        }
        None
    }

    /// Whether serde_json would escape something in this string (or it ends one early).
    pub(super) fn needs_escape(text: &[u8]) -> bool {
        text.iter()
            .any(|&byte| byte < 0x20 || byte == b'"' || byte == b'\\')
    }

    fn put_u64(out: &mut impl BufMut, value: u64) {
        out.put_slice(itoa::Buffer::new().format(value).as_bytes());
    }

    /// A JSON integer serde reads as this `u64` (no sign, no leading zero, no overflow), and
    /// what follows it.
    fn take_u64(text: &[u8]) -> Option<(u64, &[u8])> {
        let end = text
            .iter()
            .position(|byte| !byte.is_ascii_digit())
            .unwrap_or(text.len());
        let (digits, rest) = text.split_at(end);
        if digits.is_empty() || (digits.len() > 1 && digits[0] == b'0') {
            return None;
        }
        // A fraction or an exponent makes it another number.
        if matches!(rest.first(), Some(b'.' | b'e' | b'E')) {
            return None;
        }
        let mut value: u64 = 0;
        for &digit in digits {
            value = value
                .checked_mul(10)?
                .checked_add(u64::from(digit - b'0'))?;
        }
        Some((value, rest))
    }
}

/// The bytes of a data message; `None` for control messages.
pub(crate) fn data_of(message: Message) -> Option<Bytes> {
    match message {
        Message::Text(text) => Some(Bytes::from(text)),
        Message::Binary(bytes) => Some(bytes),
        _ => None,
    }
}

/// The handshake header by which a spoke asks for late receipts (`oks` frames; see the
/// hub's `receipts.rs`), and its value.
pub(crate) const LATE_RECEIPTS_HEADER: &str = "opkit-receipts";
pub(crate) const LATE_RECEIPTS: &str = "late";

/// How many bytes a WebSocket reads from its socket at once, at most.
///
/// tungstenite zero-fills this much of its read buffer before every read (even one that finds
/// nothing to read); its default, 128 KiB, made that fill a fifth of a call's CPU one call at a
/// time. Frames of calls are a few hundred bytes; a large frame is read in several reads.
const READ_BUFFER_SIZE: usize = 16 * 1024;

/// The settings of every hub and spoke WebSocket: tungstenite's defaults (frame and message
/// size limits included) but for [`READ_BUFFER_SIZE`].
pub(crate) fn socket_config() -> WebSocketConfig {
    WebSocketConfig::default().read_buffer_size(READ_BUFFER_SIZE)
}

/// How many bytes of frames a writer puts in the socket's buffer before it flushes, at most.
const MAX_BATCH_BYTES: usize = 64 * 1024;

/// One batch of a connection's writer: `first`, then frames already queued (`more` yields
/// them without waiting) up to [`MAX_BATCH_BYTES`] or a close frame, then one flush: one
/// write to the socket for many frames when they come faster than the socket takes them,
/// instead of one per frame. Returns the batch's size (the sum of [`Message::len`]) and
/// whether it ended with a close frame; `Err` when the socket failed.
pub(crate) async fn write_batch<S>(
    sink: &mut S,
    first: Message,
    mut more: impl FnMut() -> Option<Message>,
) -> Result<(usize, bool), S::Error>
where
    S: Sink<Message> + Unpin,
{
    let mut size = first.len();
    let mut closing = matches!(first, Message::Close(_));
    sink.feed(first).await?;
    while !closing && size < MAX_BATCH_BYTES {
        let Some(message) = more() else { break };
        size += message.len();
        closing = matches!(message, Message::Close(_));
        sink.feed(message).await?;
    }
    sink.flush().await?;
    Ok((size, closing))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ops::Not;

    /// The borrowed-topic writer writes what `encode` writes, escaped topic or not.
    #[test]
    fn a_publish_frame_from_a_borrowed_topic_is_the_same_frame() {
        for topic in ["opkit.reply.c0ffee", "t\"quoted\\", "ünï", ""] {
            let header = Header::Publish {
                id: 42,
                topic: topic.to_owned(),
            };
            let payload = b"{\"a\":1}";
            assert_eq!(
                data_of(encode_publish(42, topic, payload)),
                data_of(encode(&header, Some(payload))),
                "{topic}"
            );
        }
    }

    #[test]
    fn frames_round_trip_with_and_without_payload() {
        let header = Header::Publish {
            id: 7,
            topic: "t".into(),
        };
        let message = encode(&header, Some(b"{\"a\":1}\n\xff"));
        let data = data_of(message).unwrap();
        assert_eq!(
            &data[..],
            b"{\"op\":\"publish\",\"id\":7,\"topic\":\"t\"}\n{\"a\":1}\n\xff"
        );
        let (decoded, payload) = decode(&data, usize::MAX).unwrap();
        assert_eq!(decoded, header);
        assert_eq!(&payload[..], b"{\"a\":1}\n\xff");

        let ok = encode(
            &Header::Ok {
                id: 1,
                receivers: None,
            },
            None,
        );
        let data = data_of(ok).unwrap();
        assert_eq!(&data[..], b"{\"op\":\"ok\",\"id\":1}");
        assert!(decode(&Bytes::from_static(b"{\"op\":\"fly\"}"), usize::MAX).is_err());
        assert!(decode(&Bytes::from_static(b"\xff\xfe"), usize::MAX).is_err());
        assert!(
            decode(
                &Bytes::from_static(b"{\"op\":\"publish\",\"id\":1}"),
                usize::MAX
            )
            .is_err()
        );
    }

    /// The hand-written headers are what serde writes, and read as serde reads them.
    #[test]
    fn the_fast_headers_match_serde() {
        let headers = [
            Header::Message { sub: 0 },
            Header::Message { sub: u64::MAX },
            Header::Publish {
                id: 42,
                topic: "opkit.req.math.add".into(),
            },
            Header::Publish {
                id: 1,
                topic: "caf\u{e9} \u{7f}".into(),
            },
            Header::Publish {
                id: 2,
                topic: "needs \"escape\" \\ \n".into(),
            },
            Header::Ok {
                id: 7,
                receivers: None,
            },
            Header::Ok {
                id: 8,
                receivers: Some(0),
            },
            Header::Ok {
                id: u64::MAX,
                receivers: Some(12),
            },
            Header::Oks { oks: vec![] },
            Header::Oks {
                oks: vec![(1, 1), (u64::MAX, 0), (30, 2)],
            },
        ];
        for header in headers {
            let serde = serde_json::to_vec(&header).unwrap();
            let payload = matches!(header, Header::Ok { .. } | Header::Oks { .. })
                .not()
                .then_some(&b"{}"[..]);
            let data = data_of(encode(&header, payload)).unwrap();
            let head = data.split(|&byte| byte == b'\n').next().unwrap();
            assert_eq!(head, &serde[..], "{header:?}");
            assert_eq!(decode(&data, usize::MAX).unwrap().0, header);
            let escaped = matches!(&header, Header::Publish { topic, .. } if topic.contains('"'));
            assert_eq!(fast::decode_head(&serde).is_some(), !escaped, "{header:?}");
            // The frame's buffer is allocated at its exact length when `fast` writes the head.
            let mut head = Vec::new();
            if fast::encode_head(&header, &mut head) {
                assert_eq!(fast::head_len(&header), head.len(), "{header:?}");
            }
            // The hub's borrowed read of a `publish` agrees with `decode`.
            let borrowed = decode_publish(&data, usize::MAX);
            match (&header, borrowed) {
                (Header::Publish { id, topic }, Some((read_id, read_topic, payload))) => {
                    assert_eq!(
                        (*id, topic.as_str(), &payload[..]),
                        (read_id, read_topic, &b"{}"[..])
                    );
                }
                (Header::Publish { .. }, None) => assert!(escaped, "{header:?}"),
                (_, borrowed) => assert!(borrowed.is_none(), "{header:?}"),
            }
            assert!(decode_publish(&data, 3).is_none());
        }
        // What the fast path declines, serde decides, as before.
        for (text, decoded) in [
            (&br#"{"op":"ok","id":01}"#[..], None),
            (br#"{"op":"ok","id":-1}"#, None),
            (br#"{"op":"ok","id":1.5}"#, None),
            (br#"{"op":"ok","id":18446744073709551616}"#, None),
            (br#"{"op":"ok","id":3,"receivers":}"#, None),
            (br#"{"op":"oks","oks":[[1,1],]}"#, None),
            (br#"{"op":"oks","oks":[[1]]}"#, None),
            (
                br#"{"op":"oks","oks":[[1, 2]]}"#,
                Some(Header::Oks { oks: vec![(1, 2)] }),
            ),
            (
                br#"{"op":"message","sub":3,"x":1}"#,
                Some(Header::Message { sub: 3 }),
            ),
            (
                br#"{"op": "message","sub":3}"#,
                Some(Header::Message { sub: 3 }),
            ),
            (
                br#"{"op":"publish","id":3,"topic":"a\u0041"}"#,
                Some(Header::Publish {
                    id: 3,
                    topic: "aA".into(),
                }),
            ),
            (
                br#"{"op":"publish","id":3,"topic":"a"} "#,
                Some(Header::Publish {
                    id: 3,
                    topic: "a".into(),
                }),
            ),
        ] {
            assert_eq!(
                fast::decode_head(text),
                None,
                "{}",
                String::from_utf8_lossy(text)
            );
            let data = Bytes::copy_from_slice(text);
            assert_eq!(
                decode(&data, usize::MAX).ok().map(|(header, _)| header),
                decoded
            );
        }
    }
}
