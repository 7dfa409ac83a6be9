//! The serde impls of an `#[operation]`'s per-field input object, written once here instead
//! of in every expansion: [`serialize_fields`] writes the fields (a tuple of references, in
//! the order of the operation's [`Field`]s) as a struct, [`deserialize_input`] reads a JSON
//! object and hands it to the operation's one-pass decoder.

use super::Field;
use serde::de::Error as _;
use serde::ser::SerializeStruct;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// A tuple of references to an input object's field values, each written under the name of
/// the [`Field`] at its position. Implemented for tuples of up to 16 fields; the macro
/// writes larger inputs out in full.
pub trait FieldValues {
    /// Writes each value under its field's name.
    fn serialize_into<S: SerializeStruct>(
        self,
        state: &mut S,
        fields: &[Field],
    ) -> Result<(), S::Error>;
}

macro_rules! field_values {
    ($($value:ident $index:tt),+) => {
        impl<$($value: Serialize + ?Sized),+> FieldValues for ($(&$value,)+) {
            fn serialize_into<S: SerializeStruct>(self, state: &mut S, fields: &[Field]) -> Result<(), S::Error> {
                $(state.serialize_field(fields[$index].name, self.$index)?;)+
                Ok(())
            }
        }
    };
}

field_values!(A 0);
field_values!(A 0, B 1);
field_values!(A 0, B 1, C 2);
field_values!(A 0, B 1, C 2, D 3);
field_values!(A 0, B 1, C 2, D 3, E 4);
field_values!(A 0, B 1, C 2, D 3, E 4, F 5);
field_values!(A 0, B 1, C 2, D 3, E 4, F 5, G 6);
field_values!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7);
field_values!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8);
field_values!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9);
field_values!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10);
field_values!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11);
field_values!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12);
field_values!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12, N 13);
field_values!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12, N 13, O 14);
field_values!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12, N 13, O 14, P 15);

/// Writes an input object named `name` with `values` under the names of `fields`.
pub fn serialize_fields<S: Serializer, V: FieldValues>(
    serializer: S,
    name: &'static str,
    fields: &[Field],
    values: V,
) -> Result<S::Ok, S::Error> {
    let mut state = serializer.serialize_struct(name, fields.len())?;
    values.serialize_into(&mut state, fields)?;
    state.end()
}

/// Reads an input object: any JSON value from `deserializer`, then `decode` (the
/// operation's one-pass decoder, which names what is wrong).
pub fn deserialize_input<'de, D: Deserializer<'de>, T>(
    deserializer: D,
    decode: fn(Value) -> Result<T, serde_json::Error>,
) -> Result<T, D::Error> {
    decode(Value::deserialize(deserializer)?).map_err(D::Error::custom)
}
