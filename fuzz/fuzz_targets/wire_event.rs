//! Fuzz target: call-protocol wire-event decoding (`CallEvent::from_slice`) on arbitrary
//! bytes.
//!
//! Checks that decoding answers with an event or a `WireError`, that decoding the bytes and
//! decoding their JSON agree, and that a decoded event re-encodes to bytes that decode to
//! the same event.
#![no_main]

use libfuzzer_sys::fuzz_target;
use opkit::protocol::CallEvent;

fuzz_target!(|bytes: &[u8]| {
    let decoded = CallEvent::from_slice(bytes);
    if let Some(value) = opkit_fuzz::json(bytes) {
        let from_value = CallEvent::from_value(value);
        assert_eq!(
            decoded.is_ok(),
            from_value.is_ok(),
            "bytes and JSON decode differently"
        );
    }
    if let Ok(event) = decoded {
        let wire = event.to_bytes().expect("a decoded event encodes");
        let again = CallEvent::from_slice(&wire).expect("a re-encoded event decodes");
        assert_eq!(again, event);
    }
});
