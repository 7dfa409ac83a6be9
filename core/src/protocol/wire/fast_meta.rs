//! An envelope's `meta` as the fast decoder reads it: field by field, without a tree for the
//! `local` meta every opkit operation answers with.
//!
//! The object is read once. `source`, `operationId` and `timestamp` are kept as they arrive;
//! any other key is read as a [`Value`] under the wire's one rule (no repeated key, at any
//! depth). An object of exactly those three keys with `source: "local"` is a
//! [`LocalMeta`] at once; anything else is put back together as an object and read by
//! [`ResponseMeta`]'s own deserializer, as the slow path reads it. A key written twice, or a
//! known key of another type than the local meta's, declines (an error here; the slow path
//! then says what is wrong), so this reader is never more lenient than the slow path.

use super::json::{CowStr, duplicate_key_error, unique_value};
use super::scan::{self, Scan};
use crate::envelope::{LocalMeta, ResponseMeta};
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, Visitor};
use serde_json::{Map, Value};
use std::fmt;

/// Reads an envelope's meta (see the module docs).
/// An envelope's `meta` where the scanner is (`scan/`): a local meta read by the scanner
/// itself when the object holds exactly its three keys (`source` being `"local"`); any other
/// object's text read by [`meta`], as the fast decoder reads it.
pub(super) fn scanned(scan: &mut Scan<'_>) -> Option<ResponseMeta> {
    let mut local = scan.clone();
    if let Some(meta) = local_meta(&mut local) {
        *scan = local;
        return Some(meta);
    }
    let text = scan.span(2)?;
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let read = meta(&mut deserializer).ok()?;
    deserializer.end().ok()?;
    Some(read)
}

/// A meta object of exactly `source` (`"local"`), `operationId` and `timestamp`, as
/// [`MetaVisitor`] reads it.
fn local_meta(scan: &mut Scan<'_>) -> Option<ResponseMeta> {
    let (mut source, mut operation_id, mut timestamp) = (None, None, None);
    scan.object(|scan, key| match key {
        "source" => scan::once(&mut source, || scan.string()),
        "operationId" => scan::once(&mut operation_id, || scan.string()),
        "timestamp" => scan::once(&mut timestamp, || scan.unsigned()),
        _ => None,
    })?;
    (source? == "local").then_some(())?;
    Some(ResponseMeta::Local(LocalMeta {
        operation_id: operation_id?.into(),
        timestamp: timestamp?,
    }))
}

pub(super) fn meta<'de, D: Deserializer<'de>>(deserializer: D) -> Result<ResponseMeta, D::Error> {
    deserializer.deserialize_map(MetaVisitor)
}

/// A key of the meta object: one of the local meta's own, or another (kept as written).
enum Key {
    Source,
    OperationId,
    Timestamp,
    Other(String),
}

impl<'de> de::Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_identifier(KeyVisitor)
    }
}

struct KeyVisitor;

impl Visitor<'_> for KeyVisitor {
    type Value = Key;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a key of an envelope's meta")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<Key, E> {
        Ok(match key {
            "source" => Key::Source,
            "operationId" => Key::OperationId,
            "timestamp" => Key::Timestamp,
            other => Key::Other(other.to_owned()),
        })
    }
}

/// A value read under the wire's rule, as a seed for [`MapAccess::next_value_seed`].
struct Unique;

impl<'de> DeserializeSeed<'de> for Unique {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        unique_value(deserializer)
    }
}

struct MetaVisitor;

impl<'de> Visitor<'de> for MetaVisitor {
    type Value = ResponseMeta;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an envelope's meta object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut entries: A) -> Result<ResponseMeta, A::Error> {
        // Borrowed from the bytes when they hold no escapes: every reply has both.
        let mut source: Option<CowStr<'de>> = None;
        let mut operation_id: Option<CowStr<'de>> = None;
        let mut timestamp: Option<u64> = None;
        let mut others = Map::new();
        while let Some(key) = entries.next_key::<Key>()? {
            match key {
                Key::Source => once(&mut source, "source", || entries.next_value())?,
                Key::OperationId => {
                    once(&mut operation_id, "operationId", || entries.next_value())?;
                }
                Key::Timestamp => once(&mut timestamp, "timestamp", || entries.next_value())?,
                Key::Other(key) => {
                    if others.contains_key(&key) {
                        return Err(duplicate_key_error(&key));
                    }
                    let value = entries.next_value_seed(Unique)?;
                    others.insert(key, value);
                }
            }
        }
        if others.is_empty()
            && source.as_ref().is_some_and(|source| source.0 == "local")
            && let (Some(operation_id), Some(timestamp)) = (&operation_id, timestamp)
        {
            return Ok(ResponseMeta::Local(LocalMeta {
                operation_id: (&*operation_id.0).into(),
                timestamp,
            }));
        }
        if let Some(source) = source {
            others.insert("source".to_owned(), Value::String(source.0.into_owned()));
        }
        if let Some(operation_id) = operation_id {
            others.insert("operationId".to_owned(), Value::from(&*operation_id.0));
        }
        if let Some(timestamp) = timestamp {
            others.insert("timestamp".to_owned(), Value::from(timestamp));
        }
        serde_json::from_value(Value::Object(others)).map_err(de::Error::custom)
    }
}

/// Sets a field read once: a second occurrence of its key is an error.
fn once<T, E: de::Error>(
    slot: &mut Option<T>,
    key: &str,
    read: impl FnOnce() -> Result<T, E>,
) -> Result<(), E> {
    if slot.is_some() {
        return Err(duplicate_key_error(key));
    }
    *slot = Some(read()?);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::meta;
    use crate::envelope::ResponseMeta;

    fn read(text: &str) -> Option<ResponseMeta> {
        meta(&mut serde_json::Deserializer::from_str(text)).ok()
    }

    fn slow(text: &str) -> Option<ResponseMeta> {
        serde_json::from_str(text).ok()
    }

    #[test]
    fn reads_every_meta_as_the_slow_path_does() {
        for text in [
            r#"{"source":"local","operationId":"math.add","timestamp":7}"#,
            r#"{"timestamp":7,"operationId":"math.add","source":"local"}"#,
            r#"{"source":"local","operationId":"math.add","timestamp":7,"extra":{"a":[1]}}"#,
            r#"{"source":"http","statusCode":200,"headers":{"a":"1"},"contentType":"text/plain"}"#,
            r#"{"source":"mcp","isError":false,"content":[{"type":"text","text":"hi"}]}"#,
            r#"{"operationId":"math.add","timestamp":7,"source":"mcp"}"#,
        ] {
            let fast = read(text);
            assert!(fast.is_some(), "{text}");
            assert_eq!(fast, slow(text), "{text}");
        }
    }

    #[test]
    fn what_the_slow_path_refuses_is_refused() {
        for text in [
            r#"{"source":"local","operationId":"math.add"}"#,
            r#"{"source":"ftp","operationId":"math.add","timestamp":7}"#,
            r#"{"operationId":"math.add","timestamp":7}"#,
            r#"{"source":"local","operationId":"math.add","timestamp":-1}"#,
            r#"{"source":7}"#,
            "[]",
        ] {
            assert_eq!(read(text), None, "{text}");
            assert_eq!(slow(text), None, "{text}");
        }
    }

    #[test]
    fn repeated_keys_decline() {
        for text in [
            r#"{"source":"local","source":"local","operationId":"a.b","timestamp":1}"#,
            r#"{"source":"local","operationId":"a.b","operationId":"a.c","timestamp":1}"#,
            r#"{"source":"local","operationId":"a.b","timestamp":1,"timestamp":2}"#,
            r#"{"source":"http","statusCode":200,"headers":{},"headers":{},"contentType":""}"#,
            r#"{"source":"http","statusCode":200,"headers":{"a":"1","a":"2"},"contentType":""}"#,
        ] {
            assert_eq!(read(text), None, "{text}");
        }
        assert_eq!(
            read(r#"{"source":"local","operationId":"a.b","timestamp":1}"#),
            Some(ResponseMeta::Local(crate::envelope::LocalMeta {
                operation_id: "a.b".into(),
                timestamp: 1
            }))
        );
    }
}
