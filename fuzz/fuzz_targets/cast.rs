//! Fuzz target: normalization (`opkit::schema::cast`) on arbitrary schema/value pairs.
//!
//! The input is JSON `[schema, value]` (any other JSON is a schema cast against `null`).
//! Checks that `cast` returns (its depth and creation budgets bound the work) without
//! panicking, and that it is idempotent whenever its output satisfies the schema: a value
//! that fits stays as it is.
#![no_main]

use libfuzzer_sys::fuzz_target;
use opkit::schema::{CompiledSchema, cast};

fuzz_target!(|bytes: &[u8]| {
    let Some(input) = opkit_fuzz::json(bytes) else {
        return;
    };
    let (schema, value) = opkit_fuzz::schema_and_value(input);
    let output = cast(&schema, value);
    let again = cast(&schema, output.clone());
    if let Ok(validator) = CompiledSchema::compile(&schema)
        && validator.is_valid(&output)
    {
        assert_eq!(again, output, "cast changed a value that fits {schema}");
    }
});
