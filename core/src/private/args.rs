//! The input object of an operation that takes one input field per parameter, written once
//! here for every operation instead of in each expansion.
//!
//! An expansion names its operation's fields ([`ArgsShape`]: the JSON names, the parameters'
//! types as a list, one reader per field) and its input type is [`Args<Op>`]; the serde,
//! `Debug` and schema impls below serve every operation. The parameters' types are a cons
//! list, `(A, (B, ()))`, so one pair of impls covers every width.
//!
//! Only the readers require the parameters' traits (`Deserialize`, `JsonSchema`), and each
//! reader comes from the one `typed_field` the macro writes at the parameter's type, so a
//! missing impl is reported once, there. `Serialize` and `Debug` hold when every parameter's
//! type has them, and cost nothing otherwise.

use super::{Field, fields_schema};
use crate::schema::json_type_name;
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::de::Error as _;
use serde::ser::SerializeStruct;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

/// Reads one field's value (`None`: the field was left out).
pub type Reader<T> = fn(Option<Value>) -> Result<T, String>;

/// What an expansion says about its operation's input fields.
pub trait ArgsShape: 'static {
    /// The parameters' types in order, as a cons list: `(A, (B, ()))`.
    type Values: FieldList;
    /// The input object's name, fields and readers (one const: one item per operation).
    const LAYOUT: ArgsLayout<Self::Values>;
}

/// The input object of an operation whose parameters' types are `V`.
pub struct ArgsLayout<V: FieldList> {
    /// The input object's name (`AddInput`), for `Debug`, serializers and the schema.
    pub name: &'static str,
    /// The fields, in parameter order.
    pub fields: &'static [Field],
    /// One reader per field, in the shape of `V`.
    pub read: V::Readers,
}

/// The input object of operation `Op`: its parameters' values, in order.
pub struct Args<Op: ArgsShape> {
    /// The values, as a cons list (`(a, (b, ()))`).
    pub values: Op::Values,
    op: PhantomData<fn() -> Op>,
}

impl<Op: ArgsShape> Args<Op> {
    /// The input object holding `values`.
    pub fn new(values: Op::Values) -> Self {
        Self {
            values,
            op: PhantomData,
        }
    }
}

/// The parameters' types as a cons list: `()` or `(Head, Tail)`.
pub trait FieldList: Sized {
    /// One reader per field.
    type Readers;
    /// One slot per field for its JSON value, filled in one pass over the input object.
    type Slots: Default;
    /// The slot `index` places below this list's head.
    fn slot(slots: &mut Self::Slots, index: usize) -> Option<&mut Option<Value>>;
    /// Reads every slot; `index` is the position of this list's head among the fields.
    fn read(
        slots: Self::Slots,
        readers: &Self::Readers,
        fields: &[Field],
        index: usize,
    ) -> Result<Self, serde_json::Error>;
}

impl FieldList for () {
    type Readers = ();
    type Slots = ();
    fn slot(_: &mut (), _: usize) -> Option<&mut Option<Value>> {
        None
    }
    fn read(_: (), _: &(), _: &[Field], _: usize) -> Result<(), serde_json::Error> {
        Ok(())
    }
}

impl<H, T: FieldList> FieldList for (H, T) {
    type Readers = (Reader<H>, T::Readers);
    type Slots = (Option<Value>, T::Slots);
    fn slot(slots: &mut Self::Slots, index: usize) -> Option<&mut Option<Value>> {
        match index {
            0 => Some(&mut slots.0),
            _ => T::slot(&mut slots.1, index - 1),
        }
    }
    fn read(
        slots: Self::Slots,
        readers: &Self::Readers,
        fields: &[Field],
        index: usize,
    ) -> Result<Self, serde_json::Error> {
        let head = read_slot(slots.0, readers.0, fields[index].name)?;
        Ok((head, T::read(slots.1, &readers.1, fields, index + 1)?))
    }
}

/// Reads one field; a missing field reads as `null` (so `Option<T>` fields are optional).
fn read_slot<T>(
    mut value: Option<Value>,
    read: Reader<T>,
    name: &str,
) -> Result<T, serde_json::Error> {
    if let Some(Value::Number(number)) = &mut value {
        integral_float_as_integer(number);
    }
    read(value).map_err(|error| {
        if error == "missing" {
            serde_json::Error::custom(format_args!("missing field `{name}`"))
        } else {
            serde_json::Error::custom(format_args!("field `{name}`: {error}"))
        }
    })
}

/// Writes a number with a zero fraction (`5.0`) as an integer: JSON Schema counts `5.0` an
/// integer, so it passed the input schema's `"type": "integer"`, but serde will not read a
/// float into an integer type (a float type reads the integer as well, so nothing is lost).
/// Done for a parameter's own value (one check per field); a float nested inside a
/// parameter's array or object is read by serde as it is.
fn integral_float_as_integer(number: &mut serde_json::Number) {
    let Some(float) = number.as_f64().filter(|_| number.is_f64()) else {
        return;
    };
    if float.fract() != 0.0 {
        return;
    }
    if float >= 0.0 && float < u64::MAX as f64 {
        *number = serde_json::Number::from(float as u64);
    } else if float < 0.0 && float >= i64::MIN as f64 {
        *number = serde_json::Number::from(float as i64);
    }
}

/// Reads `Op`'s input from its JSON object in one pass (the registry's decoder): each entry
/// goes to its field's slot (keys that name no field are ignored, as a derived `Deserialize`
/// ignores unknown fields), then each field is read from its slot.
pub fn decode_args<Op: ArgsShape>(input: Value) -> Result<Args<Op>, serde_json::Error> {
    let Value::Object(entries) = input else {
        return Err(serde_json::Error::custom(format_args!(
            "the input must be a JSON object, found {}",
            json_type_name(&input)
        )));
    };
    let mut slots = <<Op::Values as FieldList>::Slots>::default();
    for (key, value) in entries {
        let index = Op::LAYOUT.fields.iter().position(|field| field.name == key);
        if let Some(slot) = index.and_then(|index| Op::Values::slot(&mut slots, index)) {
            *slot = Some(value);
        }
    }
    Op::Values::read(slots, &Op::LAYOUT.read, Op::LAYOUT.fields, 0).map(Args::new)
}

/// The input schema (root, with `$defs`) of `Op`'s input object.
pub fn args_schema<Op: ArgsShape>() -> Value {
    super::fields_input_schema(Op::LAYOUT.fields)
}

/// The values of a field list whose every type is `Serialize`.
pub trait SerializeFields {
    /// Writes each value under the name of its field, from `index` on.
    fn serialize_into<S: SerializeStruct>(
        &self,
        state: &mut S,
        fields: &[Field],
        index: usize,
    ) -> Result<(), S::Error>;
}

impl SerializeFields for () {
    fn serialize_into<S: SerializeStruct>(
        &self,
        _: &mut S,
        _: &[Field],
        _: usize,
    ) -> Result<(), S::Error> {
        Ok(())
    }
}

impl<H: Serialize, T: SerializeFields> SerializeFields for (H, T) {
    fn serialize_into<S: SerializeStruct>(
        &self,
        state: &mut S,
        fields: &[Field],
        index: usize,
    ) -> Result<(), S::Error> {
        state.serialize_field(fields[index].name, &self.0)?;
        self.1.serialize_into(state, fields, index + 1)
    }
}

/// The values of a field list whose every type is `Debug`.
pub trait DebugFields {
    /// Adds each value under the name of its field, from `index` on.
    fn debug_into(&self, out: &mut fmt::DebugStruct<'_, '_>, fields: &[Field], index: usize);
}

impl DebugFields for () {
    fn debug_into(&self, _: &mut fmt::DebugStruct<'_, '_>, _: &[Field], _: usize) {}
}

impl<H: fmt::Debug, T: DebugFields> DebugFields for (H, T) {
    fn debug_into(&self, out: &mut fmt::DebugStruct<'_, '_>, fields: &[Field], index: usize) {
        out.field(fields[index].name, &self.0);
        self.1.debug_into(out, fields, index + 1);
    }
}

impl<'de, Op: ArgsShape> Deserialize<'de> for Args<Op> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        decode_args::<Op>(Value::deserialize(deserializer)?).map_err(D::Error::custom)
    }
}

impl<Op: ArgsShape> Serialize for Args<Op>
where
    Op::Values: SerializeFields,
{
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut state = serializer.serialize_struct(Op::LAYOUT.name, Op::LAYOUT.fields.len())?;
        self.values
            .serialize_into(&mut state, Op::LAYOUT.fields, 0)?;
        state.end()
    }
}

impl<Op: ArgsShape> fmt::Debug for Args<Op>
where
    Op::Values: DebugFields,
{
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = formatter.debug_struct(Op::LAYOUT.name);
        self.values.debug_into(&mut out, Op::LAYOUT.fields, 0);
        out.finish()
    }
}

impl<Op: ArgsShape> JsonSchema for Args<Op> {
    fn schema_name() -> Cow<'static, str> {
        Cow::Borrowed(Op::LAYOUT.name)
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        fields_schema(generator, Op::LAYOUT.fields)
    }
}

#[cfg(test)]
mod tests {
    use super::super::{TypedField, typed_field};
    use super::*;
    use serde_json::json;

    /// An operation of three fields, as an expansion describes it.
    struct Sample;

    const COUNT: TypedField<u32> = typed_field::<u32>("count", None);
    const NAME: TypedField<String> = typed_field::<String>("name", Some(" Who."));
    const NOTE: TypedField<Option<String>> = typed_field::<Option<String>>("note", None);

    impl ArgsShape for Sample {
        type Values = (u32, (String, (Option<String>, ())));
        const LAYOUT: ArgsLayout<Self::Values> = ArgsLayout {
            name: "SampleInput",
            fields: &[COUNT.erase(), NAME.erase(), NOTE.erase()],
            read: (COUNT.reader(), (NAME.reader(), (NOTE.reader(), ()))),
        };
    }

    fn decode(input: Value) -> Result<Args<Sample>, String> {
        decode_args::<Sample>(input).map_err(|error| error.to_string())
    }

    #[test]
    fn reads_each_field_into_its_place_ignoring_unknown_keys() {
        let args = decode(json!({"name": "ann", "extra": [1], "count": 2})).unwrap();
        let (count, (name, (note, ()))) = args.values;
        assert_eq!((count, name.as_str(), note), (2, "ann", None));
    }

    #[test]
    fn an_integral_float_reads_as_an_integer_and_a_fraction_does_not() {
        assert_eq!(
            decode(json!({"count": 5.0, "name": "a"})).unwrap().values.0,
            5
        );
        let error = decode(json!({"count": 5.5, "name": "a"})).unwrap_err();
        assert!(error.starts_with("field `count`: "), "{error}");
    }

    #[test]
    fn errors_name_the_field_and_what_is_wrong() {
        assert_eq!(
            decode(json!({"count": 1})).unwrap_err(),
            "missing field `name`"
        );
        let error = decode(json!({"count": "x", "name": "a"})).unwrap_err();
        assert!(error.starts_with("field `count`: invalid type"), "{error}");
        assert_eq!(
            decode(json!([1, "a"])).unwrap_err(),
            "the input must be a JSON object, found an array"
        );
    }

    #[test]
    fn writes_shows_and_describes_itself_under_the_field_names() {
        let args = Args::<Sample>::new((3, ("bo".to_owned(), (Some("hi".to_owned()), ()))));
        assert_eq!(
            serde_json::to_value(&args).unwrap(),
            json!({"count": 3, "name": "bo", "note": "hi"})
        );
        assert_eq!(
            format!("{args:?}"),
            r#"SampleInput { count: 3, name: "bo", note: Some("hi") }"#
        );
        let schema = args_schema::<Sample>();
        assert_eq!(schema["required"], json!(["count", "name"]));
        assert_eq!(schema["properties"]["name"]["description"], "Who.");
        let back: Args<Sample> = serde_json::from_value(json!({"count": 3, "name": "bo"})).unwrap();
        assert_eq!(back.values.1.0, "bo");
    }
}
