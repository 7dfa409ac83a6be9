//! Fuzz target: the Server-Sent Events parser (`SseParser::feed` / `finish`) on arbitrary
//! bytes cut at arbitrary chunk boundaries, with and without a small event-size limit.
//!
//! The first byte's low four bits say how many boundary bytes follow, its high four bits
//! pick the limit (0: the default 16 MiB, else 4 to 60 bytes); the rest is the stream.
//! Checks that the events (and `EventTooLarge` errors in their place), the last event id and
//! the retry time are the same whether the stream is fed in one piece, at the fuzzed
//! boundaries, or one byte at a time, and that nothing passes the default limit.
#![no_main]

use libfuzzer_sys::fuzz_target;
use opkit_adapters::openapi::{SseError, SseEvent, SseParser};

type Parsed = (Vec<Result<SseEvent, SseError>>, String, Option<u64>);

fn parse(payload: &[u8], cuts: &[usize], limit: Option<usize>) -> Parsed {
    let mut parser = limit.map_or_else(SseParser::new, SseParser::with_max_event_bytes);
    let mut events = Vec::new();
    let mut start = 0;
    for &cut in cuts {
        events.extend(parser.feed(&payload[start..cut]));
        start = cut;
    }
    events.extend(parser.feed(&payload[start..]));
    let state = (parser.last_event_id().to_owned(), parser.retry());
    parser.finish();
    assert!(parser.feed(b"").is_empty());
    (events, state.0, state.1)
}

fuzz_target!(|bytes: &[u8]| {
    let limit = match bytes.first().map(|first| usize::from(first >> 4)) {
        None | Some(0) => None,
        Some(step) => Some(step * 4),
    };
    let (cuts, payload) = opkit_fuzz::cuts_and_payload(bytes);
    let whole = parse(payload, &[], limit);
    if limit.is_none() {
        assert!(
            whole.0.iter().all(Result::is_ok),
            "a small stream passed the default limit"
        );
    }
    assert_eq!(
        parse(payload, &cuts, limit),
        whole,
        "chunk boundaries {cuts:?} changed the events"
    );
    let byte_by_byte: Vec<usize> = (0..payload.len()).collect();
    assert_eq!(
        parse(payload, &byte_by_byte, limit),
        whole,
        "byte-by-byte feeding changed the events"
    );
});
