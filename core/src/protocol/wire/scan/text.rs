//! The reader of the JSON subset the scanner accepts (see the [module docs](super)): a
//! position in an event's text, and what can be read from it (strings, numbers, values checked
//! and skipped or built, objects and arrays walked by a caller's closure).

use super::super::json::SeenKeys;
use crate::envelope::{escape_marks, is_escaped};
use serde_json::{Map, Number, Value};

/// How deep values may nest before the scanner declines (serde_json refuses past 128).
const MAX_DEPTH: usize = 64;

/// A number the scanner accepted, as serde_json reads it: a non-negative integer as a `u64`, a
/// negative one as an `i64` (both fit: at most 18 digits); `-0` and fractions by serde_json
/// itself (its float reading is its own).
fn parsed_number(text: &str) -> Option<Number> {
    if !text.contains('.') && text != "-0" {
        return match text.strip_prefix('-') {
            Some(digits) => digits.parse::<i64>().ok().map(|n| Number::from(-n)),
            None => text.parse::<u64>().ok().map(Number::from),
        };
    }
    serde_json::from_str(text).ok()
}

/// A position in an event's text (a copy is a second position in the same text).
#[derive(Clone)]
pub(in crate::protocol::wire) struct Scan<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Scan<'a> {
    pub(super) fn new(bytes: &'a [u8]) -> Option<Self> {
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
    pub(in crate::protocol::wire) fn next_byte(&mut self) -> Option<u8> {
        self.skip_ws();
        self.bytes().get(self.at).copied()
    }

    fn eat(&mut self, byte: u8) -> Option<()> {
        (self.next_byte()? == byte).then(|| self.at += 1)
    }

    /// Only whitespace is left.
    pub(super) fn end(&mut self) -> Option<()> {
        self.skip_ws();
        (self.at == self.text.len()).then_some(())
    }

    /// A string without escapes or control characters: its text, between the quotes.
    pub(in crate::protocol::wire) fn string(&mut self) -> Option<&'a str> {
        self.eat(b'"')?;
        let bytes = self.bytes();
        let start = self.at;
        let mut at = start;
        // Eight bytes at a time up to the word that holds the end (or something to decline).
        loop {
            match bytes.get(at..at + 8) {
                Some(word) => match escape_marks(u64::from_le_bytes(word.try_into().ok()?)) {
                    0 => at += 8,
                    found => {
                        at += found.trailing_zeros() as usize / 8;
                        break;
                    }
                },
                None => {
                    at += bytes[at..].iter().position(|&byte| is_escaped(byte))?;
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

    pub(super) fn boolean(&mut self) -> Option<bool> {
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
    pub(in crate::protocol::wire) fn unsigned(&mut self) -> Option<u64> {
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
    pub(in crate::protocol::wire) fn build(&mut self, depth: usize) -> Option<Value> {
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
                let mut items = Vec::new();
                self.array(|scan| {
                    items.push(scan.build(depth + 1)?);
                    Some(())
                })?;
                Some(Value::Array(items))
            }
            b'"' => self.string().map(|text| Value::String(text.to_owned())),
            b't' => self.literal("true").map(|()| Value::Bool(true)),
            b'f' => self.literal("false").map(|()| Value::Bool(false)),
            b'n' => self.literal("null").map(|()| Value::Null),
            b'-' | b'0'..=b'9' => {
                let start = self.at;
                self.number()?;
                parsed_number(&self.text[start..self.at]).map(Value::Number)
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
    pub(in crate::protocol::wire) fn span(&mut self, depth: usize) -> Option<&'a str> {
        self.skip_ws();
        let start = self.at;
        self.value(depth)?;
        Some(&self.text[start..self.at])
    }

    /// A value at `depth`, checked and skipped.
    pub(in crate::protocol::wire) fn value(&mut self, depth: usize) -> Option<()> {
        match self.next_byte()? {
            b'{' if depth < MAX_DEPTH => {
                let mut keys = SeenKeys::default();
                self.object(|scan, key| {
                    // A repeated key declines (the error, built only then, is not kept).
                    keys.insert::<serde::de::value::Error>(key).ok()?;
                    scan.value(depth + 1)
                })
            }
            b'[' if depth < MAX_DEPTH => self.array(|scan| scan.value(depth + 1)),
            b'"' => self.string().map(drop),
            b't' => self.literal("true"),
            b'f' => self.literal("false"),
            b'n' => self.literal("null"),
            b'-' | b'0'..=b'9' => self.number(),
            _ => None,
        }
    }

    /// An array: `item` reads each item.
    fn array(&mut self, item: impl FnMut(&mut Self) -> Option<()>) -> Option<()> {
        self.list(b'[', b']', item)
    }

    /// An object: `field` reads each value, given its key.
    pub(in crate::protocol::wire) fn object(
        &mut self,
        mut field: impl FnMut(&mut Self, &'a str) -> Option<()>,
    ) -> Option<()> {
        self.list(b'{', b'}', |scan| {
            let key = scan.string()?;
            scan.eat(b':')?;
            field(scan, key)
        })
    }

    /// `open`, entries read by `entry` and separated by commas, then `close`.
    fn list(
        &mut self,
        open: u8,
        close: u8,
        mut entry: impl FnMut(&mut Self) -> Option<()>,
    ) -> Option<()> {
        self.eat(open)?;
        if self.next_byte()? == close {
            self.at += 1;
            return Some(());
        }
        loop {
            entry(self)?;
            match self.next_byte()? {
                b',' => self.at += 1,
                byte if byte == close => {
                    self.at += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
