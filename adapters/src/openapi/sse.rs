//! Server-Sent Events: a WHATWG-conformant parser and the subscription stream built on it.
//!
//! # Why an own parser
//!
//! The crates were measured against the WHATWG rules (the HTML standard's "Interpreting an event stream"): `eventsource-stream`
//! 0.2.3 panics on a leading BOM and accepts signed `retry` values; `sse-stream` 0.2.6
//! errors on colonless lines, unknown and duplicate fields; `sse-stream` 0.3.0 gets the
//! line rules right but returns raw blocks (metadata-only blocks included, `id` not sticky,
//! no `message` default) and, on invalid UTF-8, yields one error and **ends the stream** —
//! where the specification decodes with U+FFFD replacement and this adapter must skip a bad
//! frame and keep going. The dispatch rules would have to be layered on top anyway, so this
//! module implements §9.2.5–9.2.6 directly (about 150 lines), with a unit test per rule.
//!
//! # Rules implemented
//!
//! UTF-8 decoding with replacement; one leading BOM stripped; lines end at CRLF, LF or a
//! lone CR (a CRLF split across chunks counts once); empty line dispatches; `:` starts a
//! comment; the field is the text before the first `:`, and exactly one leading space of
//! the value is removed; a line without `:` is a field with an empty value; `event` sets
//! the type; `data` appends the value and LF; `id` sets the last event id unless it
//! contains NUL (an empty `id` resets it; it is sticky across events); `retry` takes ASCII
//! digits only; other fields are ignored; dispatch does nothing when the data buffer is
//! empty, else removes one trailing LF, defaults the type to `message`; data and type are
//! reset after dispatch, the id is not; at end of stream an unterminated event is dropped.
//!
//! # Size limit
//!
//! Memory is bounded by a limit on one event: its data buffer (each `data` value plus its LF)
//! and the line being read may hold at most [`SseParser::max_event_bytes`] bytes together
//! ([`DEFAULT_MAX_SSE_EVENT_BYTES`], 16 MiB, unless set). The byte that would cross the limit
//! makes [`SseParser::feed`] report [`SseError::EventTooLarge`] in the event's place; the rest
//! of that event is skipped without being stored, and parsing goes on with the next one. The
//! subscription stream of the importer ends with an `EXECUTION_ERROR` naming the limit and
//! closes the connection (see [`OpenApiOptions::max_sse_event_bytes`](super::OpenApiOptions)).
//!
//! The subscription stream built on this parser (envelopes, resumption) is in
//! [`super::sse_stream`].

use super::media::MediaType;
use serde_json::Value;

/// The default limit on one SSE event (its data plus the line being read): 16 MiB.
pub const DEFAULT_MAX_SSE_EVENT_BYTES: usize = 16 * 1024 * 1024;

/// Why an SSE stream could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SseError {
    /// An event grew past the parser's limit; the rest of it is skipped.
    #[error("an SSE event (or one of its lines) is larger than the limit of {limit} bytes")]
    EventTooLarge {
        /// The limit, in bytes ([`SseParser::max_event_bytes`]).
        limit: usize,
    },
}

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The event type (`message` when the stream named none).
    pub event: String,
    /// The data lines joined with LF.
    pub data: String,
    /// The last event id at dispatch (sticky across events).
    pub id: String,
    /// The reconnection time the stream last set, in milliseconds.
    pub retry: Option<u64>,
}

/// An incremental parser: feed it chunks as they arrive.
///
/// ```
/// use opkit_adapters::openapi::{SseError, SseParser};
/// let mut parser = SseParser::new();
/// let mut events = parser.feed(b"\xEF\xBB\xBFdata: {\"n\":1}\r\n\r\nid: 7\ndata: a\ndata");
/// events.extend(parser.feed(b"\n\n: comment\ndata: never dispatched"));
/// parser.finish();
/// let events: Vec<_> = events.into_iter().collect::<Result<_, _>>().unwrap();
/// assert_eq!(events.len(), 2);
/// assert_eq!(events[0].data, "{\"n\":1}");
/// assert_eq!(events[1].data, "a\n");
/// assert_eq!(events[1].id, "7");
/// assert_eq!(events[1].event, "message");
///
/// // An event larger than the limit is an error in its place; parsing goes on after it.
/// let mut small = SseParser::with_max_event_bytes(8);
/// let results = small.feed(b"data: 12345678\n\ndata: ok\n\n");
/// assert_eq!(results[0], Err(SseError::EventTooLarge { limit: 8 }));
/// assert_eq!(results[1].as_ref().unwrap().data, "ok");
/// ```
#[derive(Debug)]
pub struct SseParser {
    line: Vec<u8>,
    skip_lf: bool,
    first_line: bool,
    started: bool,
    data: String,
    event_type: String,
    last_id: String,
    retry: Option<u64>,
    /// The current event passed the limit (already reported): skip it to its end.
    oversized: bool,
    max_event_bytes: usize,
}

impl Default for SseParser {
    fn default() -> Self {
        Self::new()
    }
}

impl SseParser {
    /// A parser at the start of a stream, with the default event limit
    /// ([`DEFAULT_MAX_SSE_EVENT_BYTES`]).
    pub fn new() -> Self {
        Self::with_max_event_bytes(DEFAULT_MAX_SSE_EVENT_BYTES)
    }

    /// A parser whose events (data plus the line being read) may hold at most
    /// `max_event_bytes` bytes.
    pub fn with_max_event_bytes(max_event_bytes: usize) -> Self {
        Self {
            line: Vec::new(),
            skip_lf: false,
            first_line: true,
            started: false,
            data: String::new(),
            event_type: String::new(),
            last_id: String::new(),
            retry: None,
            oversized: false,
            max_event_bytes,
        }
    }

    /// The limit on one event, in bytes.
    pub fn max_event_bytes(&self) -> usize {
        self.max_event_bytes
    }

    /// The reconnection time the stream set last, in milliseconds.
    pub fn retry(&self) -> Option<u64> {
        self.retry
    }

    /// The last event id (what a reconnect would send as `Last-Event-ID`).
    pub fn last_event_id(&self) -> &str {
        &self.last_id
    }

    /// A parser for the stream of a reconnection: a new stream (its BOM and lines start
    /// over) that keeps the last event id, the retry delay and the limit.
    pub fn reconnected(&self) -> Self {
        let mut parser = Self::with_max_event_bytes(self.max_event_bytes);
        parser.last_id = self.last_id.clone();
        parser.retry = self.retry;
        parser
    }

    /// Parses a chunk; returns the events it completes, in order, with an
    /// [`SseError::EventTooLarge`] in the place of an event that passed the limit (reported
    /// once, when the limit is crossed).
    pub fn feed(&mut self, chunk: &[u8]) -> Vec<Result<SseEvent, SseError>> {
        if !self.started {
            self.started = true;
            self.first_line = true;
        }
        let mut events = Vec::new();
        for &byte in chunk {
            match byte {
                b'\n' if self.skip_lf => self.skip_lf = false,
                b'\n' => self.end_line(&mut events),
                b'\r' => {
                    self.end_line(&mut events);
                    self.skip_lf = true;
                }
                other => {
                    self.skip_lf = false;
                    if self.oversized {
                        // Skipping: remember only that the line is not empty.
                        if self.line.is_empty() {
                            self.line.push(other);
                        }
                    } else if self.line.len() + self.data.len() < self.max_event_bytes {
                        self.line.push(other);
                    } else {
                        self.line = vec![other];
                        self.overflow(&mut events);
                    }
                }
            }
        }
        events
    }

    /// The current event passed the limit: report it, free what it holds, skip the rest.
    fn overflow(&mut self, events: &mut Vec<Result<SseEvent, SseError>>) {
        self.oversized = true;
        self.data = String::new();
        self.event_type.clear();
        events.push(Err(SseError::EventTooLarge {
            limit: self.max_event_bytes,
        }));
    }

    /// Ends the stream: an event without its final empty line is discarded.
    pub fn finish(&mut self) {
        self.line.clear();
        self.data.clear();
        self.event_type.clear();
        self.oversized = false;
    }

    fn end_line(&mut self, events: &mut Vec<Result<SseEvent, SseError>>) {
        let raw = std::mem::take(&mut self.line);
        let mut line = String::from_utf8(raw)
            .unwrap_or_else(|error| String::from_utf8_lossy(error.as_bytes()).into_owned());
        if std::mem::take(&mut self.first_line)
            && let Some(rest) = line.strip_prefix('\u{feff}')
        {
            line = rest.to_owned();
        }
        if line.is_empty() {
            if let Some(event) = self.dispatch() {
                events.push(Ok(event));
            }
            return;
        }
        if line.starts_with(':') || self.oversized {
            return;
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line.as_str(), ""),
        };
        match field {
            "event" => self.event_type = value.to_owned(),
            "data" => {
                // Invalid UTF-8 grows when replaced, so the line's check is not enough.
                if self.data.len() + value.len() < self.max_event_bytes {
                    self.data.push_str(value);
                    self.data.push('\n');
                } else {
                    self.overflow(events);
                }
            }
            "id" if !value.contains('\0') => self.last_id = value.to_owned(),
            "retry" if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) => {
                if let Ok(ms) = value.parse() {
                    self.retry = Some(ms);
                }
            }
            _ => {}
        }
    }

    fn dispatch(&mut self) -> Option<SseEvent> {
        let mut data = std::mem::take(&mut self.data);
        let event_type = std::mem::take(&mut self.event_type);
        if std::mem::take(&mut self.oversized) {
            return None;
        }
        if data.is_empty() {
            return None;
        }
        data.pop();
        Some(SseEvent {
            event: if event_type.is_empty() {
                "message".to_owned()
            } else {
                event_type
            },
            data,
            id: self.last_id.clone(),
            retry: self.retry,
        })
    }
}

/// How an event's data becomes the envelope's data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EventData {
    /// The item schema says JSON: parse it; a frame that does not parse is skipped.
    Json,
    /// The item schema says text: keep the string.
    Text,
    /// Unknown: JSON when it parses, else the string.
    Sniff,
}

/// Turns an event into data, `None` (with a warning) for a malformed frame.
pub(crate) fn event_data(event: &SseEvent, mode: EventData, label: &str) -> Option<Value> {
    match mode {
        EventData::Text => Some(Value::String(event.data.clone())),
        EventData::Sniff => Some(
            serde_json::from_str(&event.data).unwrap_or_else(|_| Value::String(event.data.clone())),
        ),
        EventData::Json => match serde_json::from_str(&event.data) {
            Ok(value) => Some(value),
            Err(error) => {
                tracing::warn!(
                    operation = label,
                    event = %event.event,
                    %error,
                    "skipping a malformed SSE frame: its data is not the JSON the item schema declares"
                );
                None
            }
        },
    }
}

/// `true` when a `Content-Type` is `text/event-stream` (parameters and case ignored).
pub(crate) fn is_event_stream(content_type: &str) -> bool {
    MediaType::parse(content_type).is_event_stream()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_all(chunks: &[&[u8]]) -> Vec<SseEvent> {
        let mut parser = SseParser::new();
        let mut events = Vec::new();
        for chunk in chunks {
            events.extend(parser.feed(chunk));
        }
        parser.finish();
        events
            .into_iter()
            .collect::<Result<_, _>>()
            .expect("no event is too large")
    }

    fn data(events: &[SseEvent]) -> Vec<&str> {
        events.iter().map(|event| event.data.as_str()).collect()
    }

    #[test]
    fn line_endings_lf_cr_crlf_and_split_crlf() {
        assert_eq!(
            data(&parse_all(&[b"data: a\n\ndata: b\r\rdata: c\r\n\r\n"])),
            ["a", "b", "c"]
        );
        // A CRLF split across chunks is one line ending, not two (no extra dispatch).
        let events = parse_all(&[b"data: a\r", b"\ndata: b\r", b"\n\r", b"\n"]);
        assert_eq!(data(&events), ["a\nb"]);
        // A lone CR at the very end still ends the line.
        assert_eq!(data(&parse_all(&[b"data: x\n\r"])), ["x"]);
        // Chunks split anywhere, byte by byte.
        let text = b"event: e\r\ndata: 1\r\ndata: 2\r\n\r\n";
        let chunks: Vec<&[u8]> = text.chunks(1).collect();
        let events = parse_all(&chunks);
        assert_eq!(data(&events), ["1\n2"]);
        assert_eq!(events[0].event, "e");
    }

    #[test]
    fn bom_is_stripped_once_even_split_across_chunks() {
        assert_eq!(data(&parse_all(&[b"\xEF\xBB", b"\xBFdata: a\n\n"])), ["a"]);
        // A second BOM is not stripped: the line is a field named "\u{feff}data".
        assert!(parse_all(&[b"\xEF\xBB\xBF\xEF\xBB\xBFdata: a\n\n"]).is_empty());
    }

    #[test]
    fn comments_fields_and_spaces() {
        let events =
            parse_all(&[b": keep-alive\n:\ndata:no space\ndata:  two spaces\nunknown: x\n\n"]);
        assert_eq!(data(&events), ["no space\n two spaces"]);
        // A line without a colon is a field with an empty value: `data` appends an LF.
        // The spec's example: `data\n\ndata\ndata\n\ndata:` fires "", then "\n", and drops the last.
        let events = parse_all(&[b"data\n\ndata\ndata\n\ndata:"]);
        assert_eq!(data(&events), ["", "\n"]);
        // Field names are case-sensitive.
        assert!(parse_all(&[b"Data: x\n\n"]).is_empty());
    }

    #[test]
    fn dispatch_rules() {
        // No data: nothing dispatched, and the type does not leak into the next event.
        let events = parse_all(&[b"event: lonely\n\ndata: x\n\n"]);
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].event, "message");
        // One trailing LF removed, inner ones kept.
        assert_eq!(data(&parse_all(&[b"data: a\ndata:\n\n"])), ["a\n"]);
        // Unterminated final event is not dispatched.
        assert_eq!(data(&parse_all(&[b"data: a\n\ndata: b\n"])), ["a"]);
    }

    #[test]
    fn ids_are_sticky_reset_by_empty_and_ignored_with_nul() {
        let events = parse_all(&[b"id: 1\ndata: a\n\ndata: b\n\nid\ndata: c\n\nid: 2\0x\ndata: d\n\nid: 3\n\ndata: e\n\n"]);
        let ids: Vec<&str> = events.iter().map(|event| event.id.as_str()).collect();
        assert_eq!(data(&events), ["a", "b", "c", "d", "e"]);
        // `id` with NUL is ignored; an id-only block sets the id without dispatching.
        assert_eq!(ids, ["1", "1", "", "", "3"]);
    }

    #[test]
    fn retry_takes_ascii_digits_only() {
        let mut parser = SseParser::new();
        parser.feed(b"retry: 3000\n");
        assert_eq!(parser.retry(), Some(3000));
        for bad in [
            &b"retry: +5\n"[..],
            b"retry: -1\n",
            b"retry: 1x\n",
            b"retry: \n",
            b"retry:  5\n",
        ] {
            parser.feed(bad);
            assert_eq!(
                parser.retry(),
                Some(3000),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
        let events = parser.feed(b"retry: 10\ndata: x\n\n");
        assert_eq!(events[0].as_ref().unwrap().retry, Some(10));
    }

    /// Every result of feeding `chunks`: `Ok(data)` per event, `Err(limit)` per event too large.
    fn results(parser: &mut SseParser, chunks: &[&[u8]]) -> Vec<Result<String, usize>> {
        let mut results = Vec::new();
        for chunk in chunks {
            results.extend(parser.feed(chunk).into_iter().map(|result| match result {
                Ok(event) => Ok(event.data),
                Err(SseError::EventTooLarge { limit }) => Err(limit),
            }));
        }
        results
    }

    #[test]
    fn events_past_the_limit_are_errors_in_their_place() {
        let mut parser = SseParser::with_max_event_bytes(10);
        // "data: 1234" is 10 bytes: at the limit. In the second event its data (5 bytes)
        // plus the 6-byte line "data: " would be 11: over.
        let got = results(
            &mut parser,
            &[b"data: 1234\n\ndata: 1234\ndata: \n\ndata: ok\n\n"],
        );
        assert_eq!(got, [Ok("1234".into()), Err(10), Ok("ok".into())]);
        // Reported once, as soon as the limit is crossed, whatever follows in the event.
        let got = results(&mut parser, &[b"data: 0123456789", b"abcdef\ndata: more\n"]);
        assert_eq!(got, [Err(10)]);
        let got = results(&mut parser, &[b"id: 5\n\ndata: next\n\n"]);
        assert_eq!(got, [Ok("next".into())]);
        assert_eq!(
            parser.last_event_id(),
            "",
            "the skipped event's lines are not read"
        );
        // A long comment counts too: it is a line held in memory.
        let got = results(&mut parser, &[b": 0123456789\n\ndata: x\n\n"]);
        assert_eq!(got, [Err(10), Ok("x".into())]);
        // Invalid UTF-8 grows when replaced (1 byte -> 3): the data check catches it.
        let mut parser = SseParser::with_max_event_bytes(12);
        let got = results(&mut parser, &[b"data: \xFF\xFF\xFF\xFF\n\ndata: a\n\n"]);
        assert_eq!(got, [Err(12), Ok("a".into())]);
        // The split of the chunks does not matter.
        let text = b"data: 1234\n\ndata: 0123456789\n\ndata: ok\n\n";
        let chunks: Vec<&[u8]> = text.chunks(1).collect();
        assert_eq!(
            results(&mut SseParser::with_max_event_bytes(10), &chunks),
            results(&mut SseParser::with_max_event_bytes(10), &[text])
        );
    }

    #[test]
    fn the_default_limit_is_16_mib() {
        assert_eq!(DEFAULT_MAX_SSE_EVENT_BYTES, 16 * 1024 * 1024);
        let mut parser = SseParser::new();
        assert_eq!(parser.max_event_bytes(), DEFAULT_MAX_SSE_EVENT_BYTES);
        // A line of exactly the limit is accepted; one byte more is an error.
        let mut line = b"data: ".to_vec();
        line.resize(DEFAULT_MAX_SSE_EVENT_BYTES, b'a');
        line.extend_from_slice(b"\n\n");
        let events = parser.feed(&line);
        assert_eq!(events.len(), 1);
        assert_eq!(
            events[0].as_ref().map(|event| event.data.len()),
            Ok(DEFAULT_MAX_SSE_EVENT_BYTES - 6)
        );
        drop(events);
        line.insert(6, b'a');
        let events = parser.feed(&line);
        assert_eq!(
            events,
            [Err(SseError::EventTooLarge {
                limit: DEFAULT_MAX_SSE_EVENT_BYTES
            })]
        );
    }

    #[test]
    fn a_reconnected_parser_keeps_the_id_and_retry_only() {
        let mut parser = SseParser::with_max_event_bytes(100);
        parser.feed(b"retry: 40\nid: 9\ndata: a\n\nevent: e\ndata: partial");
        let mut next = parser.reconnected();
        assert_eq!(next.last_event_id(), "9");
        assert_eq!(next.retry(), Some(40));
        assert_eq!(next.max_event_bytes(), 100);
        let events = next.feed(b"\xEF\xBB\xBFdata: b\n\n");
        let event = events[0].as_ref().unwrap();
        assert_eq!(
            (event.event.as_str(), event.data.as_str(), event.id.as_str()),
            ("message", "b", "9")
        );
    }

    #[test]
    fn invalid_utf8_is_replaced_not_fatal() {
        let events = parse_all(&[b"data: a\xFFb\n\ndata: next\n\n"]);
        assert_eq!(data(&events), ["a\u{fffd}b", "next"]);
    }

    #[test]
    fn event_data_modes() {
        let event = |data: &str| SseEvent {
            event: "message".into(),
            data: data.into(),
            id: String::new(),
            retry: None,
        };
        assert_eq!(
            event_data(&event("{\"n\":1}"), EventData::Json, "t"),
            Some(serde_json::json!({"n": 1}))
        );
        assert_eq!(event_data(&event("nope"), EventData::Json, "t"), None);
        assert_eq!(
            event_data(&event("nope"), EventData::Sniff, "t"),
            Some(serde_json::json!("nope"))
        );
        assert_eq!(
            event_data(&event("42"), EventData::Sniff, "t"),
            Some(serde_json::json!(42))
        );
        assert_eq!(
            event_data(&event("42"), EventData::Text, "t"),
            Some(serde_json::json!("42"))
        );
        assert!(is_event_stream("text/event-stream; charset=utf-8"));
        assert!(!is_event_stream("application/json"));
    }
}
