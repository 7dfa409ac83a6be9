//! The digest a signature binds a JSON value by: SHA-256 over the value's canonical form,
//! written as unpadded base64url.
//!
//! The canonical form is the value's compact JSON with every object's keys sorted by their
//! UTF-8 bytes, strings and numbers written as `serde_json` writes them. Signer and verifier
//! read the same value (the verifier decodes the signer's bytes), so the form only has to be
//! deterministic for one value whatever order its keys were built or parsed in: a caller
//! whose `serde_json` keeps insertion order and a handler whose does not still agree.

use aws_lc_rs::digest::{Context, SHA256};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::Value;
use std::io;

/// The digest of `value`'s canonical form.
pub(crate) fn of(value: &Value) -> String {
    let mut hasher = Hasher(Context::new(&SHA256));
    // Writing into a hasher cannot fail, and serde_json writes any `Value`.
    let _ = write_canonical(&mut hasher, value);
    URL_SAFE_NO_PAD.encode(hasher.0.finish())
}

/// Feeds whatever is written into the digest.
struct Hasher(Context);

impl io::Write for Hasher {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.0.update(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn write_canonical(out: &mut Hasher, value: &Value) -> io::Result<()> {
    use io::Write;
    match value {
        Value::Object(fields) => {
            let mut sorted: Vec<(&String, &Value)> = fields.iter().collect();
            sorted.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            out.write_all(b"{")?;
            for (index, (key, field)) in sorted.into_iter().enumerate() {
                if index > 0 {
                    out.write_all(b",")?;
                }
                serde_json::to_writer(&mut *out, key)?;
                out.write_all(b":")?;
                write_canonical(out, field)?;
            }
            out.write_all(b"}")
        }
        Value::Array(items) => {
            out.write_all(b"[")?;
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.write_all(b",")?;
                }
                write_canonical(out, item)?;
            }
            out.write_all(b"]")
        }
        scalar => serde_json::to_writer(out, scalar).map_err(io::Error::from),
    }
}

#[cfg(test)]
mod tests {
    use super::of;
    use serde_json::json;

    #[test]
    fn key_order_does_not_matter_and_content_does() {
        let one: serde_json::Value =
            serde_json::from_str(r#"{"b":1,"a":[true,{"y":"x","x":2.5}]}"#).unwrap();
        let two = json!({"a": [true, {"x": 2.5, "y": "x"}], "b": 1});
        assert_eq!(of(&one), of(&two));
        assert_ne!(of(&json!({"a": 1})), of(&json!({"a": 2})));
        assert_ne!(of(&json!({"a": "1"})), of(&json!({"a": 1})));
        assert_ne!(of(&json!([1, 2])), of(&json!([2, 1])));
        assert_eq!(of(&json!({})).len(), 43);
    }
}
