//! [`TraceContext`]: a W3C Trace Context (`traceparent` + `tracestate`), parsed and validated.

use std::fmt;
use std::sync::Arc;

/// The longest `tracestate` kept (W3C: at most 32 members; 512 characters is what the
/// specification says a vendor may truncate to). A longer one is dropped, the
/// `traceparent` kept.
pub const MAX_TRACESTATE_LEN: usize = 512;

/// Why a `traceparent` value was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TraceContextError {
    /// The value is not `version-traceid-parentid-flags` with the W3C lengths.
    #[error("a traceparent must be `00-<32 hex>-<16 hex>-<2 hex>`, found {0:?}")]
    Malformed(String),
    /// The version is `ff`, which W3C forbids.
    #[error("the traceparent version `ff` is invalid")]
    InvalidVersion,
    /// The trace id or the parent id is all zeros.
    #[error("a traceparent's trace id and parent id must not be all zeros")]
    ZeroId,
}

/// The W3C Trace Context of one span: the trace it belongs to, its own span id, the span
/// it was made from, the trace flags and the vendors' `tracestate`.
///
/// It travels as the `traceparent` and `tracestate` HTTP headers, in MCP `_meta` and in
/// `call.requested`; [`TraceContext::parse`] reads the incoming value (the caller's span
/// becomes this context's [`span_id`](Self::span_id)), and [`child`](Self::child) makes the
/// context of a span started under it.
///
/// ```
/// use opkit::trace::TraceContext;
/// let incoming = TraceContext::parse(
///     "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
///     Some("congo=t61rcWkgMzE"),
/// ).unwrap();
/// assert_eq!(incoming.trace_id_hex(), "4bf92f3577b34da6a3ce929d0e0e4736");
/// let span = incoming.child();
/// assert_eq!(span.trace_id(), incoming.trace_id());
/// assert_eq!(span.parent_span_id(), Some(incoming.span_id()));
/// assert_eq!(span.tracestate(), Some("congo=t61rcWkgMzE"));
/// assert!(span.traceparent().starts_with("00-4bf92f3577b34da6a3ce929d0e0e4736-"));
/// // Bad input from outside is an error, never a panic.
/// assert!(TraceContext::parse("00-0000-zz-01", None).is_err());
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct TraceContext {
    trace_id: [u8; 16],
    span_id: [u8; 8],
    parent_span_id: Option<[u8; 8]>,
    flags: u8,
    tracestate: Option<Arc<str>>,
}

impl fmt::Debug for TraceContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TraceContext")
            .field("traceparent", &self.traceparent())
            .field("parent_span_id", &self.parent_span_id_hex())
            .field("tracestate", &self.tracestate)
            .finish()
    }
}

/// A fresh span id: random, never all zeros (W3C: an all-zero id is invalid).
///
/// Trace and span ids come from a per-thread generator (`fastrand`'s, seeded apart per
/// process and thread), not a cryptographic one: they must be unique and evenly spread
/// (samplers read their low bytes), not secret; a draw costs a few nanoseconds where a v4
/// UUID's costs tens, and every served call starts a trace.
fn random_span_id() -> [u8; 8] {
    fastrand::u64(1..).to_be_bytes()
}

/// A fresh trace id: random, never all zeros (see [`random_span_id`]).
fn random_trace_id() -> [u8; 16] {
    fastrand::u128(1..).to_be_bytes()
}

fn hex<const N: usize>(bytes: &[u8; N]) -> String {
    let mut out = String::with_capacity(N * 2);
    push_hex(&mut out, bytes);
    out
}

/// The two lowercase hex digits of `byte`.
fn hex_pair(byte: u8) -> [u8; 2] {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    [
        DIGITS[usize::from(byte >> 4)],
        DIGITS[usize::from(byte & 0xf)],
    ]
}

/// Writes `bytes` as lowercase hex into `out` (two digits per byte).
fn hex_into(out: &mut [u8], bytes: &[u8]) {
    for (pair, byte) in out.chunks_exact_mut(2).zip(bytes) {
        pair.copy_from_slice(&hex_pair(*byte));
    }
}

/// A `traceparent` header's 55 bytes, written without allocating
/// ([`TraceContext::traceparent_text`]).
pub(crate) struct Traceparent([u8; 55]);

impl Traceparent {
    /// The header's text (ASCII: digits, lowercase hex and dashes).
    pub(crate) fn as_str(&self) -> &str {
        std::str::from_utf8(&self.0).unwrap_or_default()
    }
}

/// Appends `bytes` as lowercase hex digits.
fn push_hex(out: &mut String, bytes: &[u8]) {
    for byte in bytes {
        let [high, low] = hex_pair(*byte);
        out.push(char::from(high));
        out.push(char::from(low));
    }
}

/// Lowercase hex only (W3C forbids uppercase in `traceparent`).
fn unhex<const N: usize>(text: &str) -> Option<[u8; N]> {
    let digits = text.as_bytes();
    if digits.len() != N * 2 {
        return None;
    }
    let mut out = [0; N];
    // Every digit looked up, one check at the end: a byte that is not a digit has high bits.
    let mut seen = 0;
    for (slot, pair) in out.iter_mut().zip(digits.chunks_exact(2)) {
        let (high, low) = (
            HEX_VALUE[usize::from(pair[0])],
            HEX_VALUE[usize::from(pair[1])],
        );
        seen |= high | low;
        *slot = (high << 4) | (low & 0xf);
    }
    (seen & 0xf0 == 0).then_some(out)
}

/// The value of each lowercase hex digit; `0xff` for every other byte. (A `traceparent`
/// comes with every call over the wire, and these are its 55 bytes.)
static HEX_VALUE: [u8; 256] = {
    let mut table = [0xff; 256];
    let mut digit = 0;
    while digit < 16 {
        table[b"0123456789abcdef"[digit] as usize] = digit as u8;
        digit += 1;
    }
    table
};

/// A `tracestate` worth passing on: printable ASCII within [`MAX_TRACESTATE_LEN`].
fn valid_tracestate(text: &str) -> Option<Arc<str>> {
    let text = text.trim();
    let ok = !text.is_empty()
        && text.len() <= MAX_TRACESTATE_LEN
        && text.bytes().all(|byte| (0x20..=0x7e).contains(&byte));
    ok.then(|| Arc::from(text))
}

impl TraceContext {
    /// A context that starts a new trace: fresh random trace and span ids, sampled.
    pub fn new_root() -> Self {
        Self {
            trace_id: random_trace_id(),
            span_id: random_span_id(),
            parent_span_id: None,
            flags: 0x01,
            tracestate: None,
        }
    }

    /// Reads an incoming `traceparent` (and `tracestate`) per W3C Trace Context: version
    /// `00` must be exactly `00-<32 hex>-<16 hex>-<2 hex>` in lowercase; a later version may
    /// append `-` and more, which is ignored; `ff` and all-zero ids are refused. An invalid
    /// `tracestate` is dropped, the `traceparent` kept.
    pub fn parse(traceparent: &str, tracestate: Option<&str>) -> Result<Self, TraceContextError> {
        let text = traceparent.trim();
        let malformed = || TraceContextError::Malformed(text.chars().take(80).collect());
        if text.len() < 55 || !text.is_char_boundary(55) {
            return Err(malformed());
        }
        let (head, rest) = text.split_at(55);
        let version: [u8; 1] = unhex(&head[0..2]).ok_or_else(malformed)?;
        if version[0] == 0xff {
            return Err(TraceContextError::InvalidVersion);
        }
        if (version[0] == 0 && !rest.is_empty()) || (!rest.is_empty() && !rest.starts_with('-')) {
            return Err(malformed());
        }
        let dashes = [2, 35, 52].iter().all(|&at| head.as_bytes()[at] == b'-');
        if !dashes {
            return Err(malformed());
        }
        let trace_id: [u8; 16] = unhex(&head[3..35]).ok_or_else(malformed)?;
        let span_id: [u8; 8] = unhex(&head[36..52]).ok_or_else(malformed)?;
        let flags: [u8; 1] = unhex(&head[53..55]).ok_or_else(malformed)?;
        if trace_id == [0; 16] || span_id == [0; 8] {
            return Err(TraceContextError::ZeroId);
        }
        Ok(Self {
            trace_id,
            span_id,
            parent_span_id: None,
            flags: flags[0],
            tracestate: tracestate.and_then(valid_tracestate),
        })
    }

    /// A context from its parts; `None` when an id is all zeros (W3C: invalid). An invalid
    /// `tracestate` is dropped.
    pub fn from_ids(
        trace_id: [u8; 16],
        span_id: [u8; 8],
        parent_span_id: Option<[u8; 8]>,
        flags: u8,
        tracestate: Option<&str>,
    ) -> Option<Self> {
        if trace_id == [0; 16] || span_id == [0; 8] || parent_span_id == Some([0; 8]) {
            return None;
        }
        Some(Self {
            trace_id,
            span_id,
            parent_span_id,
            flags,
            tracestate: tracestate.and_then(valid_tracestate),
        })
    }

    /// [`parse`](Self::parse) for values from outside (headers, `_meta`, the wire): absent
    /// or invalid gives `None` (logged at debug level), never an error.
    pub fn from_parts(traceparent: Option<&str>, tracestate: Option<&str>) -> Option<Self> {
        match Self::parse(traceparent?, tracestate) {
            Ok(context) => Some(context),
            Err(error) => {
                tracing::debug!(%error, "ignoring an invalid incoming trace context");
                None
            }
        }
    }

    /// The context of a span started under this one: the same trace, flags and
    /// `tracestate`, a fresh span id, and this span as its parent.
    #[must_use]
    pub fn child(&self) -> Self {
        Self {
            trace_id: self.trace_id,
            span_id: random_span_id(),
            parent_span_id: Some(self.span_id),
            flags: self.flags,
            tracestate: self.tracestate.clone(),
        }
    }

    /// The `traceparent` value naming this span: `00-<trace id>-<span id>-<flags>`.
    pub fn traceparent(&self) -> String {
        self.traceparent_text().as_str().to_owned()
    }

    /// The `traceparent` header written in place, for encoders that need no `String`.
    pub(crate) fn traceparent_text(&self) -> Traceparent {
        let mut out = *b"00-00000000000000000000000000000000-0000000000000000-00";
        hex_into(&mut out[3..35], &self.trace_id);
        hex_into(&mut out[36..52], &self.span_id);
        hex_into(&mut out[53..55], &[self.flags]);
        Traceparent(out)
    }

    /// The vendors' `tracestate`, passed on unchanged.
    pub fn tracestate(&self) -> Option<&str> {
        self.tracestate.as_deref()
    }

    /// The 16-byte trace id.
    pub fn trace_id(&self) -> [u8; 16] {
        self.trace_id
    }

    /// The 8-byte id of this span.
    pub fn span_id(&self) -> [u8; 8] {
        self.span_id
    }

    /// The id of the span this one was started under (`None` for a root, or for a context
    /// read from outside, whose parent lives in another process).
    pub fn parent_span_id(&self) -> Option<[u8; 8]> {
        self.parent_span_id
    }

    /// The trace flags (bit 0: sampled).
    pub fn flags(&self) -> u8 {
        self.flags
    }

    /// `true` when the caller asked for the trace to be recorded (flag `01`).
    pub fn is_sampled(&self) -> bool {
        self.flags & 0x01 != 0
    }

    /// The trace id as 32 lowercase hex digits.
    pub fn trace_id_hex(&self) -> String {
        hex(&self.trace_id)
    }

    /// The span id as 16 lowercase hex digits.
    pub fn span_id_hex(&self) -> String {
        hex(&self.span_id)
    }

    /// The parent span id as 16 lowercase hex digits, when there is one.
    pub fn parent_span_id_hex(&self) -> Option<String> {
        self.parent_span_id.as_ref().map(hex)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const VALID: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn hex_digits_are_lowercase_hex_only() {
        for byte in 0..=255u8 {
            let text = [b'0', byte];
            let text = std::str::from_utf8(&text);
            let expected = byte.is_ascii_digit() || (b'a'..=b'f').contains(&byte);
            let parsed = text.ok().and_then(unhex::<1>);
            assert_eq!(parsed.is_some(), expected, "{byte}");
            if let Some([value]) = parsed {
                assert_eq!(Some(u32::from(value)), char::from(byte).to_digit(16));
            }
        }
        assert_eq!(unhex::<2>("ff00"), Some([0xff, 0]));
        assert_eq!(unhex::<2>("ff0"), None);
    }

    #[test]
    fn round_trips_a_valid_traceparent() {
        let context = TraceContext::parse(VALID, None).unwrap();
        assert_eq!(context.traceparent(), VALID);
        assert!(context.is_sampled());
        assert_eq!(context.parent_span_id(), None);
    }

    #[test]
    fn refuses_what_w3c_refuses() {
        let bad = [
            "",
            "00",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "0g-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e47é-00f067aa0ba902b7-01",
        ];
        for value in bad {
            assert!(TraceContext::parse(value, None).is_err(), "{value:?}");
            assert!(TraceContext::from_parts(Some(value), None).is_none());
        }
    }

    #[test]
    fn a_later_version_may_append_fields() {
        let later = "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-ever";
        let context = TraceContext::parse(later, None).unwrap();
        // We send what we understand: version 00.
        assert_eq!(context.traceparent(), VALID);
        assert!(
            TraceContext::parse(
                "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x",
                None
            )
            .is_err()
        );
    }

    #[test]
    fn an_invalid_tracestate_is_dropped_and_the_traceparent_kept() {
        let long = "a=".to_owned() + &"b".repeat(MAX_TRACESTATE_LEN);
        for state in ["", "a=\u{7}", long.as_str()] {
            let context = TraceContext::parse(VALID, Some(state)).unwrap();
            assert_eq!(context.tracestate(), None);
        }
    }

    #[test]
    fn children_share_the_trace_and_link_to_their_parent() {
        let root = TraceContext::new_root();
        assert_eq!(root.parent_span_id(), None);
        let child = root.child();
        assert_eq!(child.trace_id(), root.trace_id());
        assert_ne!(child.span_id(), root.span_id());
        assert_eq!(child.parent_span_id(), Some(root.span_id()));
        let again = TraceContext::parse(&child.traceparent(), None).unwrap();
        assert_eq!(again.span_id(), child.span_id());
    }
}
