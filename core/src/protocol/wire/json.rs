//! The one JSON rule of the wire: **no object of a call event repeats a key**.
//!
//! JSON parsers disagree on repeated keys (serde's derived structs refuse them, a
//! `serde_json::Value` keeps the last one, other languages keep the first), so a payload that
//! repeats `type`, `requestId` or `identity` could read as one event to the part of the
//! system that checks it and as another to the part that runs it. Every reader of the wire
//! therefore refuses a repeated key: [`peek`](super::peek) at the top level (the nesting it
//! skips, it skips without building or checking), the fast decoder and the full decoder
//! ([`parse`]) at every level. What one of them accepts, the others read the same way.

use super::WireError;
use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::HashSet;
use std::fmt;
use std::hash::Hash;
use std::ops::Deref;

/// Parses a whole event into a [`Value`], refusing a repeated key in any object
/// ([`WireError::DuplicateKey`]) and anything that is not JSON ([`WireError::NotJson`]).
pub(crate) fn parse(bytes: &[u8]) -> Result<Value, WireError> {
    let duplicate = RefCell::new(None);
    let parsed = match std::str::from_utf8(bytes) {
        Ok(text) => parse_from(serde_json::de::StrRead::new(text), &duplicate),
        Err(_) => parse_from(serde_json::de::SliceRead::new(bytes), &duplicate),
    };
    parsed.map_err(|error| match duplicate.into_inner() {
        Some(key) => WireError::DuplicateKey { key },
        None => WireError::NotJson(error.to_string()),
    })
}

fn parse_from<'de, R: serde_json::de::Read<'de>>(
    read: R,
    duplicate: &RefCell<Option<String>>,
) -> Result<Value, serde_json::Error> {
    let mut deserializer = serde_json::Deserializer::new(read);
    UniqueKeys { duplicate }
        .deserialize(&mut deserializer)
        .and_then(|value| deserializer.end().map(|()| value))
}

/// `T` from the JSON in `bytes`, as `serde_json::from_slice` reads it, with the text's UTF-8
/// checked once, as a whole, rather than string by string (`from_slice` checks each string
/// it reads, at a call per string: most of a small event's strings are short keys). Text that
/// is not UTF-8 is read by `from_slice` itself, so its error is the one it always gave.
pub(crate) fn from_bytes<'a, T: Deserialize<'a>>(bytes: &'a [u8]) -> serde_json::Result<T> {
    match std::str::from_utf8(bytes) {
        Ok(text) => serde_json::from_str(text),
        Err(_) => serde_json::from_slice(bytes),
    }
}

/// A field the fast decoder reads as a [`Value`] under the same rule (any error declines the
/// fast path, and [`parse`] then names it).
pub(super) fn unique_value<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Value, D::Error> {
    let duplicate = RefCell::new(None);
    UniqueKeys {
        duplicate: &duplicate,
    }
    .deserialize(deserializer)
}

/// Builds a [`Value`] as `serde_json` does, but fails on the second occurrence of a key in
/// one object, leaving that key in `duplicate`.
#[derive(Clone, Copy)]
struct UniqueKeys<'s> {
    duplicate: &'s RefCell<Option<String>>,
}

impl<'de> DeserializeSeed<'de> for UniqueKeys<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for UniqueKeys<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, value: bool) -> Result<Value, E> {
        Ok(Value::Bool(value))
    }

    fn visit_i64<E>(self, value: i64) -> Result<Value, E> {
        Ok(Value::Number(value.into()))
    }

    fn visit_u64<E>(self, value: u64) -> Result<Value, E> {
        Ok(Value::Number(value.into()))
    }

    fn visit_f64<E>(self, value: f64) -> Result<Value, E> {
        Ok(Number::from_f64(value).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, value: &str) -> Result<Value, E> {
        Ok(Value::String(value.to_owned()))
    }

    fn visit_string<E>(self, value: String) -> Result<Value, E> {
        Ok(Value::String(value))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        self.deserialize(deserializer)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<Value, A::Error> {
        let mut values = Vec::with_capacity(items.size_hint().unwrap_or(0).min(1024));
        while let Some(value) = items.next_element_seed(self)? {
            values.push(value);
        }
        Ok(Value::Array(values))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut entries: A) -> Result<Value, A::Error> {
        let mut object = Map::new();
        while let Some(key) = entries.next_key::<String>()? {
            if object.contains_key(&key) {
                let error = duplicate_key_error(&key);
                *self.duplicate.borrow_mut() = Some(key);
                return Err(error);
            }
            let value = entries.next_value_seed(self)?;
            object.insert(key, value);
        }
        Ok(Value::Object(object))
    }
}

/// The error of a key written twice in one object (every reader of the wire says it this way).
pub(super) fn duplicate_key_error<E: de::Error>(key: &str) -> E {
    E::custom(format_args!("the key `{key}` appears twice in one object"))
}

/// The keys of one object seen so far, for readers that do not build the object
/// ([`peek`](super::peek), [`check_request`](super::check_request), the scanner): a repeated
/// key is an error. The wire's objects are small: their first [`FEW`] keys are compared one by
/// one without allocating; a larger object's keys move into a hash set. `K` is how a reader
/// holds a key (a `Cow<str>` from serde, a `&str` from the scanner, which never owns one).
#[derive(Default)]
pub(super) struct SeenKeys<K> {
    few: [K; FEW],
    /// How many of `few` hold keys (all of them once `many` is used).
    len: usize,
    /// Every key, once the object has more than [`FEW`].
    many: HashSet<K, foldhash::fast::RandomState>,
}

/// How many keys [`SeenKeys`] compares one by one.
const FEW: usize = 16;

impl<K: Default + Eq + Hash + Deref<Target = str>> SeenKeys<K> {
    /// Records `key`; an error when it was seen before.
    pub(super) fn insert<E: de::Error>(&mut self, key: K) -> Result<(), E> {
        if self.len < FEW {
            if self.few[..self.len].contains(&key) {
                return Err(duplicate_key_error(&key));
            }
            self.few[self.len] = key;
            self.len += 1;
            return Ok(());
        }
        if self.many.is_empty() {
            self.many.extend(self.few.iter_mut().map(std::mem::take));
        }
        if self.many.contains(&key) {
            return Err(duplicate_key_error(&key));
        }
        self.many.insert(key);
        Ok(())
    }
}

/// Walks a value under the wire's rule without building it: an error on a repeated key at any
/// depth, exactly where [`unique_value`] fails (the same `deserialize_any` at every level, so
/// the same nesting limit), and nothing allocated for keys without escapes.
pub(super) fn unique_check<'de, D: Deserializer<'de>>(deserializer: D) -> Result<(), D::Error> {
    deserializer.deserialize_any(Check)
}

/// The visitor of [`unique_check`].
#[derive(Clone, Copy)]
struct Check;

impl<'de> DeserializeSeed<'de> for Check {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Check {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }

    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }

    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }

    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_none<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        self.deserialize(deserializer)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<(), A::Error> {
        while items.next_element_seed(self)?.is_some() {}
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut entries: A) -> Result<(), A::Error> {
        let mut seen = SeenKeys::default();
        while let Some(CowStr(key)) = entries.next_key()? {
            seen.insert(key)?;
            entries.next_value_seed(self)?;
        }
        Ok(())
    }
}

/// A string, borrowed from the input when it has no escapes.
pub(super) struct CowStr<'a>(pub(super) Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for CowStr<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Text<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for Text<'a> {
            type Value = CowStr<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, text: &'de str) -> Result<CowStr<'a>, E> {
                Ok(CowStr(Cow::Borrowed(text)))
            }
            fn visit_str<E>(self, text: &str) -> Result<CowStr<'a>, E> {
                Ok(CowStr(Cow::Owned(text.to_owned())))
            }
            fn visit_string<E>(self, text: String) -> Result<CowStr<'a>, E> {
                Ok(CowStr(Cow::Owned(text)))
            }
        }
        deserializer.deserialize_str(Text(std::marker::PhantomData))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn repeated_keys_are_refused_at_every_level_and_named() {
        for (bytes, key) in [
            (&br#"{"a":1,"a":2}"#[..], "a"),
            (br#"{"a":{"b":[{"c":1,"c":1}]}}"#, "c"),
            (br#"{"\u0061":1,"a":2}"#, "a"),
        ] {
            assert_eq!(
                parse(bytes),
                Err(WireError::DuplicateKey {
                    key: key.to_owned()
                })
            );
        }
    }

    #[test]
    fn everything_else_parses_as_serde_json_does() {
        let text =
            br#"{"a":[1,-2,3.5,1e400,true,null,"x\n"],"b":{"c":{}},"d":18446744073709551615}"#;
        let ours = parse(text);
        let theirs: Result<Value, _> = serde_json::from_slice(text);
        assert_eq!(ours.is_ok(), theirs.is_ok());
        let text = br#"{"a":[1,-2,3.5,true,null,"x\n"],"b":{"c":{}},"d":18446744073709551615}"#;
        assert_eq!(
            parse(text).unwrap(),
            serde_json::from_slice::<Value>(text).unwrap()
        );
        assert_eq!(parse(b"[1] x").map_err(|_| ()), Err(()));
        assert!(matches!(parse(b"{"), Err(WireError::NotJson(_))));
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        assert!(
            matches!(parse(deep.as_bytes()), Err(WireError::NotJson(message)) if message.contains("recursion limit"))
        );
        assert_eq!(parse(b" 7 ").unwrap(), json!(7));
    }

    /// UTF-8 checked once for the whole text reads what `from_slice` reads, and text that is
    /// not UTF-8 gets `from_slice`'s own error: the same outcome, byte for byte.
    #[test]
    fn reading_checked_text_is_reading_the_slice() {
        let cases: [&[u8]; 9] = [
            br#"{"type":"call.requested","requestId":"c:1","input":{"a":"\u00e9","b":[1,2.5]}}"#,
            "{\"caf\u{e9}\":\"\u{1f600}\"}".as_bytes(),
            b"{\"a\":\"\xff\"}",
            b"{\"\xc3\":1}",
            b"{\"a\":1}\xff",
            br#"{"a":"\ud800"}"#,
            br#"{"a":1,"a":2}"#,
            b"[1, 2",
            b"",
        ];
        for bytes in cases {
            let ours = from_bytes::<Value>(bytes).map_err(|error| error.to_string());
            let theirs = serde_json::from_slice::<Value>(bytes).map_err(|error| error.to_string());
            assert_eq!(ours, theirs, "{}", String::from_utf8_lossy(bytes));
            let parsed = parse(bytes).map_err(|error| error.to_string());
            match theirs {
                Ok(value) if parsed.is_ok() => assert_eq!(parsed, Ok(value)),
                Ok(_) => assert_eq!(bytes, br#"{"a":1,"a":2}"#),
                Err(error) => assert_eq!(parsed, Err(WireError::NotJson(error).to_string())),
            }
        }
    }
}
