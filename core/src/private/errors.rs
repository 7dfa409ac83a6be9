//! The error side of an `#[operation]`: turning the fn's error type into a `CallError`
//! (`Into<CallError>`, `std::error::Error`, `anyhow`), chosen by deref probes.

use super::*;

/// Probe choosing how the error `E` of a returned `Result<T, E>` becomes a `CallError`, by
/// deref specialization on `ErrorProbe(&error).opkit_error_kind()`: a conversion into
/// `CallError` the user wrote ([`ConvertInto`]) wins over reading the error as a
/// `std::error::Error` ([`ConvertStdError`], one deref further), then `anyhow::Error`
/// ([`ConvertAnyhow`]); any other type gets [`ConvertUnsupported`], whose conversion does not
/// compile. Each step is an inherent method, so an expansion imports no probe trait.
pub struct ErrorProbe<'a, E>(pub &'a E);

/// The error converts into `CallError` (`impl From<E> for CallError`, `CallError` itself,
/// `String`, `&str`, a boxed error).
pub struct ConvertInto;
/// The error is a `std::error::Error`: `EXECUTION_ERROR` with its message and source chain.
pub struct ConvertStdError;
/// The error is an `anyhow::Error`: `EXECUTION_ERROR` with its message and chain.
pub struct ConvertAnyhow;
/// The error is none of those.
pub struct ConvertUnsupported;

impl<E: Into<CallError>> ErrorProbe<'_, E> {
    /// First choice: the error converts into `CallError`.
    pub fn opkit_error_kind(&self) -> ConvertInto {
        ConvertInto
    }
}

/// An [`ErrorProbe`] one deref further: the error does not convert into `CallError`.
pub struct NotInto<E>(PhantomData<E>);

impl<E: std::error::Error + Send + Sync + 'static> NotInto<E> {
    /// Second choice: the error is a `std::error::Error`.
    pub fn opkit_error_kind(&self) -> ConvertStdError {
        ConvertStdError
    }
}

/// Two derefs further: nor is it a `std::error::Error`.
pub struct NotStdError<E>(PhantomData<E>);

#[cfg(feature = "anyhow")]
impl NotStdError<anyhow::Error> {
    /// Third choice: the error is an `anyhow::Error` (with the `anyhow` feature).
    pub fn opkit_error_kind(&self) -> ConvertAnyhow {
        ConvertAnyhow
    }
}

/// Three derefs further: an error opkit cannot convert.
pub struct NoConversion;

impl NoConversion {
    /// Last choice: no conversion.
    pub fn opkit_error_kind(&self) -> ConvertUnsupported {
        ConvertUnsupported
    }
}

impl<'a, E> std::ops::Deref for ErrorProbe<'a, E> {
    type Target = NotInto<E>;
    fn deref(&self) -> &NotInto<E> {
        &NotInto(PhantomData)
    }
}

impl<E> std::ops::Deref for NotInto<E> {
    type Target = NotStdError<E>;
    fn deref(&self) -> &NotStdError<E> {
        &NotStdError(PhantomData)
    }
}

impl<E> std::ops::Deref for NotStdError<E> {
    type Target = NoConversion;
    fn deref(&self) -> &NoConversion {
        &NoConversion
    }
}

impl ConvertInto {
    /// The user's conversion.
    pub fn into_call_error<E: Into<CallError>>(self, error: E) -> CallError {
        error.into()
    }
}

impl ConvertStdError {
    /// `EXECUTION_ERROR` with the error's message and source chain.
    pub fn into_call_error<E: std::error::Error + Send + Sync + 'static>(
        self,
        error: E,
    ) -> CallError {
        error_chain(&error)
    }
}

#[cfg(feature = "anyhow")]
impl ConvertAnyhow {
    /// `EXECUTION_ERROR` with the error's message and chain.
    pub fn into_call_error(self, error: anyhow::Error) -> CallError {
        error_chain(error.as_ref())
    }
}

impl ConvertUnsupported {
    /// Does not compile: `E` is not an error opkit can convert.
    pub fn into_call_error<E: OperationError>(self, error: E) -> CallError {
        error.into_call_error()
    }
}

/// The error of an operation must convert into `CallError` or be a `std::error::Error`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be the error of an operation: implement `std::error::Error` for it, or `From<{Self}>` for `opkit::CallError`",
    label = "the `Err` of this `Result` becomes the call's error",
    note = "an error converts when it implements `Into<opkit::CallError>` or is a `std::error::Error + Send + Sync + 'static`; this one is neither",
    note = "a `std::error::Error` (e.g. `#[derive(Debug, thiserror::Error)]` with an `#[error(\"..\")]` message) becomes an `EXECUTION_ERROR` with its message and source chain; `impl From<{Self}> for opkit::CallError` chooses the code and details instead",
    note = "a boxed error must be `Box<dyn std::error::Error + Send + Sync>`; for `anyhow::Result<T>`, enable the `anyhow` feature of `opkit`"
)]
pub trait OperationError {
    /// The call's error.
    fn into_call_error(self) -> CallError;
}

/// A type that is no operation and no error: it implements the traits that are required only
/// to fail with their message, which keeps the compiler from suggesting impls of them.
pub struct Unimplemented;

#[diagnostic::do_not_recommend]
impl OperationError for Unimplemented {
    fn into_call_error(self) -> CallError {
        unreachable!()
    }
}

/// The error of an operation written `anyhow::Error` (or `anyhow::Result<T>`): converted
/// with opkit's `anyhow` feature, a compile error naming the feature without it.
#[diagnostic::on_unimplemented(
    message = "operation errors of type `anyhow::Error` need opkit's `anyhow` feature: enable it, `opkit = {{ version = \"0.1\", features = [\"anyhow\"] }}`",
    label = "this `anyhow::Error` becomes the call's error only with opkit's `anyhow` feature",
    note = "with the feature, an `anyhow::Error` becomes an `EXECUTION_ERROR` with its message and its chain of causes"
)]
pub trait AnyhowError {
    /// The call's error.
    fn into_call_error(self) -> CallError;
}

#[cfg(feature = "anyhow")]
#[diagnostic::do_not_recommend]
impl AnyhowError for anyhow::Error {
    fn into_call_error(self) -> CallError {
        error_chain(self.as_ref())
    }
}

#[diagnostic::do_not_recommend]
impl AnyhowError for Unimplemented {
    fn into_call_error(self) -> CallError {
        unreachable!()
    }
}

/// Converts an error written `anyhow::Error`.
pub fn anyhow_error<E: AnyhowError>(error: E) -> CallError {
    error.into_call_error()
}

/// The error conversion of plain data and envelopes, which have no error.
pub fn no_error(never: std::convert::Infallible) -> CallError {
    match never {}
}

/// `EXECUTION_ERROR` for a `std::error::Error`: the message is the error's, followed by the
/// messages of its sources (`"outer: inner: root"`, a source already quoted by the message
/// before it is not repeated); `details` is `{"chain": [outer, inner, root]}` when the error
/// has sources.
pub fn error_chain(error: &(dyn std::error::Error + 'static)) -> CallError {
    const MAX_SOURCES: usize = 32;
    let mut message = error.to_string();
    let mut chain = vec![Value::from(message.clone())];
    let mut source = error.source();
    while let Some(cause) = source {
        if chain.len() > MAX_SOURCES {
            break;
        }
        let text = cause.to_string();
        if !message.contains(&text) {
            message.push_str(": ");
            message.push_str(&text);
        }
        chain.push(Value::from(text));
        source = cause.source();
    }
    let error = CallError::execution(message);
    if chain.len() > 1 {
        let mut details = Map::new();
        details.insert("chain".to_owned(), Value::Array(chain));
        error.with_details(Value::Object(details))
    } else {
        error
    }
}
