//! [`ByteStream`]: bytes an operation reads as they arrive, and the hand-off that lets an edge
//! pass a body it has not read through the JSON front door.
//!
//! The front door ([`OperationRegistry::serve`](crate::OperationRegistry::serve)) takes its
//! input as JSON. An edge that holds a body as a stream (the HTTP server's REST routes) parks
//! it with [`ByteStream::hand_off`] and puts the returned token where the field goes; reading
//! the input in the same process takes the stream back out of the table. The token is 122
//! random bits behind a prefix no base64 text has, so it is neither guessed nor mistaken for
//! bytes. The [`HandOff`] guard removes a stream nobody took when the request ends, so the
//! table holds at most the bodies of requests in flight.

use super::Binary;
use crate::error::{CallError, ErrorCode};
use bytes::{Bytes, BytesMut};
use futures::{Stream, StreamExt};
use parking_lot::Mutex;
use serde::{Deserialize, Deserializer};
use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::pin::Pin;
use std::sync::LazyLock;
use std::task::{Context, Poll};

/// The chunks of a [`ByteStream`].
type Chunks = Pin<Box<dyn Stream<Item = Result<Bytes, CallError>> + Send>>;

/// What a hand-off token starts with: `-` and `:` are not in the base64 alphabet.
const TOKEN_PREFIX: &str = "opkit-stream:";

/// Streams handed off and not taken yet, by token.
static PARKED: LazyLock<Mutex<HashMap<String, ByteStream>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

/// Bytes as an operation's input field, read chunk by chunk as they arrive.
///
/// On the HTTP server's REST routes a `ByteStream` field that is the whole body is read from
/// the socket while the operation runs: the body is never held whole, and the route's body
/// limit and the request timeout apply as it streams (the stream then ends with the error).
/// On every other wire (the RPC route, MCP, the call protocol) it is a base64 string, like
/// [`Binary`], and arrives as one chunk. Its schema is `Binary`'s plus `"x-opkit-stream":
/// true`.
///
/// ```
/// use futures::StreamExt;
/// use opkit::binary::ByteStream;
///
/// # futures::executor::block_on(async {
/// let stream: ByteStream = serde_json::from_value(serde_json::json!("aGk=")).unwrap();
/// assert_eq!(stream.read_to_end(1024).await.unwrap().as_ref(), b"hi");
///
/// let chunks = futures::stream::iter([Ok(bytes::Bytes::from("a")), Ok("b".into())]);
/// let mut stream = ByteStream::new(chunks);
/// let mut seen = Vec::new();
/// while let Some(chunk) = stream.next().await {
///     seen.extend_from_slice(&chunk.unwrap());
/// }
/// assert_eq!(seen, b"ab");
/// # });
/// ```
pub struct ByteStream(Chunks);

impl fmt::Debug for ByteStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ByteStream")
    }
}

impl ByteStream {
    /// A stream of `chunks`.
    pub fn new(chunks: impl Stream<Item = Result<Bytes, CallError>> + Send + 'static) -> Self {
        Self(Box::pin(chunks))
    }

    /// One chunk.
    pub fn from_bytes(bytes: impl Into<Bytes>) -> Self {
        Self::new(futures::stream::iter([Ok(bytes.into())]))
    }

    /// Every chunk, joined; a `VALIDATION_ERROR` naming `limit` once they pass it (the rest is
    /// not read), or the error the stream ended with.
    pub async fn read_to_end(mut self, limit: usize) -> Result<Bytes, CallError> {
        let mut out = BytesMut::new();
        while let Some(chunk) = self.0.next().await {
            let chunk = chunk?;
            if out.len() + chunk.len() > limit {
                return Err(CallError::new(
                    ErrorCode::ValidationError,
                    format!("the byte stream is longer than {limit} bytes"),
                ));
            }
            out.extend_from_slice(&chunk);
        }
        Ok(out.freeze())
    }

    /// Parks this stream for the input read next in this process: the returned guard's
    /// [`token`](HandOff::token) stands for it in the input's JSON, and reading that token as
    /// a `ByteStream` takes it back. Dropping the guard removes it if nobody took it.
    pub fn hand_off(self) -> HandOff {
        let token = format!("{TOKEN_PREFIX}{}", uuid::Uuid::new_v4().simple());
        PARKED.lock().insert(token.clone(), self);
        HandOff { token }
    }
}

impl Stream for ByteStream {
    type Item = Result<Bytes, CallError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.0.as_mut().poll_next(cx)
    }
}

impl From<Binary> for ByteStream {
    fn from(binary: Binary) -> Self {
        Self::from_bytes(binary.0)
    }
}

/// A [`ByteStream`] parked by [`ByteStream::hand_off`]; dropping it removes the stream if it
/// was not taken.
#[derive(Debug)]
pub struct HandOff {
    token: String,
}

impl HandOff {
    /// The text that stands for the stream in an input's JSON.
    pub fn token(&self) -> &str {
        &self.token
    }
}

impl Drop for HandOff {
    fn drop(&mut self) {
        PARKED.lock().remove(&self.token);
    }
}

impl<'de> Deserialize<'de> for ByteStream {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = Cow::<str>::deserialize(deserializer)?;
        if text.starts_with(TOKEN_PREFIX) {
            return PARKED.lock().remove(text.as_ref()).ok_or_else(|| {
                serde::de::Error::custom(
                    "a streamed body is read once, in the process that received it",
                )
            });
        }
        super::decode_base64(&text).map(Self::from_bytes)
    }
}

impl schemars::JsonSchema for ByteStream {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        Cow::Borrowed("ByteStream")
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let mut schema = super::bytes_schema();
        schema.insert("x-opkit-stream".to_owned(), true.into());
        schema
    }
}

/// `true` for the schema of a [`ByteStream`].
pub fn is_byte_stream_schema(schema: &serde_json::Value) -> bool {
    super::is_binary_schema(schema)
        && schema
            .get("x-opkit-stream")
            .and_then(serde_json::Value::as_bool)
            == Some(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_handed_off_stream_is_taken_once_and_a_dropped_guard_frees_it() {
        let guard = ByteStream::from_bytes("body").hand_off();
        let token = serde_json::Value::from(guard.token());
        let stream: ByteStream = serde_json::from_value(token.clone()).unwrap();
        assert_eq!(stream.read_to_end(16).await.unwrap().as_ref(), b"body");
        let again = serde_json::from_value::<ByteStream>(token).unwrap_err();
        assert!(again.to_string().contains("read once"), "{again}");

        let guard = ByteStream::from_bytes("x").hand_off();
        let token = guard.token().to_owned();
        drop(guard);
        assert!(!PARKED.lock().contains_key(&token));
    }

    #[tokio::test]
    async fn read_to_end_stops_at_its_limit() {
        let chunks = futures::stream::iter([Ok(Bytes::from("abc")), Ok(Bytes::from("def"))]);
        let error = ByteStream::new(chunks).read_to_end(4).await.unwrap_err();
        assert_eq!(error.code, ErrorCode::ValidationError);
        assert!(is_byte_stream_schema(&crate::schema::schema_for::<
            ByteStream,
        >()));
    }
}
