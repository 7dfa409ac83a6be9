//! [`Binary`]: bytes as an operation's input field or output.
//!
//! On every JSON wire (the RPC route, MCP, the call protocol) a `Binary` is a base64 string,
//! described by the schema `{"type": "string", "contentEncoding": "base64",
//! "contentMediaType": "application/octet-stream"}`. The HTTP server's REST routes carry it
//! as the raw body instead: a route whose body is one `Binary` field reads the request body
//! as those bytes, whatever its content type, and an operation whose output is `Binary`
//! answers `application/octet-stream`.
//!
//! [`ByteStream`] is the input field read as it arrives (a REST route's body is then never
//! held whole), and a stream operation whose items are `Binary` is answered on a REST route
//! as one raw body, chunk by chunk: large bytes in both directions without buffering.

mod stream;

pub use stream::{ByteStream, HandOff, is_byte_stream_schema};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use bytes::Bytes;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::borrow::Cow;
use std::fmt;

/// Bytes, as an operation's input field or output (see the [module docs](self)).
///
/// ```
/// use opkit::binary::Binary;
/// let value = Binary::from(&b"hi"[..]);
/// assert_eq!(serde_json::to_value(&value).unwrap(), "aGk=");
/// let back: Binary = serde_json::from_value(serde_json::json!("aGk=")).unwrap();
/// assert_eq!(back.as_ref(), b"hi");
/// assert!(opkit::binary::is_binary_schema(&opkit::schema::schema_for::<Binary>()));
/// ```
#[derive(Clone, PartialEq, Eq, Hash, Default)]
pub struct Binary(pub Bytes);

impl fmt::Debug for Binary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Binary({} bytes)", self.0.len())
    }
}

impl AsRef<[u8]> for Binary {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl From<Bytes> for Binary {
    fn from(bytes: Bytes) -> Self {
        Self(bytes)
    }
}

impl From<Vec<u8>> for Binary {
    fn from(bytes: Vec<u8>) -> Self {
        Self(Bytes::from(bytes))
    }
}

impl From<&[u8]> for Binary {
    fn from(bytes: &[u8]) -> Self {
        Self(Bytes::copy_from_slice(bytes))
    }
}

impl Binary {
    /// The bytes.
    pub fn into_bytes(self) -> Bytes {
        self.0
    }
}

impl Serialize for Binary {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&STANDARD.encode(&self.0))
    }
}

impl<'de> Deserialize<'de> for Binary {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = Cow::<str>::deserialize(deserializer)?;
        decode_base64(&text).map(Self)
    }
}

/// The bytes of base64 `text` (a `Binary` or `ByteStream` on a JSON wire), or the
/// deserializer's error saying it is not base64.
fn decode_base64<E: serde::de::Error>(text: &str) -> Result<Bytes, E> {
    STANDARD
        .decode(text.as_bytes())
        .map(Bytes::from)
        .map_err(|error| E::custom(format!("not base64: {error}")))
}

/// The schema of bytes on a JSON wire, shared by `Binary` and `ByteStream`.
fn bytes_schema() -> schemars::Schema {
    schemars::json_schema!({
        "type": "string",
        "contentEncoding": "base64",
        "contentMediaType": "application/octet-stream",
    })
}

impl schemars::JsonSchema for Binary {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        Cow::Borrowed("Binary")
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        bytes_schema()
    }
}

/// `true` for the schema of bytes: a string with `"contentEncoding": "base64"`.
pub fn is_binary_schema(schema: &serde_json::Value) -> bool {
    schema.get("type").and_then(serde_json::Value::as_str) == Some("string")
        && schema
            .get("contentEncoding")
            .and_then(serde_json::Value::as_str)
            == Some("base64")
}
