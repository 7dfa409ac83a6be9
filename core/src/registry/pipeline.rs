//! The shared result pipeline: detect → wrap → normalize → validate.
//!
//! `execute`, `subscribe` (per item) and the call protocol's handler all finish results here.
//! An envelope a handler built as one (an import's) skips detect and wrap.
//! An envelope whose meta reports an error (MCP `isError: true`) skips normalize and
//! validate: its data is the failure, not the operation's output.
//!
//! Data returned by an `#[operation]` fn (`T` or `Result<T, E>`, not an envelope) is
//! serialized from `T`, the type its output schema is derived from, so it is wrapped without
//! normalize and validate (a typed path may skip what the type system already guarantees),
//! and serialized once, by whoever reads it: into an edge's bytes
//! ([`Reply::to_json_bytes`]), or into a `Value` envelope. A
//! hand-written `Serialize` that disagrees with the type's `JsonSchema` is passed through as
//! serialized; an envelope such a fn returns is normalized like any handler's.

use super::operation::Operation;
use super::output::{Output, Repr};
use crate::envelope::{ResponseEnvelope, is_response_envelope, local_envelope};
use crate::error::CallError;
use crate::middleware::Reply;
use serde_json::Value;

/// Turns whatever a handler returned into the reply the caller receives: an `#[operation]`
/// fn's data stays in its type until an edge writes it (or someone reads the envelope), JSON
/// is finished into an envelope now.
#[inline]
pub(crate) fn finish(operation: &Operation, output: Output) -> Reply {
    match output.0 {
        Repr::Data(data) => Reply::data(data, operation.result_id.clone()),
        Repr::Value(data) => Reply::new(local_envelope(data, operation.result_id.clone())),
        Repr::Json(value) => Reply::new(finish_json(operation, value)),
        Repr::Envelope(envelope) => Reply::new(checked(operation, *envelope)),
    }
}

/// [`finish`] for a caller that takes the envelope itself (`execute`): the data a handler
/// serialized for it ([`DataForm::Value`](super::output::DataForm::Value)) is wrapped in
/// place, without a [`Reply`] in between.
#[inline]
pub(crate) fn finish_envelope(
    operation: &Operation,
    output: Output,
) -> Result<ResponseEnvelope, CallError> {
    match output.0 {
        Repr::Value(data) => Ok(local_envelope(data, operation.result_id.clone())),
        Repr::Json(value) => Ok(finish_json(operation, value)),
        Repr::Data(data) => Reply::data(data, operation.result_id.clone()).into_envelope(),
        Repr::Envelope(envelope) => Ok(checked(operation, *envelope)),
    }
}

/// Turns JSON a handler returned into the envelope the caller receives.
///
/// Inlined, so the common envelope is built in its caller's result rather than copied there.
#[inline]
fn finish_json(operation: &Operation, value: Value) -> ResponseEnvelope {
    // Data an `#[operation]` fn returned was serialized from the type its output schema is
    // derived from: normalize and validate would find nothing to change or report.
    if operation.output_from_type && !is_response_envelope(&value) {
        return local_envelope(value, operation.result_id.clone());
    }
    finish_checked(operation, value)
}

/// [`finish`] for results that may need normalizing and validating.
fn finish_checked(operation: &Operation, value: Value) -> ResponseEnvelope {
    checked(operation, detect_or_wrap(operation, value))
}

/// Step 3: `envelope`'s data normalized and validated against the operation's output schema.
fn checked(operation: &Operation, mut envelope: ResponseEnvelope) -> ResponseEnvelope {
    // An envelope that reports a failure (MCP `isError: true`) carries the error, not the
    // output: it is neither normalized nor validated against the output schema.
    if let Some(output) = operation.output()
        && !envelope.is_error()
    {
        // Fast path: data that already fits the closed schema is exactly what `cast` returns
        // for it, and valid, so normalize and validate would change and report nothing.
        if output.closed.as_ref().is_some_and(|closed| {
            !has_integral_float(&envelope.data) && closed.is_valid(&envelope.data)
        }) {
            return envelope;
        }
        let data = std::mem::take(&mut envelope.data);
        envelope.data = operation.spec.output_schema.cast(data);
        if let Err(violations) = output.validator.validate(&envelope.data) {
            tracing::warn!(
                operation = %operation.id,
                violations = ?violations,
                "output does not match the operation's output schema"
            );
        }
    }
    envelope
}

/// Steps 1 and 2: an envelope passes through, anything else is wrapped as local data.
fn detect_or_wrap(operation: &Operation, value: Value) -> ResponseEnvelope {
    if is_response_envelope(&value) {
        if let Ok(envelope) = ResponseEnvelope::from_value(value) {
            return envelope;
        }
        unreachable!("is_response_envelope accepted a value from_value rejects")
    }
    local_envelope(value, operation.result_id.clone())
}

/// `true` when `value` holds a float with no fractional part anywhere (`3.0`), which `cast`
/// rewrites as an integer for `integer` schemas.
fn has_integral_float(value: &Value) -> bool {
    match value {
        Value::Number(number) => {
            !number.is_i64()
                && !number.is_u64()
                && number.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        Value::Array(items) => items.iter().any(has_integral_float),
        Value::Object(map) => map.values().any(has_integral_float),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{CompiledSchema, closed_schema};
    use serde_json::json;

    /// Whenever the closed schema takes the fast path, `cast` would have returned the data
    /// unchanged; data it refuses still reaches `cast`.
    #[test]
    fn fast_path_agrees_with_cast() {
        let address = json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]});
        let schema = json!({
            "type": "object",
            "properties": {
                "n": {"type": "integer", "minimum": 0},
                "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
                "address": {"$ref": "#/$defs/Address"},
                "note": {"type": ["string", "null"], "default": "x"},
                "map": {"type": "object", "additionalProperties": {"type": "integer"}},
                "free": {"type": "object"}
            },
            "required": ["n", "address"],
            "$defs": {"Address": address}
        });
        let closed = CompiledSchema::compile(&closed_schema(&schema).unwrap()).unwrap();
        let cases = [
            (json!({"n": 1, "address": {"city": "x"}}), true),
            (
                json!({"n": 1, "address": {"city": "x"}, "tags": ["a"], "note": null, "map": {"k": 2}, "free": {"z": 1}}),
                true,
            ),
            (json!({"n": 1, "address": {"city": "x"}, "extra": 1}), false),
            (json!({"n": 1, "address": {"city": "x", "zip": "1"}}), false),
            (json!({"n": 1.0, "address": {"city": "x"}}), false),
            (json!({"n": "1", "address": {"city": "x"}}), false),
            (json!({"address": {"city": "x"}}), false),
        ];
        for (data, fast) in cases {
            let taken = !has_integral_float(&data) && closed.is_valid(&data);
            assert_eq!(taken, fast, "{data}");
            if taken {
                assert_eq!(crate::schema::cast(&schema, data.clone()), data);
            }
        }
    }
}
