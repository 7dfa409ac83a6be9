//! Fuzz target: compiling arbitrary JSON Schemas (`CompiledSchema::compile`) and validating
//! arbitrary values with them.
//!
//! The input is JSON `[schema, value]` (any other JSON is a schema checked against `null`).
//! Checks that compiling answers with a validator or a `SchemaError`, that `is_valid` and
//! `validate` agree, and that every violation's path is a JSON pointer into the value.
#![no_main]

use libfuzzer_sys::fuzz_target;
use opkit::schema::CompiledSchema;

fuzz_target!(|bytes: &[u8]| {
    let Some(input) = opkit_fuzz::json(bytes) else {
        return;
    };
    let (schema, value) = opkit_fuzz::schema_and_value(input);
    let Ok(validator) = CompiledSchema::compile(&schema) else {
        return;
    };
    match validator.validate(&value) {
        Ok(()) => assert!(validator.is_valid(&value)),
        Err(violations) => {
            assert!(!validator.is_valid(&value));
            assert!(!violations.is_empty());
            for violation in violations {
                assert!(
                    value.pointer(&violation.path).is_some(),
                    "{} is not a pointer into {value}",
                    violation.path
                );
            }
        }
    }
});
