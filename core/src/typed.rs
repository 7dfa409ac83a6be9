//! Typed operations: the [`TypedOperation`] trait behind `#[operation]` handles, and [`Input`].

use crate::env::OperationEnv;
use crate::envelope::ResponseEnvelope;
use crate::error::CallError;
use crate::registry::{Handler, OperationRegistry, RegistryError};
use crate::spec::{OperationKind, OperationSpec};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::borrow::Cow;

/// An operation known at compile time, with typed input and output.
///
/// `#[operation]` implements it for the *handle* it generates beside the function: a braced
/// empty struct named after the function (so `add` the fn and `add` the handle live in
/// different namespaces). Use the handle for explicit registration
/// ([`OperationRegistry::register_typed`](crate::OperationRegistry::register_typed)) and typed
/// nested calls ([`OperationEnv::call_typed`](crate::OperationEnv::call_typed)); the handle also
/// has inherent items: `add::ID`, `add::spec()`, `add::input(..)`, and
/// `add::call(&ctx, ..)` (queries and mutations) or `add::subscribe(&ctx, ..)`
/// (subscriptions), which call the function directly, without JSON.
///
/// ```
/// use opkit::prelude::*;
/// use opkit::TypedOperation;
///
/// /// Adds two integers.
/// #[operation(namespace = "math")]
/// async fn add(a: i64, b: i64) -> i64 {
///     a + b
/// }
///
/// assert_eq!(<add as TypedOperation>::ID, "math.add");
/// assert_eq!(add::ID, "math.add");
/// assert_eq!(add::spec().description.as_deref(), Some("Adds two integers."));
/// let input: <add as TypedOperation>::Input = add::input(2, 3);
/// assert_eq!(serde_json::to_value(&input).unwrap(), serde_json::json!({"a": 2, "b": 3}));
/// ```
///
/// Implementing it by hand is possible (the spec and handler must agree with the types), but
/// `#[operation]` is the intended way.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a typed operation",
    label = "not the handle of an `#[operation]`",
    note = "a typed operation is the handle `#[operation]` generates beside its fn, named after it (`add` for `async fn add`), or a type implementing `opkit::TypedOperation` by hand"
)]
pub trait TypedOperation: Send + Sync + 'static {
    /// The operation id, `namespace.name`.
    const ID: &'static str;
    /// Query, mutation or subscription.
    const KIND: OperationKind;
    /// The whole input object: opkit's input object of the operation's fields (one per
    /// parameter, made by `add::input(..)`) for an operation taking its input field by field,
    /// or `T` for a parameter `Input<T>`.
    ///
    /// `#[operation]` makes sure it implements `Deserialize` and `JsonSchema`, and it
    /// implements `Serialize` when every parameter type does (typed calls through an env need
    /// it). The trait itself does not repeat these bounds: `#[operation]` checks each type
    /// where the user wrote it, so a missing impl is one error at that type, and generic code
    /// asks for what it uses (as [`OperationEnv::call_typed`](crate::OperationEnv::call_typed)
    /// does).
    type Input: Send + 'static;
    /// The data of a result (for subscriptions: of one item): `T` for a function returning
    /// `T`, `Result<T, E>` or `ResponseEnvelope<T>`. `#[operation]` makes sure it implements
    /// `Serialize` and `JsonSchema` (checked where written, like `Input`).
    type Output: Send + 'static;

    /// The operation's own timeout in milliseconds (`#[operation(timeout = "..")]`), which
    /// typed calls apply without reading the spec; `#[operation]` sets it.
    #[doc(hidden)]
    const TIMEOUT_MS: Option<u64> = None;

    /// [`ID`](Self::ID) as the shared string local envelopes carry
    /// ([`LocalMeta::operation_id`](crate::envelope::LocalMeta::operation_id)).
    /// `#[operation]` allocates it once per operation, so a typed call's envelope only counts
    /// a reference; by default each call allocates it.
    #[doc(hidden)]
    fn shared_id() -> std::sync::Arc<str> {
        std::sync::Arc::from(Self::ID)
    }

    /// The spec. Schemas are computed once; this clones the cached spec.
    fn spec() -> OperationSpec;

    /// The type-erased JSON handler the registry runs.
    fn handler() -> Handler;
}

/// The whole input of an operation as one value: a parameter `Input<T>` (or the pattern
/// `Input(x): Input<T>`) makes the input object `T` itself, with `T`'s serde attributes and
/// JSON Schema, instead of one field per parameter.
///
/// Serializes, deserializes and describes itself exactly as `T` (transparent).
///
/// ```
/// use opkit::prelude::*;
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct NewUser {
///     name: String,
/// }
///
/// #[operation(namespace = "users", mutation)]
/// async fn create(Input(user): Input<NewUser>) -> String {
///     user.name
/// }
///
/// let schema = create::spec().input_schema;
/// assert_eq!(schema["properties"]["name"]["type"], "string");
/// ```
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct Input<T>(pub T);

impl<T> Input<T> {
    /// Takes the value out.
    pub fn into_inner(self) -> T {
        self.0
    }
}

impl<T> std::ops::Deref for Input<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T> std::ops::DerefMut for Input<T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.0
    }
}

impl<T> From<T> for Input<T> {
    fn from(value: T) -> Self {
        Self(value)
    }
}

impl<T: schemars::JsonSchema> schemars::JsonSchema for Input<T> {
    fn inline_schema() -> bool {
        T::inline_schema()
    }

    fn schema_name() -> Cow<'static, str> {
        T::schema_name()
    }

    fn schema_id() -> Cow<'static, str> {
        T::schema_id()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        T::json_schema(generator)
    }
}

// Typed calls and registration live here, above the registry and the env they extend: those
// modules know nothing of typed handles.

impl OperationRegistry {
    /// Adds the operation of a typed handle: `registry.register_typed::<add>()`.
    ///
    /// ```
    /// use opkit::prelude::*;
    ///
    /// #[operation(namespace = "math")]
    /// async fn double(n: i64) -> i64 {
    ///     n * 2
    /// }
    ///
    /// let registry = OperationRegistry::new();
    /// registry.register_typed::<double>().unwrap();
    /// assert_eq!(registry.specs()[0].id(), "math.double");
    /// ```
    pub fn register_typed<O: TypedOperation>(&self) -> Result<(), RegistryError> {
        self.register_typed_parts(O::spec(), O::handler())
    }
}

impl OperationEnv {
    /// Calls the query or mutation of a typed handle (an `#[operation]` fn's name):
    /// `env.call_typed::<add>(add::input(2, 3))`.
    ///
    /// The input is serialized and the call goes through the env by id like [`call`](Self::call)
    /// (so it works for remote operations too); the result's data is read back as the output
    /// type. Data that does not match it is an `EXECUTION_ERROR`.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use opkit::prelude::*;
    ///
    /// #[operation(namespace = "math")]
    /// async fn add(a: i64, b: i64) -> i64 {
    ///     a + b
    /// }
    ///
    /// let registry = OperationRegistry::new();
    /// registry.register_operation(add).unwrap();
    /// let env = OperationEnv::local(registry);
    /// let sum = env.call_typed::<add>(add::input(2, 3)).await.unwrap();
    /// assert_eq!(sum.data, 5);
    /// # });
    /// ```
    pub async fn call_typed<O>(
        &self,
        input: O::Input,
    ) -> Result<ResponseEnvelope<O::Output>, CallError>
    where
        O: TypedOperation,
        O::Input: serde::Serialize,
        O::Output: serde::de::DeserializeOwned,
    {
        let input = typed_input::<O>(&input)?;
        let envelope = self.call(O::ID, input).await?;
        typed_envelope::<O>(envelope)
    }

    /// Subscribes to the subscription of a typed handle; each item's data is read back as the
    /// output type (a mismatch is an `EXECUTION_ERROR` item).
    pub async fn subscribe_typed<O>(
        &self,
        input: O::Input,
    ) -> Result<
        impl futures::Stream<Item = Result<ResponseEnvelope<O::Output>, CallError>> + Send + use<O>,
        CallError,
    >
    where
        O: TypedOperation,
        O::Input: serde::Serialize,
        O::Output: serde::de::DeserializeOwned,
    {
        use futures::StreamExt;
        let input = typed_input::<O>(&input)?;
        let items = self.subscribe(O::ID, input).await?;
        Ok(items.map(|item| item.and_then(typed_envelope::<O>)))
    }
}

fn typed_input<O: TypedOperation>(input: &O::Input) -> Result<Value, CallError>
where
    O::Input: serde::Serialize,
{
    serde_json::to_value(input).map_err(|error| {
        CallError::execution(format!(
            "the input of `{}` could not be serialized: {error}",
            O::ID
        ))
    })
}

fn typed_envelope<O: TypedOperation>(
    envelope: ResponseEnvelope,
) -> Result<ResponseEnvelope<O::Output>, CallError>
where
    O::Output: serde::de::DeserializeOwned,
{
    envelope.into_typed().map_err(|error| {
        CallError::execution(format!(
            "the result of `{}` does not match its output type: {error}",
            O::ID
        ))
    })
}
