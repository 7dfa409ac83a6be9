//! Fuzz target: call-protocol wire-event decoding (`CallEvent::from_slice`) on arbitrary
//! bytes.
//!
//! Checks that decoding answers with an event or a `WireError`, that decoding the bytes (the
//! fast path straight from bytes, else through a JSON tree) and decoding their JSON accept
//! the same inputs and give the same event, and that a decoded event re-encodes to bytes that
//! decode to the same event.
#![no_main]

use libfuzzer_sys::fuzz_target;
use opkit::protocol::CallEvent;

fuzz_target!(|bytes: &[u8]| {
    let decoded = CallEvent::from_slice(bytes);
    if let Some(value) = opkit_fuzz::json(bytes) {
        let from_value = CallEvent::from_value(value);
        match (&decoded, &from_value) {
            (Ok(from_bytes), Ok(from_value)) => assert_eq!(from_bytes, from_value),
            (Err(_), Err(_)) => {}
            _ => panic!("bytes and JSON decode differently: {decoded:?} / {from_value:?}"),
        }
    }
    if let Ok(event) = decoded {
        let wire = event.to_bytes().expect("a decoded event encodes");
        let again = CallEvent::from_slice(&wire).expect("a re-encoded event decodes");
        assert_eq!(again, event);
    }
});
