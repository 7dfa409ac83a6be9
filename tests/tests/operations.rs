//! `#[operation]` end to end: inventory collection across crates, every signature shape
//! through `execute`/`subscribe` and through the typed calls, and explicit registration.

use futures::StreamExt;
use opkit::envelope::{http_envelope, local_envelope};
use opkit::prelude::*;
use opkit::{RegistryError, ResponseMeta};
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::collections::BTreeMap;
use std::time::Duration;

// Naming the other crate is what links it (and its operations) into this test binary.
use opkit_tests as _;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
struct NewUser {
    name: String,
    #[serde(default)]
    admin: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
struct User {
    id: u64,
    name: String,
}

#[derive(Debug)]
struct Refused(&'static str);

impl From<Refused> for CallError {
    fn from(refused: Refused) -> Self {
        CallError::new(ErrorCode::AccessDenied, refused.0)
    }
}

/// Adds two integers.
#[operation(namespace = "it.math")]
async fn add(a: i64, b: i64) -> i64 {
    a + b
}

/// Divides, failing on zero.
#[operation(namespace = "it.math")]
async fn divide(a: i64, b: i64) -> Result<i64, CallError> {
    if b == 0 {
        return Err(CallError::execution("division by zero"));
    }
    Ok(a / b)
}

/// Greets, with an optional title.
#[operation(namespace = "it.text")]
async fn hello(name: String, title: Option<String>) -> String {
    match title {
        Some(title) => format!("Hello, {title} {name}!"),
        None => format!("Hello, {name}!"),
    }
}

/// Creates a user from the whole input.
#[operation(namespace = "it.users", mutation, access(scopes = ["users:write"], roles = ["admin", "ops"]))]
async fn create(ctx: &OperationContext, Input(user): Input<NewUser>) -> Result<User, Refused> {
    if user.admin {
        return Err(Refused("no admins"));
    }
    let id = ctx.request_id().len() as u64;
    Ok(User {
        id,
        name: user.name,
    })
}

/// Forgets everything.
#[operation(namespace = "it.users", mutation)]
async fn forget() {}

/// Answers like an HTTP API would.
#[operation(namespace = "it.http")]
async fn fetch(path: String) -> ResponseEnvelope<String> {
    let headers = BTreeMap::from([("x-path".to_owned(), path.clone())]);
    http_envelope(format!("body of {path}"), 200, headers, "text/plain")
}

/// Counts up, from a plain fn.
#[operation(namespace = "it.clock", subscription)]
fn ticks(count: u32) -> impl Stream<Item = u32> + Send + 'static {
    futures::stream::iter(0..count)
}

/// Counts up, failing at `fail_at`, from an async fn borrowing the context.
#[operation(namespace = "it.clock", subscription)]
async fn checked(
    ctx: &OperationContext,
    count: u32,
    fail_at: u32,
) -> impl Stream<Item = Result<u32, CallError>> + Send + 'static {
    let _ = ctx.request_id();
    futures::stream::iter((0..count).map(move |n| {
        if n == fail_at {
            Err(CallError::execution("failed on purpose"))
        } else {
            Ok(n)
        }
    }))
}

/// Envelopes per item, from a plain fn borrowing the context.
#[operation(namespace = "it.clock", subscription)]
fn stamped(ctx: &OperationContext, count: u32) -> impl Stream<Item = ResponseEnvelope<u32>> + Send {
    let id = ctx.request_id().to_owned();
    futures::stream::iter(0..count).map(move |n| local_envelope(n, id.clone()))
}

/// Panics.
#[operation(namespace = "it.fail")]
async fn boom() -> u32 {
    panic!("kaboom")
}

/// Sleeps.
#[operation(namespace = "it.fail")]
async fn slow(ms: u64) -> u64 {
    tokio::time::sleep(Duration::from_millis(ms)).await;
    ms
}

/// Calls `add` through the env, typed.
#[operation(namespace = "it.nested")]
async fn add_twice(ctx: &OperationContext, n: i64) -> Result<i64, CallError> {
    let env = ctx.env();
    let once = env.call_typed::<add>(add::input(n, n)).await?.data;
    let twice = env.call_typed::<add>(add::input(once, once)).await?.data;
    Ok(twice)
}

fn ctx() -> OperationContext {
    OperationContext::default()
}

#[test]
fn from_inventory_finds_this_file_and_the_other_crate() {
    let registry = OperationRegistry::from_inventory();
    for id in [
        "it.math.add",
        "it.clock.ticks",
        "shared.greet",
        "shared.count",
    ] {
        assert!(registry.contains(id), "{id} is missing from {registry:?}");
    }
    let spec = registry.spec("shared.greet").unwrap();
    assert_eq!(
        spec.description.as_deref(),
        Some("Greets someone, from another crate.")
    );
    assert!(
        spec.origin
            .as_deref()
            .unwrap()
            .starts_with("tests/src/lib.rs:")
    );
}

#[test]
fn specs_carry_kind_docs_access_and_schemas() {
    let spec = create::spec();
    assert_eq!(spec.id(), "it.users.create");
    assert_eq!(spec.kind, OperationKind::Mutation);
    assert_eq!(
        spec.description.as_deref(),
        Some("Creates a user from the whole input.")
    );
    assert_eq!(
        spec.access,
        AccessRule::scopes(["users:write"]).with_roles(["admin", "ops"])
    );
    assert_eq!(spec.input_schema["properties"]["name"]["type"], "string");
    assert_eq!(spec.input_schema["required"], json!(["name"]));
    assert_eq!(spec.output_schema["properties"]["id"]["type"], "integer");

    let hello = hello::spec();
    assert_eq!(hello.input_schema["required"], json!(["name"]));
    assert_eq!(hello.input_schema["type"], "object");
    assert_eq!(forget::spec().output_schema["type"], "null");
    assert_eq!(ticks::spec().kind, OperationKind::Subscription);
    assert_eq!(ticks::spec().output_schema["type"], "integer");
    assert_eq!(add::ID, "it.math.add");
    assert_eq!(<add as TypedOperation>::KIND, OperationKind::Query);
}

#[tokio::test]
async fn execute_every_unary_shape() {
    let registry = OperationRegistry::from_inventory();
    let ctx = ctx();
    let sum = registry
        .execute("it.math.add", json!({"a": 2, "b": 40}), &ctx)
        .await
        .unwrap();
    assert_eq!(sum.data, json!(42));
    assert!(matches!(&sum.meta, ResponseMeta::Local(meta) if &*meta.operation_id == "it.math.add"));

    let error = registry
        .execute("it.math.divide", json!({"a": 1, "b": 0}), &ctx)
        .await
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::ExecutionError);
    assert_eq!(error.message, "division by zero");

    let hi = registry
        .execute("it.text.hello", json!({"name": "Ada"}), &ctx)
        .await
        .unwrap();
    assert_eq!(hi.data, json!("Hello, Ada!"));
    let hi = registry
        .execute("it.text.hello", json!({"name": "Ada", "title": "Dr"}), &ctx)
        .await
        .unwrap();
    assert_eq!(hi.data, json!("Hello, Dr Ada!"));

    let user = registry
        .execute("it.users.create", json!({"name": "Bo"}), &ctx)
        .await
        .unwrap();
    assert_eq!(user.data["name"], "Bo");
    let refused = registry
        .execute(
            "it.users.create",
            json!({"name": "Bo", "admin": true}),
            &ctx,
        )
        .await
        .unwrap_err();
    assert_eq!(refused.code, ErrorCode::AccessDenied);

    let nothing = registry
        .execute("it.users.forget", json!({}), &ctx)
        .await
        .unwrap();
    assert_eq!(nothing.data, json!(null));

    let fetched = registry
        .execute("it.http.fetch", json!({"path": "/a"}), &ctx)
        .await
        .unwrap();
    assert_eq!(fetched.data, json!("body of /a"));
    assert!(matches!(&fetched.meta, ResponseMeta::Http(meta) if meta.status_code == 200));
}

#[tokio::test]
async fn invalid_input_is_a_validation_error() {
    let registry = OperationRegistry::from_inventory();
    let error = registry
        .execute("it.math.add", json!({"a": "two"}), &ctx())
        .await
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::ValidationError);
}

#[tokio::test]
async fn subscribe_every_stream_shape() {
    let registry = OperationRegistry::from_inventory();
    let ctx = ctx();
    let items: Vec<_> = registry
        .subscribe("it.clock.ticks", json!({"count": 3}), &ctx)
        .await
        .unwrap()
        .map(|item| item.unwrap().data)
        .collect()
        .await;
    assert_eq!(items, [json!(0), json!(1), json!(2)]);

    let items: Vec<_> = registry
        .subscribe("it.clock.checked", json!({"count": 3, "fail_at": 1}), &ctx)
        .await
        .unwrap()
        .collect()
        .await;
    assert_eq!(items[0].as_ref().unwrap().data, json!(0));
    assert_eq!(
        items[1].as_ref().unwrap_err().code,
        ErrorCode::ExecutionError
    );

    let stamped: Vec<_> = registry
        .subscribe("it.clock.stamped", json!({"count": 2}), &ctx)
        .await
        .unwrap()
        .map(|item| item.unwrap())
        .collect()
        .await;
    assert_eq!(stamped.len(), 2);
    // The fn's own envelopes pass through: the operation id is what it put there.
    assert!(
        matches!(&stamped[1].meta, ResponseMeta::Local(meta) if &*meta.operation_id != "it.clock.stamped")
    );

    let shared: Vec<_> = registry
        .subscribe("shared.count", json!({"to": 2}), &ctx)
        .await
        .unwrap()
        .map(|item| item.unwrap().data)
        .collect()
        .await;
    assert_eq!(shared, [json!(0), json!(1)]);
}

#[tokio::test]
async fn typed_calls_need_no_json() {
    let ctx = ctx();
    let sum = add::call(&ctx, 1, 2).await.unwrap();
    assert_eq!(sum.data, 3);
    assert!(matches!(&sum.meta, ResponseMeta::Local(meta) if &*meta.operation_id == "it.math.add"));
    let user = create::call(
        &ctx,
        Input(NewUser {
            name: "Cy".into(),
            admin: false,
        }),
    )
    .await
    .unwrap();
    assert_eq!(user.data.name, "Cy");
    let refused = create::call(
        &ctx,
        Input(NewUser {
            name: "Cy".into(),
            admin: true,
        }),
    )
    .await
    .unwrap_err();
    assert_eq!(refused.code, ErrorCode::AccessDenied);
    let fetched = fetch::call(&ctx, "/b".into()).await.unwrap();
    assert!(matches!(&fetched.meta, ResponseMeta::Http(_)));
    let greeting = opkit_tests::greet::call(&ctx, "Di".into()).await.unwrap();
    assert_eq!(greeting.data.text, "Hello, Di!");

    let ticks: Vec<u32> = ticks::subscribe(&ctx, 3)
        .map(|item| item.unwrap().data)
        .collect()
        .await;
    assert_eq!(ticks, [0, 1, 2]);
    let checked: Vec<_> = checked::subscribe(&ctx, 2, 9)
        .map(|item| item.unwrap().data)
        .collect()
        .await;
    assert_eq!(checked, [0, 1]);
    // The fn itself is unchanged.
    assert_eq!(add(5, 6).await, 11);
}

#[tokio::test]
async fn typed_calls_are_guarded_like_registry_calls() {
    let panicked = boom::call(&ctx()).await.unwrap_err();
    assert_eq!(panicked.code, ErrorCode::ExecutionError);
    assert!(panicked.message.contains("kaboom"), "{}", panicked.message);

    let hurried = ctx().with_timeout(Duration::from_millis(20));
    let timed_out = slow::call(&hurried, 5_000).await.unwrap_err();
    assert_eq!(timed_out.code, ErrorCode::Timeout);

    let token = tokio_util::sync::CancellationToken::new();
    let cancellable = ctx().with_cancellation(token.clone());
    let call = slow::call(&cancellable, 5_000);
    token.cancel();
    assert_eq!(call.await.unwrap_err().code, ErrorCode::Aborted);

    // Cancelled while it runs (pending after its first poll): the listener set up then wakes it.
    let token = tokio_util::sync::CancellationToken::new();
    let cancellable = ctx().with_cancellation(token.clone());
    let running = tokio::spawn(slow::call(&cancellable, 5_000));
    tokio::time::sleep(Duration::from_millis(20)).await;
    token.cancel();
    let stopped = tokio::time::timeout(Duration::from_secs(5), running)
        .await
        .expect("the cancellation ends the call")
        .unwrap();
    assert_eq!(stopped.unwrap_err().code, ErrorCode::Aborted);

    // Bounded work that finishes first wins: its deadline and listener never fire.
    let bounded = ctx()
        .with_timeout(Duration::from_secs(30))
        .with_cancellation(tokio_util::sync::CancellationToken::new());
    assert_eq!(slow::call(&bounded, 10).await.unwrap().data, 10);
    assert_eq!(add::call(&bounded, 2, 3).await.unwrap().data, 5);

    // A call made while its deadline holds but first polled after it passed does not run.
    let brief = ctx().with_timeout(Duration::from_millis(5));
    let late = slow::call(&brief, 0);
    tokio::time::sleep(Duration::from_millis(30)).await;
    assert_eq!(late.await.unwrap_err().code, ErrorCode::Timeout);
}

#[tokio::test]
async fn nested_typed_calls_go_through_the_env() {
    let registry = OperationRegistry::from_inventory();
    let out = registry
        .execute("it.nested.add_twice", json!({"n": 3}), &ctx())
        .await
        .unwrap();
    assert_eq!(out.data, json!(12));
    let env = OperationEnv::local(registry);
    let typed = env
        .call_typed::<hello>(hello::input("Ed".into(), None))
        .await
        .unwrap();
    assert_eq!(typed.data, "Hello, Ed!");
    let items: Vec<u32> = env
        .subscribe_typed::<ticks>(ticks::input(2))
        .await
        .unwrap()
        .map(|item| item.unwrap().data)
        .collect()
        .await;
    assert_eq!(items, [0, 1]);
}

#[tokio::test]
async fn explicit_registration() {
    let registry = OperationRegistry::new();
    registry.register_operation(add).unwrap();
    registry.register_operation(opkit_tests::greet).unwrap();
    registry.register_typed::<ticks>().unwrap();
    assert_eq!(registry.len(), 3);
    let duplicate = registry.register_operation(add).unwrap_err();
    assert!(matches!(duplicate, RegistryError::DuplicateId { .. }));
    assert!(
        duplicate.to_string().contains("tests/tests/operations.rs:"),
        "{duplicate}"
    );
    let not_one = registry.register_operation(|| 1).unwrap_err();
    assert!(matches!(not_one, RegistryError::NotAnOperation { .. }));
    let sum = registry
        .execute("it.math.add", json!({"a": 1, "b": 1}), &ctx())
        .await
        .unwrap();
    assert_eq!(sum.data, json!(2));
}

/// A `TypedOperation` written by hand, for a type `#[operation]` did not make: possible beside
/// the impl opkit gives every handle `#[operation]` makes (through its hidden `OperationDef`).
struct Echo;

impl opkit::TypedOperation for Echo {
    const ID: &'static str = "it.hand.echo";
    const KIND: opkit::OperationKind = opkit::OperationKind::Query;
    type Input = serde_json::Value;
    type Output = serde_json::Value;

    fn spec() -> opkit::OperationSpec {
        opkit::OperationSpec::new("it.hand", "echo", opkit::OperationKind::Query)
    }

    fn handler() -> opkit::Handler {
        opkit::Handler::unary(|input, _ctx| async move { Ok(input) })
    }
}

#[tokio::test]
async fn a_typed_operation_implemented_by_hand() {
    let registry = OperationRegistry::new();
    registry.register_typed::<Echo>().unwrap();
    registry.register_typed::<add>().unwrap();
    assert_eq!(registry.len(), 2);
    let env = OperationEnv::local(registry);
    let echoed = env.call_typed::<Echo>(json!({"x": 1})).await.unwrap();
    assert_eq!(echoed.data, json!({"x": 1}));
    assert!(
        matches!(&echoed.meta, ResponseMeta::Local(meta) if &*meta.operation_id == "it.hand.echo")
    );
    let sum = env.call_typed::<add>(add::input(2, 3)).await.unwrap();
    assert_eq!(sum.data, 5);
}

#[test]
fn input_types_serialize_like_the_schema_says() {
    let input = hello::input("Fa".into(), None);
    assert_eq!(
        serde_json::to_value(&input).unwrap(),
        json!({"name": "Fa", "title": null})
    );
    let read: <hello as TypedOperation>::Input =
        serde_json::from_value(json!({"name": "Ga"})).unwrap();
    assert_eq!(serde_json::to_value(&read).unwrap()["name"], "Ga");
    let missing = serde_json::from_value::<<add as TypedOperation>::Input>(json!({"a": 1}));
    assert!(
        missing
            .unwrap_err()
            .to_string()
            .contains("missing field `b`")
    );
}

/// Serializes a field its schema does not declare: a hand-written `Serialize` that disagrees
/// with the derived `JsonSchema`.
#[derive(schemars::JsonSchema)]
struct Loose {
    n: i64,
}

impl Serialize for Loose {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(2))?;
        map.serialize_entry("n", &self.n)?;
        map.serialize_entry("extra", &true)?;
        map.end()
    }
}

#[operation(namespace = "it.trust")]
async fn loose_data() -> Loose {
    Loose { n: 1 }
}

#[operation(namespace = "it.trust")]
async fn loose_envelope() -> ResponseEnvelope<Loose> {
    local_envelope(Loose { n: 1 }, "it.trust.loose_envelope")
}

/// Data an `#[operation]` fn returns is serialized from the type its output schema is derived
/// from, so the pipeline wraps it as is; an envelope it returns may carry data from elsewhere
/// and is normalized like any handler's.
#[tokio::test]
async fn data_from_a_typed_fn_is_trusted_and_an_envelope_is_normalized() {
    let registry = OperationRegistry::from_inventory();
    let data = registry
        .execute("it.trust.loose_data", json!({}), &ctx())
        .await
        .unwrap();
    assert_eq!(data.data, json!({"n": 1, "extra": true}));
    let envelope = registry
        .execute("it.trust.loose_envelope", json!({}), &ctx())
        .await
        .unwrap();
    assert_eq!(envelope.data, json!({"n": 1}));
}
