//! YAML text straight into a `serde_json::Value`, with JSON's view of numbers.
//!
//! `serde_norway` reads the YAML; a visitor builds the JSON value as it goes (no
//! intermediate YAML tree). What differs from a plain `serde_norway::Value`:
//!
//! * **Integers of any size**: beyond 64 bits they become floats, as `serde_json` reads
//!   `18446744073709552000` — `serde_norway::Value` refuses them, which used to reject the
//!   whole document. Infinite and NaN floats (`.inf`, `.nan`) have no JSON form: they
//!   become the strings `".inf"`, `"-.inf"`, `".nan"`.
//! * **Mapping keys** that are not strings (`200:`, `true:`, `~:`) become their text.
//! * **Merge keys** (`<<: *base`, or a list of aliases) copy the keys the mapping does not
//!   set itself.
//! * **Tags** (`!foo value`) are ignored: the value is kept.
//!
//! Nesting is bounded by `serde_norway`'s recursion limit (and flow nesting by
//! [`super::yaml_depth`]).

use serde::de::{self, DeserializeSeed, Deserializer, EnumAccess, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use std::fmt;

/// Parses YAML text into JSON.
pub(crate) fn from_str(text: &str) -> Result<Value, serde_norway::Error> {
    let deserializer = serde_norway::Deserializer::from_str(text);
    JsonValue.deserialize(deserializer)
}

/// Builds a JSON value from whatever the deserializer holds.
struct JsonValue;

impl<'de> DeserializeSeed<'de> for JsonValue {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(ValueVisitor)
    }
}

fn float(f: f64) -> Value {
    match Number::from_f64(f) {
        Some(number) => Value::Number(number),
        None if f.is_nan() => Value::String(".nan".into()),
        None if f > 0.0 => Value::String(".inf".into()),
        None => Value::String("-.inf".into()),
    }
}

struct ValueVisitor;

impl<'de> Visitor<'de> for ValueVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any YAML value")
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        JsonValue.deserialize(d)
    }
    fn visit_bool<E>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Bool(b))
    }
    fn visit_i64<E>(self, n: i64) -> Result<Value, E> {
        Ok(Value::from(n))
    }
    fn visit_u64<E>(self, n: u64) -> Result<Value, E> {
        Ok(Value::from(n))
    }
    fn visit_i128<E>(self, n: i128) -> Result<Value, E> {
        Ok(match i64::try_from(n) {
            Ok(small) => Value::from(small),
            Err(_) => float(n as f64),
        })
    }
    fn visit_u128<E>(self, n: u128) -> Result<Value, E> {
        Ok(match u64::try_from(n) {
            Ok(small) => Value::from(small),
            Err(_) => float(n as f64),
        })
    }
    fn visit_f64<E>(self, f: f64) -> Result<Value, E> {
        Ok(float(f))
    }
    fn visit_str<E>(self, s: &str) -> Result<Value, E> {
        Ok(Value::String(s.to_owned()))
    }
    fn visit_string<E>(self, s: String) -> Result<Value, E> {
        Ok(Value::String(s))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(JsonValue)? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Value, A::Error> {
        let mut map = Map::new();
        let mut merges = Vec::new();
        while let Some(key) = access.next_key_seed(KeyText)? {
            let value = access.next_value_seed(JsonValue)?;
            if key == "<<" {
                merges.push(value);
            } else {
                map.insert(key, value);
            }
        }
        for merge in merges {
            let sources = match merge {
                Value::Array(items) => items,
                other => vec![other],
            };
            for source in sources {
                let Value::Object(source) = source else {
                    return Err(de::Error::custom(
                        "a merge key (<<) must name a mapping or a list of mappings",
                    ));
                };
                for (key, value) in source {
                    map.entry(key).or_insert(value);
                }
            }
        }
        Ok(Value::Object(map))
    }
    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<Value, A::Error> {
        // A tagged value: keep the value, ignore the tag.
        let (_tag, variant) = data.variant_seed(KeyText)?;
        de::VariantAccess::newtype_variant_seed(variant, JsonValue)
    }
}

/// A mapping key (or a tag) as text.
struct KeyText;

impl<'de> DeserializeSeed<'de> for KeyText {
    type Value = String;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<String, D::Error> {
        deserializer.deserialize_any(KeyVisitor)
    }
}

struct KeyVisitor;

impl<'de> Visitor<'de> for KeyVisitor {
    type Value = String;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a scalar mapping key")
    }
    fn visit_unit<E>(self) -> Result<String, E> {
        Ok("null".into())
    }
    fn visit_bool<E>(self, b: bool) -> Result<String, E> {
        Ok(b.to_string())
    }
    fn visit_i64<E>(self, n: i64) -> Result<String, E> {
        Ok(n.to_string())
    }
    fn visit_u64<E>(self, n: u64) -> Result<String, E> {
        Ok(n.to_string())
    }
    fn visit_i128<E>(self, n: i128) -> Result<String, E> {
        Ok(n.to_string())
    }
    fn visit_u128<E>(self, n: u128) -> Result<String, E> {
        Ok(n.to_string())
    }
    fn visit_f64<E>(self, f: f64) -> Result<String, E> {
        Ok(f.to_string())
    }
    fn visit_str<E>(self, s: &str) -> Result<String, E> {
        Ok(s.to_owned())
    }
    fn visit_string<E>(self, s: String) -> Result<String, E> {
        Ok(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn numbers_beyond_64_bits_are_floats_like_json_reads_them() {
        let value = from_str(
            "min: -9223372036854776000\nmax: 18446744073709552000\nsmall: -5\nbig: 18446744073709551615\ninf: .inf\nnan: .nan\n",
        )
        .unwrap();
        let json: Value =
            serde_json::from_str("{\"min\": -9223372036854776000, \"max\": 18446744073709552000}")
                .unwrap();
        assert_eq!(value["min"], json["min"]);
        assert_eq!(value["max"], json["max"]);
        assert_eq!(value["small"], json!(-5));
        assert_eq!(value["big"], json!(u64::MAX));
        assert_eq!(value["inf"], json!(".inf"));
        assert_eq!(value["nan"], json!(".nan"));
    }

    #[test]
    fn keys_merges_aliases_and_tags() {
        let value = from_str(
            "200: ok\ntrue: t\n~: n\nbase: &base {a: 1, b: 2}\nmerged:\n  <<: *base\n  b: 3\nlist:\n  <<: [*base, {c: 4}]\ntagged: !thing {x: 1}\n",
        )
        .unwrap();
        assert_eq!(value["200"], "ok");
        assert_eq!(value["true"], "t");
        assert_eq!(value["null"], "n");
        assert_eq!(value["merged"], json!({"a": 1, "b": 3}));
        assert_eq!(value["list"], json!({"a": 1, "b": 2, "c": 4}));
        assert_eq!(value["tagged"], json!({"x": 1}));
    }
}
