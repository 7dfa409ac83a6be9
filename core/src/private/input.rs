//! The input side of an `#[operation]`: parameter checks, `Input<T>`, the per-field input
//! object's fields (the object itself is `args`), and `State<T>` parameters.

use super::*;

/// One parameter of an operation with one input field per parameter, type-erased.
pub struct Field {
    /// The JSON name.
    pub name: &'static str,
    /// The parameter's doc comment.
    pub description: Option<&'static str>,
    /// The field's schema.
    pub schema: fn(&mut SchemaGenerator) -> Schema,
    /// Whether the field may be left out (its type accepts `null`, like `Option<T>`).
    pub optional: fn() -> bool,
}

/// One parameter of type `T`: the only place generated code requires `T`'s traits, so a
/// missing impl is reported once, at the parameter's type.
pub struct TypedField<T> {
    field: Field,
    read: Reader<T>,
}

/// The field `name` of type `T`.
pub const fn typed_field<T: ParamDeserialize + ParamSchema>(
    name: &'static str,
    description: Option<&'static str>,
) -> TypedField<T> {
    TypedField {
        field: Field {
            name,
            description,
            schema: field_schema::<T>,
            optional: field_optional::<T>,
        },
        read: read_field::<T>,
    }
}

impl<T> TypedField<T> {
    /// The field's reader.
    pub const fn reader(&self) -> Reader<T> {
        self.read
    }

    /// The type-erased field, for the input schema.
    pub const fn erase(&self) -> Field {
        Field {
            name: self.field.name,
            description: self.field.description,
            schema: self.field.schema,
            optional: self.field.optional,
        }
    }
}

fn field_schema<T: JsonSchema>(generator: &mut SchemaGenerator) -> Schema {
    generator.subschema_for::<T>()
}

/// A field of type `T` may be left out when `T` deserializes from `null` (`Option<T>`, `()`,
/// `serde_json::Value`); a missing field is then read as `null`.
fn field_optional<T: DeserializeOwned>() -> bool {
    serde_json::from_value::<T>(Value::Null).is_ok()
}

fn read_field<T: DeserializeOwned>(value: Option<Value>) -> Result<T, String> {
    match value {
        Some(value) => serde_json::from_value(value).map_err(|error| error.to_string()),
        None => serde_json::from_value(Value::Null).map_err(|_| "missing".to_owned()),
    }
}

/// The object schema of a generated input struct, with its definitions kept in `generator`.
pub fn fields_schema(generator: &mut SchemaGenerator, fields: &[Field]) -> Schema {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for field in fields {
        let mut schema = (field.schema)(generator);
        if let Some(description) = field.description.map(normalize_doc) {
            schema.insert("description".to_owned(), Value::from(description));
        }
        properties.insert(field.name.to_owned(), schema.to_value());
        if !(field.optional)() {
            required.push(Value::from(field.name));
        }
    }
    let mut object = Map::new();
    object.insert("type".to_owned(), Value::from("object"));
    object.insert("properties".to_owned(), Value::Object(properties));
    if !required.is_empty() {
        object.insert("required".to_owned(), Value::Array(required));
    }
    Schema::from(object)
}

/// The input schema (root, with `$defs`) of a generated input struct.
pub fn fields_input_schema(fields: &[Field]) -> Value {
    let mut generator = generator(Contract::Deserialize);
    let mut schema = fields_schema(&mut generator, fields).to_value();
    let definitions = generator.take_definitions(true);
    if let Value::Object(object) = &mut schema {
        let mut root = Map::new();
        root.insert(
            "$schema".to_owned(),
            Value::from("https://json-schema.org/draft/2020-12/schema"),
        );
        root.append(object);
        if !definitions.is_empty() {
            root.insert("$defs".to_owned(), Value::Object(definitions));
        }
        *object = root;
    }
    crate::schema::standard_formats(&mut schema);
    schema
}

/// A parameter type must be readable from the JSON input.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be an operation parameter: it does not implement `serde::Deserialize`",
    label = "the operation reads this parameter from its JSON input",
    note = "derive it on your type: `#[derive(serde::Deserialize, schemars::JsonSchema)]`",
    note = "for a type from another crate, enable its `serde` feature or wrap it in a type of yours"
)]
pub trait ParamDeserialize: DeserializeOwned {}
impl<T: DeserializeOwned> ParamDeserialize for T {}

/// A parameter type must describe itself as a JSON Schema.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be an operation parameter: it does not implement `schemars::JsonSchema`",
    label = "the operation's input schema is derived from this type",
    note = "derive it on your type: `#[derive(serde::Deserialize, schemars::JsonSchema)]`",
    note = "for a type from another crate, enable the feature that implements `JsonSchema` for it: schemars' own (e.g. `schemars = {{ version = \"1\", features = [\"uuid1\"] }}` for `uuid::Uuid`, `chrono04` for chrono, `url2` for `url::Url`) or the type's crate's `schemars` feature, where it has one; or wrap it in a type of yours"
)]
pub trait ParamSchema: JsonSchema {}
impl<T: JsonSchema> ParamSchema for T {}

/// A parameter written `Input<T>` must be `opkit::Input<T>`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not `opkit::Input<T>`",
    label = "a parameter whose type is named `Input<..>` is read as the whole input",
    note = "use `opkit::Input<T>` (in `opkit::prelude`), or rename your own `Input` type"
)]
pub trait IsInput {
    /// What the input holds.
    type Inner;
    /// Wraps the whole input.
    fn wrap(inner: Self::Inner) -> Self;
    /// Unwraps it.
    fn unwrap(self) -> Self::Inner;
}
impl<T> IsInput for Input<T> {
    type Inner = T;
    fn wrap(inner: T) -> Self {
        Input(inner)
    }
    fn unwrap(self) -> T {
        self.0
    }
}

/// Wraps the whole input as the `Input<T>` parameter.
pub fn wrap_input<I: IsInput>(inner: I::Inner) -> I {
    I::wrap(inner)
}

/// The whole input held by an `Input<T>` argument.
pub fn unwrap_input<I: IsInput>(input: I) -> I::Inner {
    input.unwrap()
}

/// A parameter whose type is named `OperationContext` must be opkit's.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not `opkit::OperationContext`",
    label = "a parameter whose type is named `OperationContext` receives the call's context",
    note = "use `&opkit::OperationContext` (in `opkit::prelude`), or rename your own type"
)]
pub trait IsContext {}
impl IsContext for OperationContext {}

/// Checks a context parameter's type.
pub fn assert_context<T: IsContext + ?Sized>() {}

// ---------------------------------------------------------------------------------------------
// Application state

/// A parameter whose type is named `State<..>` must be opkit's.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not `opkit::State<T>`",
    label = "a parameter whose type is named `State<..>` receives the application state",
    note = "use `opkit::State<T>` (in `opkit::prelude`), or rename your own `State` type"
)]
pub trait IsState {}
impl<T> IsState for State<T> {}

/// Checks a state parameter's type.
pub fn assert_state_param<S: IsState>() {}

/// What application state must be: cloned out for each call, shared across tasks.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be application state: it must be `Clone + Send + Sync + 'static`",
    label = "each call gets a clone of the state the registry was given",
    note = "wrap it in an `Arc`: `State<Arc<{Self}>>`, given with `registry.with_state(Arc::new(..))`; or derive `Clone` when a clone is cheap (a pool handle)"
)]
pub trait StateValue: Clone + Send + Sync + 'static {}
impl<T: Clone + Send + Sync + 'static> StateValue for T {}

/// The `State<T>` argument of operation `id`, cloned from the context's state.
pub fn state<T: StateValue>(ctx: &OperationContext, id: &str) -> Result<State<T>, CallError> {
    ctx.state_opt::<T>()
        .cloned()
        .map(State)
        .ok_or_else(|| crate::state::missing_state(Some(id), std::any::type_name::<T>()))
}

/// The key of the state `T`, for the spec.
pub fn state_key<T: 'static>() -> StateKey {
    StateKey::of::<T>()
}

/// A stream that fails at once (a state the stream fn needs is missing).
pub fn failed_stream<T>(error: CallError) -> impl Stream<Item = Result<T, CallError>> {
    stream::once(async move { Err(error) })
}
