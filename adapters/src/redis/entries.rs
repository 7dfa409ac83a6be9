//! Stream entries as a group reader needs them ([`Entry`]): the entry id and the payload
//! field, taken out of the raw reply of `XREADGROUP` or `XCLAIM`. The payload's bytes are
//! moved out of the reply, not copied, and no other field is kept (the `redis` crate's
//! stream replies build a map of every field of every entry).

use bytes::Bytes;
use redis::{ErrorKind, RedisError, Value};

/// The field of a stream entry that holds the payload.
pub(super) const PAYLOAD_FIELD: &[u8] = b"p";

/// One stream entry: its id, and its payload field when it has one (an entry written by
/// something else may not; a deleted entry still pending has no fields at all).
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Entry {
    pub(super) id: String,
    pub(super) payload: Option<Bytes>,
}

fn unexpected(what: &str) -> RedisError {
    RedisError::from((
        ErrorKind::UnexpectedReturnType,
        "an unexpected stream reply",
        what.to_owned(),
    ))
}

/// The entries of an `XREADGROUP` reply (`nil` when the read timed out): every stream's,
/// in order (a reader reads one stream).
pub(super) fn read_reply(reply: Value) -> Result<Vec<Entry>, RedisError> {
    let streams = match reply {
        Value::Nil => return Ok(Vec::new()),
        Value::Array(streams) => streams
            .into_iter()
            .map(|stream| match stream {
                Value::Array(pair) => pair
                    .into_iter()
                    .nth(1)
                    .ok_or_else(|| unexpected("a stream without entries")),
                _ => Err(unexpected("a stream that is not a pair")),
            })
            .collect::<Result<Vec<_>, _>>()?,
        // RESP3: stream name → entries.
        Value::Map(streams) => streams.into_iter().map(|(_, entries)| entries).collect(),
        _ => return Err(unexpected("not a list of streams")),
    };
    let mut entries = Vec::new();
    for stream in streams {
        entries.extend(entry_list(stream)?);
    }
    Ok(entries)
}

/// The entries of a list of `[id, [field, value, ...]]` (an `XCLAIM` reply, or one stream's
/// part of an `XREADGROUP` reply).
pub(super) fn entry_list(list: Value) -> Result<Vec<Entry>, RedisError> {
    let Value::Array(list) = list else {
        return match list {
            Value::Nil => Ok(Vec::new()),
            _ => Err(unexpected("entries that are not a list")),
        };
    };
    // An entry deleted meanwhile may come back as `nil`: there is nothing to deliver.
    list.into_iter()
        .filter(|entry| !matches!(entry, Value::Nil))
        .map(entry)
        .collect()
}

fn entry(entry: Value) -> Result<Entry, RedisError> {
    let Value::Array(parts) = entry else {
        return Err(unexpected("an entry that is not a pair"));
    };
    let mut parts = parts.into_iter();
    let id = match parts.next() {
        Some(Value::BulkString(id)) => {
            String::from_utf8(id).map_err(|_| unexpected("an entry id that is not text"))?
        }
        Some(Value::SimpleString(id)) => id,
        _ => return Err(unexpected("an entry without an id")),
    };
    let payload = match parts.next() {
        Some(Value::Array(fields)) => {
            let mut fields = fields.into_iter();
            payload(std::iter::from_fn(|| {
                Some((fields.next()?, fields.next()?))
            }))
        }
        Some(Value::Map(fields)) => payload(fields.into_iter()),
        _ => None,
    };
    Ok(Entry { id, payload })
}

/// The value of the payload field among fields and their values.
fn payload(fields: impl Iterator<Item = (Value, Value)>) -> Option<Bytes> {
    for (field, value) in fields {
        let is_payload = match &field {
            Value::BulkString(name) => name == PAYLOAD_FIELD,
            Value::SimpleString(name) => name.as_bytes() == PAYLOAD_FIELD,
            _ => false,
        };
        if is_payload {
            return match value {
                Value::BulkString(bytes) => Some(Bytes::from(bytes)),
                Value::SimpleString(text) => Some(Bytes::from(text)),
                _ => None,
            };
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bulk(text: &str) -> Value {
        Value::BulkString(text.as_bytes().to_vec())
    }

    #[test]
    fn entries_keep_their_id_and_payload_only() {
        let reply = Value::Array(vec![Value::Array(vec![
            bulk("opkit:stream:t"),
            Value::Array(vec![
                Value::Array(vec![
                    bulk("1-0"),
                    Value::Array(vec![bulk("x"), bulk("1"), bulk("p"), bulk("{}")]),
                ]),
                Value::Array(vec![
                    bulk("2-0"),
                    Value::Array(vec![bulk("q"), bulk("no payload")]),
                ]),
                Value::Array(vec![bulk("3-0"), Value::Nil]),
            ]),
        ])]);
        assert_eq!(
            read_reply(reply).unwrap(),
            [
                Entry {
                    id: "1-0".into(),
                    payload: Some(Bytes::from_static(b"{}"))
                },
                Entry {
                    id: "2-0".into(),
                    payload: None
                },
                Entry {
                    id: "3-0".into(),
                    payload: None
                },
            ]
        );
        assert_eq!(read_reply(Value::Nil).unwrap(), []);
        let resp3 = Value::Map(vec![(
            bulk("s"),
            Value::Array(vec![Value::Array(vec![
                bulk("4-0"),
                Value::Map(vec![(bulk("p"), bulk("a"))]),
            ])]),
        )]);
        assert_eq!(
            read_reply(resp3).unwrap()[0].payload.as_deref(),
            Some(&b"a"[..])
        );
        assert!(read_reply(Value::Int(3)).is_err());
        assert!(entry_list(Value::Array(vec![Value::Int(1)])).is_err());
    }
}
