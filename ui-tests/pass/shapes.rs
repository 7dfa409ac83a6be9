//! Every supported signature shape compiles, and its handle has the expected types.
use futures::stream::{self, BoxStream};
use opkit::envelope::local_envelope;
use opkit::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, schemars::JsonSchema)]
struct NewUser {
    name: String,
}

#[derive(Serialize, Deserialize, schemars::JsonSchema)]
struct User {
    id: u64,
    name: String,
}

#[derive(Debug)]
struct Failure;

impl From<Failure> for CallError {
    fn from(_: Failure) -> Self {
        CallError::execution("failed")
    }
}

/// Plain data.
#[operation(namespace = "shapes")]
async fn plain(a: i64, b: i64) -> i64 {
    a + b
}

/// No parameters, no return type.
#[operation(namespace = "shapes", mutation)]
async fn nothing() {}

/// Unit, written out.
#[operation(namespace = "shapes", mutation)]
async fn unit(_flag: bool) -> () {}

/// `Result` with `CallError`.
#[operation(namespace = "shapes")]
async fn fallible(ctx: &OperationContext, n: u32) -> Result<u32, CallError> {
    let _ = ctx.request_id();
    Ok(n)
}

/// `Result` with an error of the user's that converts into `CallError`.
#[operation(namespace = "shapes")]
async fn own_error(n: u32) -> Result<u32, Failure> {
    if n > 0 { Ok(n) } else { Err(Failure) }
}

mod errors {
    /// An alias whose last segment is `Result` is read as a `Result`.
    pub type Result<T> = std::result::Result<T, super::Failure>;
}

/// A `Result` alias.
#[operation(namespace = "shapes")]
async fn alias_result(path: String) -> errors::Result<String> {
    Ok(path)
}

/// An envelope, passed through.
#[operation(namespace = "shapes")]
async fn envelope(n: u32) -> ResponseEnvelope<u32> {
    local_envelope(n, "elsewhere.op")
}

/// An envelope of JSON.
#[operation(namespace = "shapes")]
async fn json_envelope() -> ResponseEnvelope {
    local_envelope(serde_json::json!({"a": 1}), "elsewhere.op")
}

/// An envelope or an error.
#[operation(namespace = "shapes")]
async fn fallible_envelope(n: u32) -> Result<ResponseEnvelope<u32>, CallError> {
    Ok(local_envelope(n, "elsewhere.op"))
}

/// The whole input, destructured, with the context by value.
#[operation(namespace = "shapes", mutation, access(scopes = ["users:write"], roles = ["admin"]))]
async fn create(Input(user): Input<NewUser>, ctx: OperationContext) -> Result<User, CallError> {
    let _ = ctx;
    Ok(User { id: 1, name: user.name })
}

/// The whole input, not destructured.
#[operation(namespace = "shapes", name = "create_again", mutation)]
async fn create2(user: Input<NewUser>) -> User {
    User { id: 2, name: user.0.name }
}

/// A stream of data from a plain fn.
#[operation(namespace = "shapes", subscription)]
fn ticks(count: u32) -> impl Stream<Item = u32> + Send + 'static {
    stream::iter(0..count)
}

/// A stream of results from a plain fn taking the context.
#[operation(namespace = "shapes", subscription)]
fn fallible_ticks(ctx: &OperationContext, count: u32) -> impl Stream<Item = Result<u32, CallError>> + Send + 'static {
    let _ = ctx.request_id();
    stream::iter((0..count).map(Ok))
}

/// A stream from an async fn borrowing the context.
#[operation(namespace = "shapes", subscription)]
async fn async_ctx_ticks(ctx: &OperationContext, count: u32) -> impl Stream<Item = u32> + Send + 'static {
    let _ = ctx.request_id();
    stream::iter(0..count)
}

/// A stream from an async fn.
#[operation(namespace = "shapes", subscription)]
async fn async_ticks(count: u32) -> impl Stream<Item = Result<User, Failure>> + Send + 'static {
    stream::iter((0..count).map(|id| Ok(User { id: u64::from(id), name: String::new() })))
}

/// A stream of envelopes.
#[operation(namespace = "shapes", subscription)]
fn envelope_ticks(count: u32) -> impl Stream<Item = ResponseEnvelope<u32>> + Send + 'static {
    stream::iter((0..count).map(|n| local_envelope(n, "elsewhere.op")))
}

/// The crate path override.
#[operation(namespace = "shapes", crate = ::opkit)]
async fn overridden() -> bool {
    true
}

/// A boxed stream is not `impl Stream`, but streams are read from `impl Stream` only;
/// a helper returning `BoxStream` is wrapped.
#[operation(namespace = "shapes", subscription)]
fn boxed(count: u32) -> impl Stream<Item = u32> + Send + 'static {
    let items: BoxStream<'static, u32> = Box::pin(stream::iter(0..count));
    items
}

fn assert_types<O: TypedOperation<Input = I, Output = T>, I, T>() {}

fn main() {
    assert_types::<plain, _, i64>();
    assert_types::<nothing, _, ()>();
    assert_types::<unit, _, ()>();
    assert_types::<fallible, _, u32>();
    assert_types::<own_error, _, u32>();
    assert_types::<alias_result, _, String>();
    assert_types::<envelope, _, u32>();
    assert_types::<json_envelope, _, serde_json::Value>();
    assert_types::<fallible_envelope, _, u32>();
    assert_types::<create, NewUser, User>();
    assert_types::<create2, NewUser, User>();
    assert_types::<ticks, _, u32>();
    assert_types::<fallible_ticks, _, u32>();
    assert_types::<async_ticks, _, User>();
    assert_types::<envelope_ticks, _, u32>();
    assert_types::<async_ctx_ticks, _, u32>();
    assert_types::<overridden, _, bool>();
    assert_types::<boxed, _, u32>();
    let _ = (plain::ID, create::spec(), <ticks as TypedOperation>::KIND);
}
