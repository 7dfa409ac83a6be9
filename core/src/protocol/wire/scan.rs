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
//! integer digits (so none overflows), nesting at most [`MAX_DEPTH`] deep, no repeated key in
//! any object (compared by bytes, which for unescaped keys is comparing the keys), and at the
//! top level only the fields the fast decoder reads on that event with their plain types
//! (`null` for an optional field declines, as does `identity`). Valid UTF-8 is checked once, up
//! front. The property tests of `fast_decode.rs` and `check.rs` hold the scanner to the serde
//! path on generated events.

use serde_json::{Map, Number, Value};
use std::collections::HashSet;

/// How deep values may nest before the scanner declines (serde_json refuses past 128).
const MAX_DEPTH: usize = 64;

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
        "type" => once(&mut kind, scan.string()?),
        "requestId" => once(&mut request_id, scan.string()?),
        "operationId" => once(&mut operation_id, scan.string()?),
        "input" => {
            // Checked before it is read: a second input is not built only to be dropped.
            read_input.is_none().then_some(())?;
            once(&mut read_input, input(scan)?)
        }
        "parentRequestId" => once(&mut parent_request_id, scan.string()?),
        "identityToken" => once(&mut identity_token, scan.string()?),
        "deadline" => once(&mut deadline, scan.unsigned()?),
        "subscription" => once(&mut subscription, scan.boolean()?),
        "traceparent" => once(&mut traceparent, scan.string()?),
        "tracestate" => once(&mut tracestate, scan.string()?),
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
        "type" => once(&mut kind, scan.string()?),
        "requestId" => once(&mut request_id, scan.string()?),
        "output" => {
            output.is_none().then_some(())?;
            let mut read_data = None;
            let mut read_meta = None;
            scan.object(|scan, key| match key {
                "data" => {
                    read_data.is_none().then_some(())?;
                    once(&mut read_data, data(scan)?)
                }
                "meta" => {
                    read_meta.is_none().then_some(())?;
                    (scan.next_byte()? == b'{').then_some(())?;
                    once(&mut read_meta, meta(scan)?)
                }
                _ => None,
            })?;
            once(&mut output, (read_data?, read_meta?))
        }
        "signature" => once(&mut signature, scan.string()?),
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

/// A number the scanner accepted, as serde_json reads it: a non-negative integer as a `u64`, a
/// negative one as an `i64` (both fit: at most 18 digits); `-0` and fractions by serde_json
/// itself (its float reading is its own).
fn number(text: &str) -> Option<Number> {
    if !text.contains('.') && text != "-0" {
        return match text.strip_prefix('-') {
            Some(digits) => digits.parse::<i64>().ok().map(|n| Number::from(-n)),
            None => text.parse::<u64>().ok().map(Number::from),
        };
    }
    serde_json::from_str(text).ok()
}

/// The bytes of `word` (little-endian: the first byte lowest) that are a quote, a backslash or
/// a control character (below 0x20), as their high bits; zero when none is. A byte after one of
/// them may be marked too (a borrow carries upward), so only the lowest mark is exact: the
/// first such byte is `trailing_zeros() / 8`. (The usual carry tricks: a byte is zero, or is
/// below a bound.)
fn stops(word: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let zero = |x: u64| x.wrapping_sub(ONES) & !x & HIGHS;
    let quote = zero(word ^ (ONES * u64::from(b'"')));
    let backslash = zero(word ^ (ONES * u64::from(b'\\')));
    let control = word.wrapping_sub(ONES * 0x20) & !word & HIGHS;
    quote | backslash | control
}

/// Sets a field read once; a second time declines (a repeated key).
pub(super) fn once<T>(slot: &mut Option<T>, value: T) -> Option<()> {
    match slot {
        Some(_) => None,
        None => {
            *slot = Some(value);
            Some(())
        }
    }
}

/// A position in an event's text (a copy is a second position in the same text).
#[derive(Clone)]
pub(super) struct Scan<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Scan<'a> {
    fn new(bytes: &'a [u8]) -> Option<Self> {
        Some(Self {
            text: std::str::from_utf8(bytes).ok()?,
            at: 0,
        })
    }

    fn bytes(&self) -> &'a [u8] {
        self.text.as_bytes()
    }

    /// Skips JSON's whitespace (serde_json's four bytes).
    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\n' | b'\t' | b'\r') = self.bytes().get(self.at) {
            self.at += 1;
        }
    }

    /// The next byte past whitespace, not consumed.
    pub(super) fn next_byte(&mut self) -> Option<u8> {
        self.skip_ws();
        self.bytes().get(self.at).copied()
    }

    fn eat(&mut self, byte: u8) -> Option<()> {
        (self.next_byte()? == byte).then(|| self.at += 1)
    }

    /// Only whitespace is left.
    fn end(&mut self) -> Option<()> {
        self.skip_ws();
        (self.at == self.text.len()).then_some(())
    }

    /// A string without escapes or control characters: its text, between the quotes.
    pub(super) fn string(&mut self) -> Option<&'a str> {
        self.eat(b'"')?;
        let bytes = self.bytes();
        let start = self.at;
        let mut at = start;
        // Eight bytes at a time up to the word that holds the end (or something to decline).
        loop {
            match bytes.get(at..at + 8) {
                Some(word) => match stops(u64::from_le_bytes(word.try_into().ok()?)) {
                    0 => at += 8,
                    found => {
                        at += found.trailing_zeros() as usize / 8;
                        break;
                    }
                },
                None => {
                    at += bytes[at..]
                        .iter()
                        .position(|&byte| byte == b'"' || byte == b'\\' || byte < 0x20)?;
                    break;
                }
            }
        }
        if bytes[at] != b'"' {
            return None;
        }
        self.at = at + 1;
        // Both ends are next to an ASCII quote, so both are character boundaries.
        self.text.get(start..at)
    }

    fn boolean(&mut self) -> Option<bool> {
        match self.next_byte()? {
            b't' => self.literal("true").map(|()| true),
            b'f' => self.literal("false").map(|()| false),
            _ => None,
        }
    }

    fn literal(&mut self, word: &str) -> Option<()> {
        self.text[self.at..]
            .starts_with(word)
            .then(|| self.at += word.len())
    }

    /// Digits from `at`: how many.
    fn digits(&self, at: usize) -> usize {
        self.bytes()[at..]
            .iter()
            .take_while(|byte| byte.is_ascii_digit())
            .count()
    }

    /// A non-negative integer with at most 19 digits and no leading zero (as `u64` reads it).
    pub(super) fn unsigned(&mut self) -> Option<u64> {
        self.skip_ws();
        let count = self.digits(self.at);
        let digits = &self.text[self.at..self.at + count];
        if count == 0 || count > 19 || (count > 1 && digits.starts_with('0')) {
            return None;
        }
        if matches!(self.bytes().get(self.at + count), Some(b'.' | b'e' | b'E')) {
            return None;
        }
        self.at += count;
        digits.parse().ok()
    }

    /// A value at `depth`, built as serde_json builds a [`Value`] (a key repeated in an
    /// object declines).
    pub(super) fn build(&mut self, depth: usize) -> Option<Value> {
        match self.next_byte()? {
            b'{' if depth < MAX_DEPTH => {
                let mut object = Map::new();
                self.object(|scan, key| {
                    let value = scan.build(depth + 1)?;
                    object.insert(key.to_owned(), value).is_none().then_some(())
                })?;
                Some(Value::Object(object))
            }
            b'[' if depth < MAX_DEPTH => {
                self.at += 1;
                let mut items = Vec::new();
                if self.next_byte()? == b']' {
                    self.at += 1;
                    return Some(Value::Array(items));
                }
                loop {
                    items.push(self.build(depth + 1)?);
                    match self.next_byte()? {
                        b',' => self.at += 1,
                        b']' => {
                            self.at += 1;
                            return Some(Value::Array(items));
                        }
                        _ => return None,
                    }
                }
            }
            b'"' => self.string().map(|text| Value::String(text.to_owned())),
            b't' => self.literal("true").map(|()| Value::Bool(true)),
            b'f' => self.literal("false").map(|()| Value::Bool(false)),
            b'n' => self.literal("null").map(|()| Value::Null),
            b'-' | b'0'..=b'9' => {
                let start = self.at;
                self.number()?;
                number(&self.text[start..self.at]).map(Value::Number)
            }
            _ => None,
        }
    }

    /// A number of the accepted kind (see the module docs).
    fn number(&mut self) -> Option<()> {
        let mut at = self.at;
        if self.bytes().get(at) == Some(&b'-') {
            at += 1;
        }
        let count = self.digits(at);
        if count == 0 || count > 18 || (count > 1 && self.bytes()[at] == b'0') {
            return None;
        }
        at += count;
        if self.bytes().get(at) == Some(&b'.') {
            let fraction = self.digits(at + 1);
            if fraction == 0 {
                return None;
            }
            at += 1 + fraction;
        }
        if matches!(self.bytes().get(at), Some(b'e' | b'E')) {
            return None;
        }
        self.at = at;
        Some(())
    }

    /// A value at `depth` (the top-level object's fields are at 1): its text.
    pub(super) fn span(&mut self, depth: usize) -> Option<&'a str> {
        self.skip_ws();
        let start = self.at;
        self.value(depth)?;
        Some(&self.text[start..self.at])
    }

    /// A value at `depth`, checked and skipped.
    pub(super) fn value(&mut self, depth: usize) -> Option<()> {
        match self.next_byte()? {
            b'{' if depth < MAX_DEPTH => {
                let mut keys = Keys::default();
                self.object(|scan, key| {
                    keys.insert(key)?;
                    scan.value(depth + 1)
                })
            }
            b'[' if depth < MAX_DEPTH => {
                self.at += 1;
                if self.next_byte()? == b']' {
                    self.at += 1;
                    return Some(());
                }
                loop {
                    self.value(depth + 1)?;
                    match self.next_byte()? {
                        b',' => self.at += 1,
                        b']' => {
                            self.at += 1;
                            return Some(());
                        }
                        _ => return None,
                    }
                }
            }
            b'"' => self.string().map(drop),
            b't' => self.literal("true"),
            b'f' => self.literal("false"),
            b'n' => self.literal("null"),
            b'-' | b'0'..=b'9' => self.number(),
            _ => None,
        }
    }

    /// An object: `field` reads each value, given its key.
    pub(super) fn object(
        &mut self,
        mut field: impl FnMut(&mut Self, &'a str) -> Option<()>,
    ) -> Option<()> {
        self.eat(b'{')?;
        if self.next_byte()? == b'}' {
            self.at += 1;
            return Some(());
        }
        loop {
            let key = self.string()?;
            self.eat(b':')?;
            field(self, key)?;
            match self.next_byte()? {
                b',' => self.at += 1,
                b'}' => {
                    self.at += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }
}

/// The keys of one nested object so far: a repeated one declines.
#[derive(Default)]
struct Keys<'a> {
    few: [&'a str; FEW],
    len: usize,
    many: HashSet<&'a str, foldhash::fast::RandomState>,
}

/// Keys compared one by one before a set is built.
const FEW: usize = 16;

impl<'a> Keys<'a> {
    fn insert(&mut self, key: &'a str) -> Option<()> {
        if self.len < FEW {
            if self.few[..self.len].contains(&key) {
                return None;
            }
            self.few[self.len] = key;
            self.len += 1;
            return Some(());
        }
        if self.many.is_empty() {
            self.many.extend(self.few);
        }
        self.many.insert(key).then_some(())
    }
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

    fn value_ok(text: &str) -> bool {
        let mut scan = Scan::new(text.as_bytes()).unwrap();
        scan.value(1).is_some() && scan.end().is_some()
    }

    /// What the scanner accepts as a value, serde_json accepts; what it declines is either
    /// invalid or outside its subset.
    #[test]
    fn values_are_judged_as_serde_judges_them_or_declined() {
        for accepted in [
            "0",
            "-1",
            "12.50",
            " [ 1 , {\"a\" : [] } ]\n",
            "\"ü\"",
            "true",
            "null",
            "{}",
            "123456789012345678",
            "-0",
            "-0.0",
        ] {
            assert!(value_ok(accepted), "{accepted}");
            assert!(serde_json::from_str::<serde_json::Value>(accepted).is_ok());
        }
        for declined in [
            // Invalid JSON.
            "01",
            "1.",
            ".5",
            "-",
            "[1,]",
            "{\"a\":1,}",
            "{\"a\" 1}",
            "tru",
            "nul",
            "\"a",
            "[1 2]",
            "{1:2}",
            "\u{b}1",
            // Valid, but outside the subset.
            "1e5",
            "1234567890123456789",
            "\"a\\nb\"",
            "{\"a\":1,\"a\":1}",
        ] {
            assert!(!value_ok(declined), "{declined}");
        }
        let deep = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert!(!value_ok(&deep));
        let shallow = format!("{}{}", "[".repeat(MAX_DEPTH - 2), "]".repeat(MAX_DEPTH - 2));
        assert!(value_ok(&shallow));
    }

    #[test]
    fn a_string_ends_at_its_first_quote_whatever_surrounds_it() {
        // Every length and position around the eight-byte words, with bytes on both sides of
        // the bounds of the marks (0x1f, 0x20, 0x21, 0x22, 0x23, 0x5b, 0x5c, 0x5d, 0x7f, 0x80).
        for len in 0..20 {
            for pad in 0..9 {
                for filler in [b'a', 0x21, 0x23, 0x5b, 0x5d, 0x7f, 0x20] {
                    let body = vec![filler; len];
                    let text = format!(
                        "{}\"{}\"{}",
                        " ".repeat(pad),
                        String::from_utf8(body.clone()).unwrap(),
                        "x".repeat(pad)
                    );
                    let mut scan = Scan::new(text.as_bytes()).unwrap();
                    assert_eq!(scan.string().map(str::as_bytes), Some(&body[..]));
                    assert_eq!(scan.at, pad + len + 2);
                    for bad in [b'\\', 0x1f, 0x00, b'\n'] {
                        for at in 0..len {
                            let mut body = body.clone();
                            body[at] = bad;
                            let text = format!("\"{}\"", String::from_utf8(body).unwrap());
                            assert_eq!(Scan::new(text.as_bytes()).unwrap().string(), None);
                        }
                    }
                }
            }
        }
        let text = "\"é€😀 ü\"";
        assert_eq!(Scan::new(text.as_bytes()).unwrap().string(), Some("é€😀 ü"));
    }

    #[test]
    fn repeated_keys_decline_past_the_inline_ones() {
        let keys: Vec<String> = (0..40).map(|key| format!("\"k{key}\":{key}")).collect();
        assert!(value_ok(&format!("{{{}}}", keys.join(","))));
        assert!(!value_ok(&format!("{{{},\"k3\":0}}", keys.join(","))));
        assert!(!value_ok(&format!("{{{},\"k39\":0}}", keys.join(","))));
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
