//! User types named like the ones generated code uses do not confuse it.
#![deny(warnings)]
#![allow(dead_code)]

use opkit::operation;

#[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
struct Result {
    ok: bool,
}

#[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
struct Option {
    enabled: bool,
}

#[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
struct Value {
    n: i64,
}

#[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
struct Input {
    text: String,
}

#[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
struct Some;

#[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
struct String {
    chars: Vec<char>,
}

struct Ok;
struct Err;
struct Box;
struct Vec2;
trait Future {}
trait Stream {}
trait Send {}
struct Handler;
struct OperationSpec;

/// Takes and returns types called `Input`, `Option`, `Value`, and returns one called `Result`.
#[operation(namespace = "shadow")]
async fn check(input: Input, option: Option, value: Value, string: String) -> Result {
    let _ = (input.text, option.enabled, value.n, string.chars);
    Result { ok: true }
}

/// Returns a type called `Value`.
#[operation(namespace = "shadow", mutation)]
async fn value(n: i64) -> Value {
    Value { n }
}

/// Params named like the macro's locals.
#[operation(namespace = "shadow")]
async fn locals(ctx: i64, __input: i64, __fields: i64, __state: i64, generator: i64) -> i64 {
    ctx + __input + __fields + __state + generator
}

/// A stream despite a local `Stream` trait.
#[operation(namespace = "shadow", subscription)]
fn items(count: u32) -> impl futures::Stream<Item = u32> + std::marker::Send + 'static {
    futures::stream::iter(0..count)
}

fn main() {}
