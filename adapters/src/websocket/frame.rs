//! Frames: a JSON header, then optionally `\n` and the payload's raw bytes.

use bytes::{BufMut, Bytes, BytesMut};
use futures::{Sink, SinkExt};
use serde::{Deserialize, Serialize};
use tokio_tungstenite::tungstenite::Message;

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
}

/// Encodes a frame: text without a payload, binary with one.
pub(crate) fn encode(header: &Header, payload: Option<&[u8]>) -> Message {
    let json = serde_json::to_string(header).expect("frame headers always serialize");
    match payload {
        None => Message::text(json),
        Some(payload) => {
            let mut bytes = BytesMut::with_capacity(json.len() + 1 + payload.len());
            bytes.put_slice(json.as_bytes());
            bytes.put_u8(b'\n');
            bytes.put_slice(payload);
            Message::Binary(bytes.freeze())
        }
    }
}

/// Decodes a frame's bytes into its header and payload (empty when absent).
pub(crate) fn decode(data: &Bytes) -> Result<(Header, Bytes), String> {
    let (head, payload) = match data.iter().position(|&byte| byte == b'\n') {
        Some(at) => (data.slice(..at), data.slice(at + 1..)),
        None => (data.clone(), Bytes::new()),
    };
    let header = serde_json::from_slice(&head).map_err(|error| error.to_string())?;
    Ok((header, payload))
}

/// The bytes of a data message; `None` for control messages.
pub(crate) fn data_of(message: Message) -> Option<Bytes> {
    match message {
        Message::Text(text) => Some(Bytes::from(text)),
        Message::Binary(bytes) => Some(bytes),
        _ => None,
    }
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
        let (decoded, payload) = decode(&data).unwrap();
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
        assert!(decode(&Bytes::from_static(b"{\"op\":\"fly\"}")).is_err());
        assert!(decode(&Bytes::from_static(b"\xff\xfe")).is_err());
        assert!(decode(&Bytes::from_static(b"{\"op\":\"publish\",\"id\":1}")).is_err());
    }
}
