//! Fuzz target: input validation (`OperationRegistry::validate_input`) of arbitrary JSON
//! against a registered operation with nested, referenced and constrained properties.
//!
//! Checks that every input is answered with `Ok` or a `ValidationError` listing at least one
//! violation, each with a JSON pointer into the input.
#![no_main]

use libfuzzer_sys::fuzz_target;
use opkit::{ErrorCode, Handler, OperationKind, OperationRegistry, OperationSpec};
use serde_json::json;
use std::sync::LazyLock;

/// Built once: compiling the validator per input would dominate the run.
static REGISTRY: LazyLock<OperationRegistry> = LazyLock::new(|| {
    let registry = OperationRegistry::new();
    let spec = OperationSpec::new("users", "create", OperationKind::Mutation).input_schema(json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "minLength": 1, "pattern": "^[A-Za-z ]+$"},
            "age": {"type": ["integer", "null"], "minimum": 0},
            "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3, "uniqueItems": true},
            "address": {"$ref": "#/$defs/Address"},
            "extra": {"type": "object", "additionalProperties": {"type": "number"}}
        },
        "required": ["name"],
        "additionalProperties": false,
        "$defs": {"Address": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "next": {"$ref": "#/$defs/Address"}},
            "required": ["city"]
        }}
    }));
    registry
        .register(spec, Handler::unary(|input, _| async move { Ok(input) }))
        .expect("a fresh registry accepts the operation");
    registry
});

fuzz_target!(|bytes: &[u8]| {
    let Some(input) = opkit_fuzz::json(bytes) else {
        return;
    };
    let Err(error) = REGISTRY.validate_input("users.create", &input) else {
        return;
    };
    assert_eq!(error.code, ErrorCode::ValidationError);
    let details = error.details.expect("violations are listed");
    let violations = details.as_array().expect("a list of violations");
    assert!(!violations.is_empty());
    for violation in violations {
        let path = violation["path"].as_str().expect("a JSON pointer");
        assert!(
            input.pointer(path).is_some(),
            "{path} is not a pointer into {input}"
        );
    }
});
