//! Fuzz target: envelope detection (`is_response_envelope`), decoding
//! (`ResponseEnvelope::from_value` and serde) and `unwrap_value` on arbitrary JSON.
//!
//! Checks that they never panic and agree: detection says yes exactly when decoding
//! succeeds, serde then decodes too, `unwrap_value` returns `data` of an envelope and anything
//! else unchanged, and a decoded envelope re-encodes to one that decodes to the same value.
#![no_main]

use libfuzzer_sys::fuzz_target;
use opkit::envelope::{ResponseEnvelope, is_response_envelope, unwrap_value};

fuzz_target!(|bytes: &[u8]| {
    let _ = serde_json::from_slice::<ResponseEnvelope>(bytes);
    let Some(value) = opkit_fuzz::json(bytes) else {
        return;
    };
    let detected = is_response_envelope(&value);
    let decoded = ResponseEnvelope::from_value(value.clone());
    assert_eq!(detected, decoded.is_ok(), "detection and decoding disagree");
    let via_serde = serde_json::from_value::<ResponseEnvelope>(value.clone());
    if let Ok(envelope) = decoded {
        assert!(via_serde.is_ok(), "serde refuses a detected envelope");
        assert_eq!(unwrap_value(value.clone()), value["data"]);
        let wire = serde_json::to_value(&envelope).expect("a decoded envelope encodes");
        assert!(
            is_response_envelope(&wire),
            "a re-encoded envelope is not detected"
        );
        let again = ResponseEnvelope::from_value(wire).expect("a re-encoded envelope decodes");
        assert_eq!(again, envelope);
    } else {
        assert_eq!(unwrap_value(value.clone()), value);
    }
});
