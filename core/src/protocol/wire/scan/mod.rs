//! The two events every call carries, read by one strict pass over their bytes.
//!
//! A `call.requested` and a `call.responded` as opkit writes them are small objects of a few
//! known keys around one value (the input, or the envelope's data). Reading them through
//! serde's derived structs costs thousands of instructions per event (field names matched as
//! strings, every nested value walked by a visitor to refuse repeated keys, then walked again
//! to build it); the hub checks each request so, the handler decodes it, the caller decodes
//! each reply. [`request`] and [`responded`] read such an event in one pass instead and return
//! where its parts are; the decoders build from those parts only what they hand on.
//!
//! The scanner is a **subset** reader: it accepts only JSON it can judge exactly as serde_json
//! does, and declines (`None`) everything else, which the caller then reads through the serde
//! path, as before; so declining is always safe, and only accepting must agree with serde.
//! Accepted: the JSON grammar with JSON's four whitespace bytes, strings with no escape and no
//! control character (a backslash declines), numbers without an exponent and with at most 18
//! integer digits (so none overflows), nesting at most 64 deep (`MAX_DEPTH`), no repeated key in
//! any object (compared by bytes, which for unescaped keys is comparing the keys), and at the
//! top level only the fields the fast decoder reads on that event with their plain types
//! (`null` for an optional field declines, as does `identity`). Valid UTF-8 is checked once, up
//! front. The property tests below hold the scanner to the serde path on generated events.
//!
//! `text.rs` is the reader of that subset of JSON ([`Scan`]); this module reads the two events
//! with it.

mod text;

pub(super) use text::Scan;

/// The parts of a scanned `call.requested`: strings borrowed from the event's text, the input
/// as the caller of [`request`] reads it (its text, or a built value).
pub(super) struct Request<'a, I> {
    pub(super) request_id: &'a str,
    pub(super) operation_id: &'a str,
    pub(super) input: I,
    pub(super) parent_request_id: Option<&'a str>,
    pub(super) identity_token: Option<&'a str>,
    pub(super) deadline: Option<u64>,
    pub(super) subscription: Option<bool>,
    pub(super) traceparent: Option<&'a str>,
    pub(super) tracestate: Option<&'a str>,
}

/// The parts of a scanned `call.responded`, the envelope's `data` and `meta` as the caller of
/// [`responded`] reads them.
pub(super) struct Responded<'a, D, M> {
    pub(super) request_id: &'a str,
    pub(super) data: D,
    pub(super) meta: M,
    pub(super) signature: Option<&'a str>,
}

/// The `call.requested` in `bytes`, its input read by `input` (at depth 1), or `None` when
/// the scanner declines (see the module docs): another event, or anything it does not judge
/// itself.
pub(super) fn request<'a, I>(
    bytes: &'a [u8],
    mut input: impl FnMut(&mut Scan<'a>) -> Option<I>,
) -> Option<Request<'a, I>> {
    let mut scan = Scan::new(bytes)?;
    let mut kind = None;
    let mut request_id = None;
    let mut operation_id = None;
    let mut read_input = None;
    let mut parent_request_id = None;
    let mut identity_token = None;
    let mut deadline = None;
    let mut subscription = None;
    let mut traceparent = None;
    let mut tracestate = None;
    scan.object(|scan, key| match key {
        "type" => once(&mut kind, || scan.string()),
        "requestId" => once(&mut request_id, || scan.string()),
        "operationId" => once(&mut operation_id, || scan.string()),
        "input" => once(&mut read_input, || input(scan)),
        "parentRequestId" => once(&mut parent_request_id, || scan.string()),
        "identityToken" => once(&mut identity_token, || scan.string()),
        "deadline" => once(&mut deadline, || scan.unsigned()),
        "subscription" => once(&mut subscription, || scan.boolean()),
        "traceparent" => once(&mut traceparent, || scan.string()),
        "tracestate" => once(&mut tracestate, || scan.string()),
        _ => None,
    })?;
    scan.end()?;
    (kind? == super::REQUESTED).then_some(Request {
        request_id: request_id?,
        operation_id: operation_id?,
        input: read_input?,
        parent_request_id,
        identity_token,
        deadline,
        subscription,
        traceparent,
        tracestate,
    })
}

/// The `call.responded` in `bytes`, its envelope's `data` read by `data` and its `meta` (an
/// object) by `meta`, both at depth 2; `None` when the scanner declines.
pub(super) fn responded<'a, D, M>(
    bytes: &'a [u8],
    mut data: impl FnMut(&mut Scan<'a>) -> Option<D>,
    mut meta: impl FnMut(&mut Scan<'a>) -> Option<M>,
) -> Option<Responded<'a, D, M>> {
    let mut scan = Scan::new(bytes)?;
    let mut kind = None;
    let mut request_id = None;
    let mut output = None;
    let mut signature = None;
    scan.object(|scan, key| match key {
        "type" => once(&mut kind, || scan.string()),
        "requestId" => once(&mut request_id, || scan.string()),
        "output" => once(&mut output, || {
            let (mut read_data, mut read_meta) = (None, None);
            scan.object(|scan, key| match key {
                "data" => once(&mut read_data, || data(scan)),
                "meta" => once(&mut read_meta, || {
                    (scan.next_byte()? == b'{').then_some(())?;
                    meta(scan)
                }),
                _ => None,
            })?;
            Some((read_data?, read_meta?))
        }),
        "signature" => once(&mut signature, || scan.string()),
        _ => None,
    })?;
    scan.end()?;
    let (data, meta) = output?;
    (kind? == super::RESPONDED).then_some(Responded {
        request_id: request_id?,
        data,
        meta,
        signature,
    })
}

/// Reads a field into its empty `slot`; a field already read declines (a repeated key), before
/// its value is read again.
pub(super) fn once<T>(slot: &mut Option<T>, read: impl FnOnce() -> Option<T>) -> Option<()> {
    if slot.is_some() {
        return None;
    }
    *slot = Some(read()?);
    Some(())
}

#[cfg(test)]
mod tests {
    use super::super::check::{check_request, checked_by_serde};
    use super::super::fast_decode::decode_fast;
    use super::super::{CallEvent, json};
    use super::*;
    use proptest::prelude::*;
    use proptest::sample::select;

    /// JSON-like text: valid values of every kind, and near misses (invalid numbers, literals,
    /// whitespace and strings, trailing commas, repeated and escaped keys) at any depth.
    fn json_text() -> impl Strategy<Value = String> {
        let leaf = select(vec![
            "0",
            "-0",
            "7",
            "-12",
            "007",
            "1.5",
            "-0.25",
            "1.",
            "-",
            "1e3",
            "2E-2",
            "0.000001",
            "123456789012345678",
            "12345678901234567890",
            "true",
            "false",
            "null",
            "tru",
            "\"a\"",
            "\"\"",
            "\"é\"",
            "\"a\\\"b\"",
            "\"\\u00e9\"",
            "\"\\ud800\"",
            "\"tab\there\"",
        ])
        .prop_map(str::to_owned);
        leaf.prop_recursive(4, 24, 4, |inner| {
            let space = select(vec!["", "", " ", "\n ", "\t", "\u{b}"]);
            let key = select(vec!["a", "b", "a", "é", "k\\u0061", "ka"]);
            prop_oneof![
                (
                    prop::collection::vec((key, space.clone(), inner.clone()), 0..5),
                    any::<u8>()
                )
                    .prop_map(|(fields, odd)| {
                        let fields: Vec<String> = fields
                            .into_iter()
                            .map(|(key, space, value)| format!("\"{key}\"{space}:{value}"))
                            .collect();
                        let comma = if odd % 16 == 0 { "," } else { "" };
                        format!("{{{}{comma}}}", fields.join(","))
                    }),
                (prop::collection::vec((inner, space), 0..4), any::<u8>()).prop_map(
                    |(items, odd)| {
                        let items: Vec<String> = items
                            .into_iter()
                            .map(|(item, space)| format!("{space}{item}"))
                            .collect();
                        let comma = if odd % 16 == 0 { "," } else { "" };
                        format!("[{}{comma}]", items.join(","))
                    }
                ),
            ]
        })
    }

    /// The serde path's reading of `bytes`: the full decoder, built on no fast reader.
    fn slow(bytes: &[u8]) -> Result<CallEvent, super::super::WireError> {
        json::parse(bytes).and_then(CallEvent::from_value)
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 4000, ..ProptestConfig::default() })]

        /// What the scanner accepts, the serde path decodes to the same request, and checks to
        /// the same head.
        #[test]
        fn a_scanned_request_is_what_serde_reads(
            input in json_text(),
            deadline in select(vec!["", ",\"deadline\":5", ",\"deadline\":05", ",\"deadline\":5.0", ",\"deadline\":18446744073709551615"]),
            extra in select(vec!["", ",\"subscription\":true", ",\"traceparent\":\"t\"", ",\"input\":1", " ,\"parentRequestId\" : \"p\" "]),
            type_first in any::<bool>(),
        ) {
            let text = if type_first {
                format!(r#"{{"type":"call.requested","requestId":"c:1","operationId":"a.b","input":{input}{deadline}{extra}}}"#)
            } else {
                format!(r#"{{"requestId":"c:1","input":{input}{deadline},"operationId":"a.b"{extra},"type":"call.requested"}}"#)
            };
            let bytes = text.as_bytes();
            let checked = request(bytes, |scan| scan.value(1));
            let built = request(bytes, |scan| scan.build(1));
            prop_assert_eq!(checked.is_some(), built.is_some());
            if let Some(built) = built {
                prop_assert_eq!(Some(built.input), serde_json::from_str(&input).ok());
                let slow = slow(bytes);
                prop_assert!(matches!(slow, Ok(CallEvent::Requested(_))), "{:?}", slow);
                prop_assert_eq!(decode_fast(bytes), slow.ok());
                let head = check_request(bytes);
                prop_assert!(head.is_some());
                prop_assert_eq!(head, checked_by_serde(bytes));
            }
        }

        /// What the scanner accepts, the serde path decodes to the same reply.
        #[test]
        fn a_scanned_reply_is_what_serde_reads(
            data in json_text(),
            meta in select(vec![
                r#"{"source":"local","operationId":"a.b","timestamp":1}"#,
                r#"{"source":"local","operationId":"a.b","timestamp":1,"timestamp":2}"#,
                r#"{"source":"local","operationId":"a.b"}"#,
                r#"{"source":"http","statusCode":200,"headers":{},"contentType":""}"#,
                r#"{"source":"ftp"}"#,
            ]),
            signature in select(vec!["", r#","signature":"s""#, r#","signature":null"#]),
        ) {
            let text = format!(r#"{{"type":"call.responded","requestId":"c:1","output":{{"meta":{meta},"data":{data}}}{signature}}}"#);
            let bytes = text.as_bytes();
            if responded(bytes, |scan| scan.build(2), |scan| scan.span(2)).is_some() {
                let slow = slow(bytes);
                if let Some(fast) = decode_fast(bytes) {
                    prop_assert_eq!(slow, Ok(fast));
                }
            }
        }
    }

    #[test]
    fn a_request_is_read_by_its_parts() {
        let bytes = br#" {"type":"call.requested","requestId":"c:1","operationId":"a.b","input":{"x":[1, 2.5]},"deadline":9,"subscription":false} "#;
        let read = request(bytes, |scan| scan.span(1)).unwrap();
        assert_eq!(
            (read.request_id, read.operation_id, read.input),
            ("c:1", "a.b", r#"{"x":[1, 2.5]}"#)
        );
        assert_eq!((read.deadline, read.subscription), (Some(9), Some(false)));
        for declined in [
            // Another event, a repeated field, a field it does not read, a null, a trailer.
            &br#"{"type":"call.responded","requestId":"c:1","operationId":"a.b","input":1}"#[..],
            br#"{"type":"call.requested","requestId":"c:1","requestId":"c:2","operationId":"a.b","input":1}"#,
            br#"{"type":"call.requested","requestId":"c:1","operationId":"a.b","input":1,"identity":{"id":"a"}}"#,
            br#"{"type":"call.requested","requestId":"c:1","operationId":"a.b","input":1,"traceparent":null}"#,
            br#"{"type":"call.requested","requestId":"c:1","operationId":"a.b","input":1} x"#,
            br#"{"type":"call.requested","requestId":"c:1","operationId":"a.b"}"#,
            br#"{"type":"call.requested","requestId":"c:1","operationId":"a.b","input":1,"deadline":-1}"#,
            br#"{"type":"call.requested","requestId":"c:1","operationId":"a.b","input":1,"deadline":1.0}"#,
        ] {
            let read = request(declined, |scan| scan.span(1));
            assert!(read.is_none(), "{}", String::from_utf8_lossy(declined));
        }
    }

    /// Every prefix of real events, every event with one byte taken out, and every event with
    /// one byte replaced by a byte that matters to a reader: the scanner never panics, and
    /// what it accepts (through the decoders and the check), the serde path reads the same.
    #[test]
    fn damaged_events_are_declined_or_read_as_serde_reads_them() {
        let events: [&str; 3] = [
            r#"{"type":"call.requested","requestId":"c0ffee:12","operationId":"math.add","input":{"a":-2,"b":[4.5,true,null,"x"]},"deadline":1764000000000,"subscription":false,"traceparent":"00-ab-cd-01"}"#,
            r#"{"type":"call.responded","requestId":"c0ffee:12","output":{"data":{"sum":42,"tags":["é"]},"meta":{"source":"local","operationId":"math.add","timestamp":1764000000000}},"signature":"sig"}"#,
            r#"{"type":"call.responded","requestId":"c:1","output":{"data":[],"meta":{"source":"http","statusCode":200,"headers":{},"contentType":""}}}"#,
        ];
        let specials = [
            b'"', b'\\', b'{', b'}', b'[', b']', b',', b':', b' ', b'0', b'1', b'-', b'.', b'e',
            b't', b'n', 0x0b, 0x1f, 0x80, 0xff,
        ];
        let agree = |bytes: &[u8]| {
            if let Some(fast) = decode_fast(bytes) {
                assert_eq!(slow(bytes), Ok(fast), "{}", String::from_utf8_lossy(bytes));
            }
            if request(bytes, |scan| scan.value(1)).is_some() {
                assert!(check_request(bytes).is_some());
                assert_eq!(check_request(bytes), checked_by_serde(bytes));
            }
            let _ = responded(bytes, |scan| scan.span(2), |scan| scan.span(2));
        };
        for event in events.map(str::as_bytes) {
            assert!(decode_fast(event).is_some());
            for end in 0..event.len() {
                agree(&event[..end]);
                let mut cut = event.to_vec();
                cut.remove(end);
                agree(&cut);
                for special in specials {
                    let mut changed = event.to_vec();
                    changed[end] = special;
                    agree(&changed);
                }
            }
        }
    }

    #[test]
    fn a_reply_is_read_by_its_parts() {
        let bytes = br#"{"type":"call.responded","requestId":"c:1","output":{"data":{"sum":3},"meta":{"source":"local"}},"signature":"s"}"#;
        let reply = responded(bytes, |scan| scan.span(2), |scan| scan.span(2)).unwrap();
        assert_eq!(
            (reply.request_id, reply.data, reply.meta, reply.signature),
            ("c:1", r#"{"sum":3}"#, r#"{"source":"local"}"#, Some("s"))
        );
        for declined in [
            &br#"{"type":"call.responded","requestId":"c:1","output":{"meta":{}}}"#[..],
            br#"{"type":"call.responded","requestId":"c:1","output":{"data":1,"meta":1}}"#,
            br#"{"type":"call.responded","requestId":"c:1","output":{"data":1,"data":2,"meta":{}}}"#,
            br#"{"type":"call.responded","requestId":"c:1","output":{"data":1,"meta":{}},"signature":1}"#,
        ] {
            let read = responded(declined, |scan| scan.span(2), |scan| scan.span(2));
            assert!(read.is_none(), "{}", String::from_utf8_lossy(declined));
        }
    }
}
