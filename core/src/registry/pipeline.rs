//! The shared result pipeline: detect → wrap → normalize → validate.
//!
//! `execute`, `subscribe` (per item) and the call protocol's handler all finish results here.
//! An envelope whose meta reports an error (MCP `isError: true`) skips normalize and
//! validate: its data is the failure, not the operation's output.

use super::operation::Operation;
use crate::envelope::{ResponseEnvelope, is_response_envelope, local_envelope};
use crate::schema::cast;
use serde_json::Value;

/// Turns whatever a handler returned into the envelope the caller receives.
pub(crate) fn finish(operation: &Operation, value: Value) -> ResponseEnvelope {
    let mut envelope = detect_or_wrap(operation, value);
    // An envelope that reports a failure (MCP `isError: true`) carries the error, not the
    // output: it is neither normalized nor validated against the output schema.
    if let Some(output) = &operation.output
        && !envelope.is_error()
    {
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
