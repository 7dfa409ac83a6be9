//! The `meta` half of an envelope: one variant per kind of source, tagged by `source`.

use super::content::McpContentBlock;
use super::operation_id::OperationId;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// Where a result came from. Serialized with a `source` tag: `"local"`, `"http"` or `"mcp"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "source", rename_all = "lowercase")]
pub enum ResponseMeta {
    /// Produced by an operation running in this or another opkit process.
    Local(LocalMeta),
    /// Produced by an HTTP API (OpenAPI import).
    Http(HttpMeta),
    /// Produced by an MCP tool (MCP import).
    Mcp(McpMeta),
}

impl ResponseMeta {
    /// The wire names of every source, in declaration order.
    pub const SOURCES: [&'static str; 3] = ["local", "http", "mcp"];

    /// The wire name of this meta's source.
    pub fn source(&self) -> &'static str {
        match self {
            Self::Local(_) => "local",
            Self::Http(_) => "http",
            Self::Mcp(_) => "mcp",
        }
    }
}

/// Meta of a locally produced result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LocalMeta {
    /// The id (`namespace.name`) of the operation that produced the data.
    ///
    /// An `#[operation]` fn's compiled-in id, or a copy shared with the registry's, so
    /// wrapping a result allocates no string (see [`OperationId`]): build one with
    /// `"math.add".into()`, compare it as `&*meta.operation_id` or with `==`.
    pub operation_id: OperationId,
    /// When the result was wrapped, in milliseconds since the Unix epoch.
    ///
    /// Read from the coarse wall clock ([`now_millis_coarse`](super::now_millis_coarse)):
    /// at most one kernel tick (1 to 4 ms on Linux) behind the precise time.
    pub timestamp: u64,
}

impl LocalMeta {
    /// Appends the JSON of `ResponseMeta::Local(self)` (`{"source":"local","operationId":..,
    /// "timestamp":..}`, what serde writes for it) to `out`, without serde's tagged-enum
    /// machinery: every reply an edge writes carries one.
    pub(crate) fn write_json(&self, out: &mut Vec<u8>) -> Result<(), serde_json::Error> {
        out.extend_from_slice(b"{\"source\":\"local\",\"operationId\":");
        write_json_str(out, &self.operation_id)?;
        out.extend_from_slice(b",\"timestamp\":");
        out.extend_from_slice(itoa::Buffer::new().format(self.timestamp).as_bytes());
        out.push(b'}');
        Ok(())
    }
}

/// `text` as a JSON string, appended to `out`: copied between quotes when nothing in it needs
/// an escape (an operation id's characters never do), else as serde writes it. serde escapes
/// exactly the quote, the backslash and the control characters below U+0020, so both write
/// the same bytes.
pub(crate) fn write_json_str(out: &mut Vec<u8>, text: &str) -> Result<(), serde_json::Error> {
    if needs_escape(text.as_bytes()) {
        return serde_json::to_writer(out, text);
    }
    out.reserve(text.len() + 2);
    out.push(b'"');
    out.extend_from_slice(text.as_bytes());
    out.push(b'"');
    Ok(())
}

/// `true` when `bytes` hold a quote, a backslash or a control character below U+0020, tested
/// eight bytes at a time ([`escape_marks`]; an id is tens of bytes: a byte-by-byte test cost
/// ~14 instructions a byte).
fn needs_escape(bytes: &[u8]) -> bool {
    let mut words = bytes.chunks_exact(8);
    words.any(|word| escape_marks(u64::from_le_bytes(word.try_into().expect("eight bytes"))) != 0)
        || words.remainder().iter().any(|&byte| is_escaped(byte))
}

/// `true` for a byte serde escapes in a JSON string: a quote, a backslash or a control
/// character (below 0x20).
pub(crate) const fn is_escaped(byte: u8) -> bool {
    byte == b'"' || byte == b'\\' || byte < 0x20
}

/// The bytes of `word` (little-endian: the first byte lowest) that [`is_escaped`] picks, as
/// their high bits; zero when none is. A byte after one of them may be marked too (a borrow
/// carries upward), so only the lowest mark is exact: the first such byte is
/// `trailing_zeros() / 8`. (The usual carry tricks: a byte is zero, or is below a bound.)
pub(crate) fn escape_marks(word: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let zero = |x: u64| x.wrapping_sub(ONES) & !x & HIGHS;
    let quote = zero(word ^ (ONES * u64::from(b'"')));
    let backslash = zero(word ^ (ONES * u64::from(b'\\')));
    let control = word.wrapping_sub(ONES * 0x20) & !word & HIGHS;
    quote | backslash | control
}

/// Meta of an HTTP response.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HttpMeta {
    /// The HTTP status code.
    pub status_code: u16,
    /// Response headers, names lower-cased, multiple values joined with `", "`.
    pub headers: BTreeMap<String, String>,
    /// The response's `Content-Type` (with its parameters), `""` when the response had none.
    pub content_type: String,
    /// For one event of a Server-Sent Events stream: its type, id and retry. Absent
    /// otherwise, and omitted from the wire when absent, so peers that do not know it read
    /// the envelope as before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sse: Option<SseEventMeta>,
}

/// The Server-Sent Events fields of one event, as an `EventSource` exposes them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SseEventMeta {
    /// The event type (`message` when the stream named none).
    pub event: String,
    /// The last event id when the event was dispatched (sticky across events; absent when
    /// the stream set none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The reconnection time the stream set last, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<u64>,
}

/// Meta of an MCP tool result. An operation served over MCP that returns an envelope with
/// this meta answers with its content blocks as they are (`McpMeta::text` makes a
/// plain-text one).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpMeta {
    /// `true` when the tool reported a failure (`isError: true`); such results are still envelopes.
    #[serde(default)]
    pub is_error: bool,
    /// Every content block of the result, in order.
    #[serde(default)]
    pub content: Vec<McpContentBlock>,
    /// The tool's structured result, any JSON value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// The result's `_meta` object.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Value>,
}

impl McpMeta {
    /// The meta of a plain-text result: one text block, not an error.
    ///
    /// ```
    /// use opkit::envelope::{McpContentBlock, McpMeta, mcp_envelope};
    /// let envelope = mcp_envelope("Hello", McpMeta::text("Hello"));
    /// assert_eq!(envelope.data, "Hello");
    /// let json = serde_json::to_value(&envelope.meta).unwrap();
    /// assert_eq!(json["content"], serde_json::json!([{"type": "text", "text": "Hello"}]));
    /// assert_eq!(json["isError"], false);
    /// ```
    pub fn text(text: impl Into<String>) -> Self {
        Self::blocks(vec![McpContentBlock::text(text)])
    }

    /// The meta of a result made of `content` blocks, not an error.
    pub fn blocks(content: Vec<McpContentBlock>) -> Self {
        Self {
            content,
            ..Self::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_string_needs_an_escape_where_serde_escapes_it() {
        // Every byte, at every position of a word and of the tail, among bytes that need none.
        for byte in 0..=u8::MAX {
            let serde_escapes = serde_json::to_string(&char::from(byte).to_string())
                .unwrap()
                .contains('\\');
            for at in 0..19 {
                let mut bytes = b"abcdefghijklmnopqr.".to_vec();
                bytes[at] = byte;
                assert_eq!(
                    needs_escape(&bytes),
                    byte < 0x80 && serde_escapes,
                    "byte {byte:#x} at {at}"
                );
            }
        }
        assert!(!needs_escape(b""));
        assert!(!needs_escape("ünï.cödé \u{7f}~".as_bytes()));
    }

    #[test]
    fn a_local_meta_is_written_as_serde_writes_it() {
        for (id, timestamp) in [
            ("math.add", 0),
            ("quote\"and\\back.slash\u{1}", u64::MAX),
            ("ünï.cödé", 1_764_000_000_000),
            ("del\u{7f}.tab\t", 7),
            ("", 1),
            ("a.\u{1f}", 2),
        ] {
            let meta = LocalMeta {
                operation_id: id.into(),
                timestamp,
            };
            let mut direct = Vec::new();
            meta.write_json(&mut direct).unwrap();
            let serde = serde_json::to_vec(&ResponseMeta::Local(meta)).unwrap();
            assert_eq!(
                String::from_utf8(direct).unwrap(),
                String::from_utf8(serde).unwrap()
            );
        }
    }
}
