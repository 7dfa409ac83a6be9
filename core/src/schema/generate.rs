//! Schema generation from Rust types with schemars (JSON Schema 2020-12), in standard
//! JSON Schema (see [`standard_formats`]).

use super::standard_formats;
use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::Value;

/// The JSON Schema (2020-12) of `T`, as schemars derives it for serialization, with its
/// numeric formats made standard ([`standard_formats`]).
///
/// ```
/// let schema = opkit::schema::schema_for::<Vec<u8>>();
/// assert_eq!(schema["type"], "array");
/// ```
pub fn schema_for<T: JsonSchema + ?Sized>() -> Value {
    let mut schema = SchemaSettings::draft2020_12()
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value();
    standard_formats(&mut schema);
    schema
}

/// The JSON Schema (2020-12) of `T` as an *input*: the deserialization view, so fields with
/// defaults are optional (numeric formats made standard, as in [`schema_for`]).
pub fn input_schema_for<T: JsonSchema + ?Sized>() -> Value {
    let mut settings = SchemaSettings::draft2020_12();
    settings.contract = schemars::generate::Contract::Deserialize;
    let mut schema = settings
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value();
    standard_formats(&mut schema);
    schema
}
