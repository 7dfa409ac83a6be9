//! Property test: the SSE parser yields the same events whatever the chunk boundaries
//! (including boundaries inside CRLF, inside multi-byte characters and inside the BOM), and
//! reports events past a small size limit in the same places.
#![cfg(feature = "openapi")]

use opkit_adapters::openapi::{SseError, SseEvent, SseParser};
use proptest::prelude::*;

/// One piece of an event stream: field lines, comments, blank lines, in any line ending.
fn arb_piece() -> impl Strategy<Value = Vec<u8>> {
    let ending = prop_oneof![Just("\n"), Just("\r"), Just("\r\n")];
    let line = prop_oneof![
        "[a-z {}\":0-9é€]{0,12}".prop_map(|text| format!("data: {text}")),
        "[a-z{}\":]{0,8}".prop_map(|text| format!("data:{text}")),
        Just("data".to_owned()),
        "[a-z]{0,6}".prop_map(|name| format!("event: {name}")),
        "[a-z0-9]{0,4}".prop_map(|id| format!("id: {id}")),
        Just("id: a\u{0}b".to_owned()),
        "[0-9+x]{0,4}".prop_map(|retry| format!("retry: {retry}")),
        "[ -~]{0,10}".prop_map(|text| format!(":{text}")),
        "[a-z]{1,5}".prop_map(|field| format!("{field}: ignored")),
        Just(String::new()),
    ];
    (line, ending).prop_map(|(line, ending)| format!("{line}{ending}").into_bytes())
}

fn arb_stream() -> impl Strategy<Value = Vec<u8>> {
    (
        any::<bool>(),
        prop::collection::vec(arb_piece(), 0..24),
        prop::collection::vec(any::<u8>(), 0..4),
    )
        .prop_map(|(bom, pieces, noise)| {
            let mut bytes = if bom {
                vec![0xEF, 0xBB, 0xBF]
            } else {
                Vec::new()
            };
            for piece in pieces {
                bytes.extend(piece);
            }
            bytes.extend(noise);
            bytes
        })
}

type Parsed = (Vec<Result<SseEvent, SseError>>, String, Option<u64>);

fn parse_in_chunks(bytes: &[u8], cuts: &[usize], limit: Option<usize>) -> Parsed {
    let mut parser = limit.map_or_else(SseParser::new, SseParser::with_max_event_bytes);
    let mut events = Vec::new();
    let mut start = 0;
    let mut cuts: Vec<usize> = cuts.iter().map(|cut| cut % (bytes.len() + 1)).collect();
    cuts.sort_unstable();
    for cut in cuts {
        events.extend(parser.feed(&bytes[start..cut]));
        start = cut;
    }
    events.extend(parser.feed(&bytes[start..]));
    let id = parser.last_event_id().to_owned();
    let retry = parser.retry();
    parser.finish();
    (events, id, retry)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    #[test]
    fn the_same_events_whatever_the_chunk_boundaries(
        bytes in arb_stream(),
        cuts in prop::collection::vec(any::<usize>(), 0..12),
        limit in prop::option::of(8usize..40),
    ) {
        let whole = parse_in_chunks(&bytes, &[], limit);
        if limit.is_none() {
            prop_assert!(whole.0.iter().all(Result::is_ok));
        }
        let chunked = parse_in_chunks(&bytes, &cuts, limit);
        prop_assert_eq!(&chunked, &whole);
        let byte_by_byte: Vec<usize> = (0..=bytes.len()).collect();
        prop_assert_eq!(parse_in_chunks(&bytes, &byte_by_byte, limit), whole);
    }
}
