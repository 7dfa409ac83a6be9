//! Helpers shared by the fuzz targets: turning raw fuzzer bytes into the inputs the entry
//! points take.

use serde_json::Value;

/// The bytes as JSON, when they parse (serde_json refuses more than 127 levels of nesting).
pub fn json(bytes: &[u8]) -> Option<Value> {
    serde_json::from_slice(bytes).ok()
}

/// A `[schema, value]` pair; any other JSON is a schema checked against `null`.
pub fn schema_and_value(input: Value) -> (Value, Value) {
    match input {
        Value::Array(mut pair) if pair.len() == 2 => {
            let value = pair.pop().unwrap_or_default();
            let schema = pair.pop().unwrap_or_default();
            (schema, value)
        }
        schema => (schema, Value::Null),
    }
}

/// Splits fuzzer bytes into chunk boundaries and a payload: the first byte's low four bits
/// say how many boundaries follow (at most 15), each one byte (taken modulo the payload
/// length + 1). The first byte's high bits are left to the target.
pub fn cuts_and_payload(bytes: &[u8]) -> (Vec<usize>, &[u8]) {
    let Some((&count, rest)) = bytes.split_first() else {
        return (Vec::new(), bytes);
    };
    let count = usize::from(count % 16).min(rest.len());
    let (raw_cuts, payload) = rest.split_at(count);
    let mut cuts: Vec<usize> = raw_cuts
        .iter()
        .map(|&cut| usize::from(cut) % (payload.len() + 1))
        .collect();
    cuts.sort_unstable();
    (cuts, payload)
}
