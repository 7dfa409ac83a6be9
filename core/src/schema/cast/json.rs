//! JSON helpers of the cast: numbers by value, JSON equality and hashing, duplicate removal,
//! JSON-pointer decoding, and the size of a value.

use std::borrow::Cow;
use std::collections::HashMap;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

use serde_json::{Number, Value};

/// A JSON number classified by value, not by representation.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Numeric {
    Integer(i128),
    Fraction(f64),
}

impl Numeric {
    pub(super) fn of(number: &Number) -> Numeric {
        if let Some(n) = number.as_i64() {
            return Numeric::Integer(i128::from(n));
        }
        if let Some(n) = number.as_u64() {
            return Numeric::Integer(i128::from(n));
        }
        let float = number.as_f64().unwrap_or(f64::NAN);
        // 2^120 is far beyond any integer JSON numbers carry exactly and inside i128.
        if float.is_finite() && float.fract() == 0.0 && float.abs() < 1.329_228e36 {
            #[allow(clippy::cast_possible_truncation)]
            return Numeric::Integer(float as i128);
        }
        Numeric::Fraction(float)
    }
}

/// Zero fractional part, whatever the magnitude (`1e300` is an integer for JSON Schema).
pub(super) fn is_integral(number: &Number) -> bool {
    number.is_i64()
        || number.is_u64()
        || number
            .as_f64()
            .is_some_and(|float| float.is_finite() && float.fract() == 0.0)
}

/// Rewrites an integral number held as a float (`3.0`) as an integer (`3`).
pub(super) fn integer_value(number: Number) -> Value {
    if number.is_f64()
        && let Numeric::Integer(n) = Numeric::of(&number)
    {
        if let Ok(n) = i64::try_from(n) {
            return Value::from(n);
        }
        if let Ok(n) = u64::try_from(n) {
            return Value::from(n);
        }
    }
    Value::Number(number)
}

/// JSON Schema equality: numbers compare by value (`1 == 1.0`), objects ignore key order.
pub(super) fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => Numeric::of(x) == Numeric::of(y),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| json_equal(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(key, x)| y.get(key).is_some_and(|y| json_equal(x, y)))
        }
        _ => a == b,
    }
}

/// A hash consistent with [`json_equal`].
fn json_hash(value: &Value, state: &mut impl Hasher) {
    match value {
        Value::Null => 0u8.hash(state),
        Value::Bool(b) => (1u8, b).hash(state),
        Value::Number(number) => match Numeric::of(number) {
            Numeric::Integer(n) => (2u8, n).hash(state),
            Numeric::Fraction(f) => (3u8, f.to_bits()).hash(state),
        },
        Value::String(s) => (4u8, s).hash(state),
        Value::Array(items) => {
            (5u8, items.len()).hash(state);
            for item in items {
                json_hash(item, state);
            }
        }
        Value::Object(object) => {
            // Order-independent: combine the entries' own hashes commutatively.
            let combined = object.iter().fold(0u64, |acc, (key, value)| {
                let mut entry = DefaultHasher::new();
                key.hash(&mut entry);
                json_hash(value, &mut entry);
                acc.wrapping_add(entry.finish())
            });
            (6u8, object.len(), combined).hash(state);
        }
    }
}

/// Removes every item equal to an earlier one, keeping order.
pub(super) fn remove_duplicates(items: &mut Vec<Value>) {
    let mut kept: Vec<Value> = Vec::with_capacity(items.len());
    let mut buckets: HashMap<u64, Vec<usize>> = HashMap::new();
    for item in items.drain(..) {
        let mut hasher = DefaultHasher::new();
        json_hash(&item, &mut hasher);
        let bucket = buckets.entry(hasher.finish()).or_default();
        if bucket.iter().any(|&index| json_equal(&kept[index], &item)) {
            continue;
        }
        bucket.push(kept.len());
        kept.push(item);
    }
    *items = kept;
}

/// `true` when some item equals an earlier one (JSON equality).
pub(super) fn has_duplicates(items: &[Value]) -> bool {
    let mut buckets: HashMap<u64, Vec<usize>> = HashMap::new();
    for (index, item) in items.iter().enumerate() {
        let mut hasher = DefaultHasher::new();
        json_hash(item, &mut hasher);
        let bucket = buckets.entry(hasher.finish()).or_default();
        if bucket
            .iter()
            .any(|&earlier| json_equal(&items[earlier], item))
        {
            return true;
        }
        bucket.push(index);
    }
    false
}

/// Decodes `%XX` escapes of a URI fragment; `None` if the result is not UTF-8.
pub(super) fn percent_decode(fragment: &str) -> Option<Cow<'_, str>> {
    if !fragment.contains('%') {
        return Some(Cow::Borrowed(fragment));
    }
    let bytes = fragment.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        let escaped = (bytes[index] == b'%')
            .then(|| bytes.get(index + 1..index + 3))
            .flatten()
            .filter(|hex| hex.iter().all(u8::is_ascii_hexdigit))
            .and_then(|hex| std::str::from_utf8(hex).ok())
            .and_then(|hex| u8::from_str_radix(hex, 16).ok());
        match escaped {
            Some(byte) => {
                decoded.push(byte);
                index += 3;
            }
            None => {
                decoded.push(bytes[index]);
                index += 1;
            }
        }
    }
    String::from_utf8(decoded).ok().map(Cow::Owned)
}

/// The number of JSON nodes in `value` (itself, every item, every entry): how much of a
/// value a cast keeps.
pub(super) fn node_count(value: &Value) -> usize {
    match value {
        Value::Array(items) => 1 + items.iter().map(node_count).sum::<usize>(),
        Value::Object(entries) => 1 + entries.values().map(|v| 1 + node_count(v)).sum::<usize>(),
        _ => 1,
    }
}
