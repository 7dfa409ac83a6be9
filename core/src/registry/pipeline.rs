//! The shared result pipeline: detect → wrap → normalize → validate.
//!
//! `execute`, `subscribe` (per item) and the call protocol's handler all finish results here.

use super::operation::Operation;
use crate::envelope::{ResponseEnvelope, is_response_envelope, local_envelope};
use crate::schema::cast;
use serde_json::Value;

/// Turns whatever a handler returned into the envelope the caller receives.
pub(crate) fn finish(operation: &Operation, value: Value) -> ResponseEnvelope {
    let mut envelope = detect_or_wrap(operation, value);
    if let Some(output) = &operation.output {
        let data = std::mem::take(&mut envelope.data);
        envelope.data = cast(&output.schema, data);
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
    local_envelope(value, &*operation.id)
}
