//! Fuzz target: OpenAPI import (`OpenApiImporter::import_str` / `import_value`) of arbitrary
//! JSON or YAML documents, and registration of whatever it imports.
//!
//! Checks that import answers with operations or an `OpenApiError` (no network: only local
//! `$ref`s are followed), and that registering the imported operations — which compiles
//! their input schemas — answers too.
#![no_main]

use libfuzzer_sys::fuzz_target;
use opkit::OperationRegistry;
use opkit_adapters::openapi::{OpenApiImport, OpenApiImporter, OpenApiOptions};

fn register(import: OpenApiImport) {
    let registry = OperationRegistry::new();
    let _ = import.register_into(&registry);
}

fuzz_target!(|bytes: &[u8]| {
    let importer = OpenApiImporter::new(OpenApiOptions::new("fuzz"));
    if let Ok(text) = std::str::from_utf8(bytes)
        && let Ok(import) = importer.import_str(text)
    {
        register(import);
    }
    if let Some(value) = opkit_fuzz::json(bytes)
        && let Ok(import) = importer.import_value(value)
    {
        register(import);
    }
});
