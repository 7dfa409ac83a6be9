//! `OperationRegistry`: registration rules, execute/subscribe checks, the shared pipeline,
//! panics, deadlines, cancellation and stream dropping.

mod warnings_support;

use futures::StreamExt;
use opkit::envelope::{ResponseMeta, http_envelope};
use opkit::{
    CallError, ErrorCode, Handler, Identity, OperationContext, OperationKind, OperationRegistry,
    OperationSpec, RegistryError,
};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;
use warnings_support::capture_warnings;

fn add_spec() -> OperationSpec {
    OperationSpec::new("math", "add", OperationKind::Query)
        .description("Adds two integers.")
        .input_schema(json!({
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
            "additionalProperties": false
        }))
        .output_schema(json!({
            "type": "object",
            "properties": {"sum": {"type": "integer"}},
            "required": ["sum"]
        }))
}

fn add_handler() -> Handler {
    Handler::unary(|input, _ctx| async move {
        let a = input["a"].as_i64().unwrap_or_default();
        let b = input["b"].as_i64().unwrap_or_default();
        Ok(json!({"sum": a + b, "debug": "dropped by normalization"}))
    })
}

fn registry_with_add() -> OperationRegistry {
    let registry = OperationRegistry::new();
    registry.register(add_spec(), add_handler()).unwrap();
    registry
}

fn ctx() -> OperationContext {
    OperationContext::default()
}

#[tokio::test]
async fn execute_wraps_and_normalizes_the_result() {
    let registry = registry_with_add();
    let envelope = registry
        .execute("math.add", json!({"a": 2, "b": 40}), &ctx())
        .await
        .unwrap();
    assert_eq!(envelope.data, json!({"sum": 42}));
    let ResponseMeta::Local(meta) = envelope.meta else {
        panic!("expected local meta")
    };
    assert_eq!(&*meta.operation_id, "math.add");
    assert!(meta.timestamp > 0);
}

#[test]
fn duplicate_ids_are_refused_naming_the_id_and_both_operations() {
    let registry = registry_with_add();
    let error = registry
        .register(
            add_spec().origin("src/other.rs:7").description("again"),
            add_handler(),
        )
        .unwrap_err();
    assert!(matches!(error, RegistryError::DuplicateId { ref id, .. } if id == "math.add"));
    let message = error.to_string();
    assert!(message.contains("`math.add`"), "{message}");
    assert!(message.contains("src/other.rs:7"), "{message}");
    assert_eq!(registry.len(), 1);
}

#[test]
fn invalid_names_schemas_and_handler_shapes_are_refused() {
    let registry = OperationRegistry::new();
    let bad_namespace = OperationSpec::new("math-ops", "add", OperationKind::Query);
    assert!(matches!(
        registry.register(bad_namespace, add_handler()),
        Err(RegistryError::InvalidName { .. })
    ));
    let bad_name = OperationSpec::new("math", "add.two", OperationKind::Query);
    assert!(matches!(
        registry.register(bad_name, add_handler()),
        Err(RegistryError::InvalidName { .. })
    ));
    let dotted_namespace = OperationSpec::new("org.math", "add", OperationKind::Query);
    registry.register(dotted_namespace, add_handler()).unwrap();

    let bad_schema = OperationSpec::new("math", "bad", OperationKind::Query)
        .input_schema(json!({"type": "no-such-type"}));
    let error = registry.register(bad_schema, add_handler()).unwrap_err();
    assert!(
        matches!(error, RegistryError::InvalidSchema { which: "input", .. }),
        "{error}"
    );

    let stream_as_query = OperationSpec::new("math", "ticks", OperationKind::Query);
    let error = registry
        .register(
            stream_as_query,
            Handler::stream(|_, _| futures::stream::empty()),
        )
        .unwrap_err();
    assert!(
        matches!(error, RegistryError::HandlerKindMismatch { .. }),
        "{error}"
    );
    let unary_as_subscription = OperationSpec::new("math", "ticks", OperationKind::Subscription);
    assert!(
        registry
            .register(unary_as_subscription, add_handler())
            .is_err()
    );
}

#[test]
fn specs_are_sorted_and_looked_up_by_id() {
    let registry = OperationRegistry::new();
    for name in ["zeta", "alpha", "mid"] {
        registry
            .register(
                OperationSpec::new("ns", name, OperationKind::Mutation),
                add_handler(),
            )
            .unwrap();
    }
    let ids: Vec<String> = registry.specs().iter().map(|spec| spec.id()).collect();
    assert_eq!(ids, ["ns.alpha", "ns.mid", "ns.zeta"]);
    assert_eq!(
        registry.spec("ns.mid").unwrap().kind,
        OperationKind::Mutation
    );
    assert!(registry.spec("ns.nope").is_none());
    assert!(registry.handler("ns.alpha").is_some());
    assert!(registry.unregister("ns.alpha"));
    assert!(!registry.contains("ns.alpha"));
}

#[tokio::test]
async fn unknown_ids_and_wrong_kinds_are_clear_errors() {
    let registry = registry_with_add();
    registry
        .register(
            OperationSpec::new("clock", "ticks", OperationKind::Subscription),
            Handler::stream(|_, _| futures::stream::iter([Ok(json!(1))])),
        )
        .unwrap();

    let error = registry
        .execute("math.nope", json!({}), &ctx())
        .await
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::OperationNotFound);
    assert!(error.message.contains("math.nope"));

    let error = registry
        .execute("clock.ticks", json!({}), &ctx())
        .await
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::ValidationError);
    assert!(
        error.message.contains("SUBSCRIPTION") && error.message.contains("subscribe"),
        "{}",
        error.message
    );

    let Err(error) = registry
        .subscribe("math.add", json!({"a": 1, "b": 2}), &ctx())
        .await
    else {
        panic!("subscribe on a query must fail")
    };
    assert_eq!(error.code, ErrorCode::ValidationError);
    assert!(
        error.message.contains("QUERY") && error.message.contains("execute"),
        "{}",
        error.message
    );
}

#[tokio::test]
async fn input_validation_reports_every_violation_with_json_pointers() {
    let registry = registry_with_add();
    let error = registry
        .execute("math.add", json!({"a": "two", "extra": true}), &ctx())
        .await
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::ValidationError);
    let details: Vec<opkit::Violation> = serde_json::from_value(error.details.unwrap()).unwrap();
    let paths: Vec<&str> = details.iter().map(|v| v.path.as_str()).collect();
    assert!(paths.contains(&"/a"), "{paths:?}");
    assert!(
        details.len() >= 3,
        "wrong type, missing b, extra property: {details:?}"
    );
    assert!(
        details.iter().any(|v| v.message.contains("\"b\"")),
        "{details:?}"
    );

    for non_object in [json!(null), json!([1, 2]), json!("a=1"), json!(3)] {
        let error = registry
            .execute("math.add", non_object.clone(), &ctx())
            .await
            .unwrap_err();
        assert_eq!(error.code, ErrorCode::ValidationError, "{non_object}");
        let details = error.details.unwrap();
        assert_eq!(details[0]["path"], "", "root violation for {non_object}");
    }
}

#[tokio::test]
async fn a_panicking_handler_is_an_execution_error_and_the_registry_keeps_working() {
    let registry = registry_with_add();
    registry
        .register(
            OperationSpec::new("boom", "in_future", OperationKind::Mutation),
            Handler::unary(|_, _| async move {
                if true {
                    panic!("kaboom inside");
                }
                Ok(Value::Null)
            }),
        )
        .unwrap();
    registry
        .register(
            OperationSpec::new("boom", "before_future", OperationKind::Mutation),
            Handler::unary(|_, _| -> futures::future::Ready<Result<Value, CallError>> {
                panic!("kaboom before")
            }),
        )
        .unwrap();
    for (id, text) in [
        ("boom.in_future", "kaboom inside"),
        ("boom.before_future", "kaboom before"),
    ] {
        let error = registry.execute(id, json!({}), &ctx()).await.unwrap_err();
        assert_eq!(error.code, ErrorCode::ExecutionError);
        assert!(
            error.message.contains(text) && error.message.contains(id),
            "{}",
            error.message
        );
    }
    let envelope = registry
        .execute("math.add", json!({"a": 1, "b": 1}), &ctx())
        .await
        .unwrap();
    assert_eq!(envelope.data["sum"], 2);
}

#[tokio::test]
async fn handler_errors_pass_through_unchanged() {
    let registry = OperationRegistry::new();
    registry
        .register(
            OperationSpec::new("users", "get", OperationKind::Query),
            Handler::unary(|_, _| async move {
                Err(CallError::new(ErrorCode::AccessDenied, "not yours")
                    .with_details(json!({"owner": "ann"})))
            }),
        )
        .unwrap();
    let error = registry
        .execute("users.get", json!({}), &ctx())
        .await
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::AccessDenied);
    assert_eq!(error.details, Some(json!({"owner": "ann"})));
}

#[tokio::test]
async fn an_envelope_returned_by_a_handler_passes_through_and_is_normalized() {
    let registry = OperationRegistry::new();
    registry
        .register(
            OperationSpec::new("web", "status", OperationKind::Query).output_schema(json!({
                "type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]
            })),
            Handler::unary(|_, _| async move {
                let mut headers = BTreeMap::new();
                headers.insert("content-type".to_owned(), "application/json".to_owned());
                let envelope = http_envelope(
                    json!({"ok": true, "noise": 1}),
                    200,
                    headers,
                    "application/json",
                );
                Ok(serde_json::to_value(envelope).unwrap())
            }),
        )
        .unwrap();
    let envelope = registry
        .execute("web.status", json!({}), &ctx())
        .await
        .unwrap();
    assert_eq!(envelope.data, json!({"ok": true}));
    let ResponseMeta::Http(meta) = envelope.meta else {
        panic!("the handler's http meta must pass through")
    };
    assert_eq!(meta.status_code, 200);
}

#[tokio::test]
async fn unknown_output_schemas_are_neither_normalized_nor_validated() {
    let registry = OperationRegistry::new();
    registry
        .register(
            OperationSpec::new("raw", "echo", OperationKind::Query),
            Handler::unary(|input, _| async move { Ok(input) }),
        )
        .unwrap();
    let input = json!({"anything": [1, {"goes": true}]});
    let envelope = registry
        .execute("raw.echo", input.clone(), &ctx())
        .await
        .unwrap();
    assert_eq!(envelope.data, input);
}

#[tokio::test(start_paused = true)]
async fn the_context_deadline_becomes_timeout() {
    let registry = OperationRegistry::new();
    registry
        .register(
            OperationSpec::new("slow", "op", OperationKind::Query),
            Handler::unary(|_, _| async move {
                tokio::time::sleep(Duration::from_secs(3600)).await;
                Ok(Value::Null)
            }),
        )
        .unwrap();
    let ctx = OperationContext::new().with_timeout(Duration::from_millis(50));
    let error = registry
        .execute("slow.op", json!({}), &ctx)
        .await
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::Timeout);

    let expired = OperationContext::new().with_deadline(opkit::Deadline::from_epoch_millis(1));
    let error = registry
        .execute("slow.op", json!({}), &expired)
        .await
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::Timeout);
}

#[tokio::test]
async fn cancellation_aborts_the_call_and_drops_the_handler_future() {
    let dropped = Arc::new(AtomicBool::new(false));
    let registry = OperationRegistry::new();
    let flag = dropped.clone();
    registry
        .register(
            OperationSpec::new("slow", "op", OperationKind::Query),
            Handler::unary(move |_, _| {
                let guard = DropGuard(flag.clone());
                async move {
                    let _guard = guard;
                    std::future::pending::<()>().await;
                    Ok(Value::Null)
                }
            }),
        )
        .unwrap();
    let token = tokio_util_token();
    let ctx = OperationContext::new().with_cancellation(token.clone());
    let call = tokio::spawn({
        let registry = registry.clone();
        async move { registry.execute("slow.op", json!({}), &ctx).await }
    });
    tokio::task::yield_now().await;
    token.cancel();
    let error = call.await.unwrap().unwrap_err();
    assert_eq!(error.code, ErrorCode::Aborted);
    assert!(dropped.load(Ordering::SeqCst));
}

/// Set when [`forever`]'s future is dropped.
static FOREVER_DROPPED: AtomicBool = AtomicBool::new(false);

/// Never finishes, and reads nothing from its context: the registry hands it the context
/// without the call's cancellation, which only the guard holds.
#[opkit::operation(namespace = "slow")]
async fn forever() -> u32 {
    let _guard = StaticDropGuard(&FOREVER_DROPPED);
    std::future::pending::<()>().await;
    0
}

struct StaticDropGuard(&'static AtomicBool);

impl Drop for StaticDropGuard {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[tokio::test]
async fn a_handler_that_reads_no_context_is_still_cancelled_and_timed_out() {
    let registry = OperationRegistry::new();
    registry.register_typed::<forever>().unwrap();
    let token = tokio_util_token();
    let ctx = OperationContext::new().with_cancellation(token.clone());
    let call = tokio::spawn({
        let registry = registry.clone();
        async move { registry.execute(forever::ID, json!({}), &ctx).await }
    });
    tokio::task::yield_now().await;
    token.cancel();
    let error = call.await.unwrap().unwrap_err();
    assert_eq!(error.code, ErrorCode::Aborted);
    assert!(FOREVER_DROPPED.load(Ordering::SeqCst));

    let ctx = OperationContext::new().with_timeout(Duration::from_millis(20));
    let error = registry
        .execute(forever::ID, json!({}), &ctx)
        .await
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::Timeout);

    // Cancelled before it starts: refused, as for any handler.
    let token = tokio_util_token();
    token.cancel();
    let ctx = OperationContext::new().with_cancellation(token);
    let error = registry
        .execute(forever::ID, json!({}), &ctx)
        .await
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::Aborted);
}

/// One item, then nothing ever; reads nothing from its context (the registry hands it the
/// context without the call's cancellation, which only the guard holds).
#[opkit::operation(namespace = "slow", subscription)]
fn one_then_silence() -> impl futures::Stream<Item = u32> + Send + 'static {
    futures::stream::iter([1]).chain(futures::stream::pending())
}

/// A subscription of [`one_then_silence`] under a cancellation token, its item read: the
/// registry, the stream waiting for more and the token.
async fn silent_after_its_item() -> (
    OperationRegistry,
    opkit::EnvelopeStream,
    tokio_util::sync::CancellationToken,
) {
    let registry = OperationRegistry::new();
    registry.register_typed::<one_then_silence>().unwrap();
    let token = tokio_util_token();
    let ctx = OperationContext::new().with_cancellation(token.clone());
    let mut items = registry
        .subscribe(one_then_silence::ID, json!({}), &ctx)
        .await
        .unwrap();
    assert_eq!(items.next().await.unwrap().unwrap().data, json!(1));
    (registry, items, token)
}

#[tokio::test]
async fn a_stream_that_reads_no_context_is_still_cancelled_and_timed_out() {
    let (registry, mut items, token) = silent_after_its_item().await;
    token.cancel();
    let error = items.next().await.unwrap().unwrap_err();
    assert_eq!(error.code, ErrorCode::Aborted);
    assert!(items.next().await.is_none());

    let ctx = OperationContext::new().with_timeout(Duration::from_millis(20));
    let mut items = registry
        .subscribe(one_then_silence::ID, json!({}), &ctx)
        .await
        .unwrap();
    assert_eq!(items.next().await.unwrap().unwrap().data, json!(1));
    let error = items.next().await.unwrap().unwrap_err();
    assert_eq!(error.code, ErrorCode::Timeout);

    let token = tokio_util_token();
    token.cancel();
    let ctx = OperationContext::new().with_cancellation(token);
    let refused = registry
        .subscribe(one_then_silence::ID, json!({}), &ctx)
        .await;
    assert_eq!(
        refused.err().map(|error| error.code),
        Some(ErrorCode::Aborted)
    );
}

/// Items as fast as they are asked for; never waits.
#[opkit::operation(namespace = "fast", subscription)]
fn endless() -> impl futures::Stream<Item = u64> + Send + 'static {
    futures::stream::iter(0..)
}

#[tokio::test]
async fn a_stream_that_never_waits_ends_within_a_few_items_of_its_cancellation() {
    let registry = OperationRegistry::new();
    registry.register_typed::<endless>().unwrap();
    for before in [0, 1, 5, 15, 16, 17, 40] {
        let token = tokio_util_token();
        let ctx = OperationContext::new().with_cancellation(token.clone());
        let mut items = registry
            .subscribe(endless::ID, json!({}), &ctx)
            .await
            .unwrap();
        for n in 0..before {
            assert_eq!(items.next().await.unwrap().unwrap().data, json!(n));
        }
        token.cancel();
        // The guard looks at the cancellation before every 16th item of a run that never
        // waits: at most 16 more items, then the error, then the end.
        let mut more = 0;
        let error = loop {
            match items.next().await.unwrap() {
                Ok(_) => more += 1,
                Err(error) => break error,
            }
        };
        assert!(
            more <= 16,
            "{more} items after the cancellation ({before} before)"
        );
        assert_eq!(error.code, ErrorCode::Aborted);
        assert!(items.next().await.is_none());
    }
}

#[tokio::test]
async fn a_waiting_stream_polled_from_another_task_still_sees_its_cancellation() {
    // Its first item read here, then it waits in another task: the cancellation must wake
    // that task, not this one.
    let (_registry, mut items, token) = silent_after_its_item().await;
    let waiting = tokio::spawn(async move { items.next().await.map(|item| item.err()) });
    tokio::task::yield_now().await;
    token.cancel();
    let ended = tokio::time::timeout(Duration::from_secs(10), waiting)
        .await
        .expect("the waiting task is woken by the cancellation")
        .unwrap();
    assert_eq!(
        ended.flatten().map(|error| error.code),
        Some(ErrorCode::Aborted)
    );
}

fn tokio_util_token() -> tokio_util::sync::CancellationToken {
    tokio_util::sync::CancellationToken::new()
}

struct DropGuard(Arc<AtomicBool>);

impl Drop for DropGuard {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

fn counting_subscription(
    registry: &OperationRegistry,
    dropped: Arc<AtomicBool>,
    produced: Arc<AtomicUsize>,
) {
    registry
        .register(
            OperationSpec::new("clock", "ticks", OperationKind::Subscription).output_schema(
                json!({
                    "type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]
                }),
            ),
            Handler::stream(move |_, _| {
                let guard = DropGuard(dropped.clone());
                let produced = produced.clone();
                futures::stream::iter(0..).map(move |n| {
                    let _keep_alive = &guard;
                    produced.fetch_add(1, Ordering::SeqCst);
                    Ok(json!({"n": n, "extra": "dropped"}))
                })
            }),
        )
        .unwrap();
}

#[tokio::test]
async fn subscribe_yields_one_normalized_envelope_per_item() {
    let registry = OperationRegistry::new();
    counting_subscription(&registry, Arc::default(), Arc::default());
    let stream = registry
        .subscribe("clock.ticks", json!({}), &ctx())
        .await
        .unwrap();
    let items: Vec<_> = stream.take(3).collect().await;
    let data: Vec<Value> = items.into_iter().map(|item| item.unwrap().data).collect();
    assert_eq!(data, [json!({"n": 0}), json!({"n": 1}), json!({"n": 2})]);
}

#[tokio::test]
async fn dropping_the_subscription_drops_the_handler_stream() {
    let registry = OperationRegistry::new();
    let dropped = Arc::new(AtomicBool::new(false));
    let produced = Arc::new(AtomicUsize::new(0));
    counting_subscription(&registry, dropped.clone(), produced.clone());
    let mut stream = registry
        .subscribe("clock.ticks", json!({}), &ctx())
        .await
        .unwrap();
    assert!(stream.next().await.unwrap().is_ok());
    assert!(stream.next().await.unwrap().is_ok());
    assert!(
        !dropped.load(Ordering::SeqCst),
        "still running while subscribed"
    );
    drop(stream);
    assert!(
        dropped.load(Ordering::SeqCst),
        "dropping the subscription drops the handler's stream"
    );
    assert_eq!(
        produced.load(Ordering::SeqCst),
        2,
        "nothing is produced after the drop"
    );
}

#[tokio::test]
async fn a_panicking_stream_ends_with_an_execution_error() {
    let registry = OperationRegistry::new();
    registry
        .register(
            OperationSpec::new("clock", "broken", OperationKind::Subscription),
            Handler::stream(|_, _| {
                futures::stream::iter(0..3).map(|n| {
                    assert!(n < 1, "tick {n} exploded");
                    Ok(json!(n))
                })
            }),
        )
        .unwrap();
    let items: Vec<_> = registry
        .subscribe("clock.broken", json!({}), &ctx())
        .await
        .unwrap()
        .collect()
        .await;
    assert_eq!(
        items.len(),
        2,
        "one item, then the panic as an error, then the end"
    );
    assert_eq!(items[0].as_ref().unwrap().data, json!(0));
    let error = items[1].as_ref().unwrap_err();
    assert_eq!(error.code, ErrorCode::ExecutionError);
    assert!(
        error.message.contains("tick 1 exploded"),
        "{}",
        error.message
    );
}

#[tokio::test]
async fn nested_calls_through_the_env_carry_parent_id_and_identity() {
    let registry = registry_with_add();
    registry
        .register(
            OperationSpec::new("math", "whoami", OperationKind::Query),
            Handler::unary(|_, ctx| async move {
                Ok(json!({
                    "parent": ctx.parent_request_id(),
                    "identity": ctx.identity().map(|identity| identity.id.clone()),
                    "hasDeadline": ctx.deadline().is_some(),
                }))
            }),
        )
        .unwrap();
    registry
        .register(
            OperationSpec::new("math", "outer", OperationKind::Query),
            Handler::unary(|_, ctx| async move {
                let sum = ctx.env().call("math.add", json!({"a": 1, "b": 2})).await?;
                let inner = ctx.env().call("math.whoami", json!({})).await?;
                Ok(json!({"sum": sum.data["sum"], "inner": inner.data, "me": ctx.request_id()}))
            }),
        )
        .unwrap();
    let ctx = OperationContext::new()
        .with_request_id("req-1")
        .with_identity(Identity::new("ann"))
        .with_timeout(Duration::from_secs(60));
    let envelope = registry
        .execute("math.outer", json!({}), &ctx)
        .await
        .unwrap();
    assert_eq!(envelope.data["sum"], 3);
    assert_eq!(envelope.data["inner"]["parent"], "req-1");
    assert_eq!(envelope.data["inner"]["identity"], "ann");
    assert_eq!(envelope.data["inner"]["hasDeadline"], true);
}

#[tokio::test]
async fn output_mismatches_are_warnings_not_errors() {
    let registry = OperationRegistry::new();
    registry
        .register(
            OperationSpec::new("bad", "output", OperationKind::Query).output_schema(json!({
                "type": "string", "minLength": 5
            })),
            Handler::unary(|_, _| async move { Ok(json!("abc")) }),
        )
        .unwrap();
    let ((), warnings) = capture_warnings(async {
        let envelope = registry
            .execute("bad.output", json!({}), &ctx())
            .await
            .unwrap();
        assert_eq!(envelope.data, json!("abc"));
    })
    .await;
    assert!(
        warnings.contains("bad.output") && warnings.contains("output schema"),
        "{warnings}"
    );
}

#[tokio::test]
async fn undeclared_properties_are_dropped_even_when_no_property_is_declared() {
    let registry = OperationRegistry::new();
    registry
        .register(
            OperationSpec::new("shape", "empty", OperationKind::Query)
                .output_schema(json!({"type": "object", "properties": {}})),
            Handler::unary(|_, _| async move { Ok(json!({"extra": 1})) }),
        )
        .unwrap();
    registry
        .register(
            OperationSpec::new("shape", "open", OperationKind::Query)
                .output_schema(json!({"type": "object"})),
            Handler::unary(|_, _| async move { Ok(json!({"extra": 1})) }),
        )
        .unwrap();
    let empty = registry
        .execute("shape.empty", json!({}), &ctx())
        .await
        .unwrap();
    assert_eq!(
        empty.data,
        json!({}),
        "declared (empty) properties close the object"
    );
    let open = registry
        .execute("shape.open", json!({}), &ctx())
        .await
        .unwrap();
    assert_eq!(
        open.data,
        json!({"extra": 1}),
        "a free-form object keeps its entries"
    );
}

/// `register_lazy`: a schema that does not compile is not a registration error; that side
/// counts as Unknown from its first use, with one warning, and `compile_validators` reports it.
#[tokio::test]
async fn lazy_registration_degrades_an_uncompilable_schema_at_first_use() {
    let registry = OperationRegistry::new();
    let spec = OperationSpec::new("lazy", "echo", OperationKind::Query)
        .input_schema(json!({"type": "object", "properties": {"n": {"type": "integer"}}}))
        .output_schema(json!({"type": "no-such-type"}));
    registry
        .register_lazy(spec, Handler::unary(|input, _ctx| async move { Ok(input) }))
        .unwrap();
    let ((), warnings) = capture_warnings(async {
        // The input side compiles and checks.
        let error = registry
            .execute("lazy.echo", json!({"n": "x"}), &ctx())
            .await
            .unwrap_err();
        assert_eq!(error.code, ErrorCode::ValidationError);
        // The output side does not compile: the reply is passed through, unchecked.
        for _ in 0..2 {
            let envelope = registry
                .execute("lazy.echo", json!({"n": 1, "extra": true}), &ctx())
                .await
                .unwrap();
            assert_eq!(envelope.data, json!({"n": 1, "extra": true}));
        }
    })
    .await;
    assert_eq!(
        warnings.matches("does not compile").count(),
        1,
        "one warning, at the first use: {warnings}"
    );
    assert!(warnings.contains("lazy.echo"), "{warnings}");
    let error = registry.compile_validators("lazy.echo").unwrap_err();
    assert!(
        matches!(
            error,
            RegistryError::InvalidSchema {
                which: "output",
                ..
            }
        ),
        "{error}"
    );
    // Other registration rules still apply at once.
    let duplicate = OperationSpec::new("lazy", "echo", OperationKind::Query);
    let error = registry
        .register_lazy(duplicate, add_handler())
        .unwrap_err();
    assert!(
        matches!(error, RegistryError::DuplicateId { .. }),
        "{error}"
    );
}

/// Takes an integer.
#[opkit::operation(namespace = "numbers")]
async fn take_count(count: u32, scale: f64) -> f64 {
    f64::from(count) * scale
}

#[tokio::test]
async fn a_float_with_a_zero_fraction_is_an_integer_as_json_schema_says() {
    let registry = OperationRegistry::new();
    registry.register_operation(take_count).unwrap();
    let ctx = OperationContext::new();
    // `5.0` is an integer to JSON Schema, so the input check passes it: the fn must get it.
    let envelope = registry
        .execute(
            "numbers.take_count",
            json!({"count": 5.0, "scale": 2}),
            &ctx,
        )
        .await
        .unwrap();
    assert_eq!(envelope.data, json!(10.0));
    let error = registry
        .execute(
            "numbers.take_count",
            json!({"count": 5.5, "scale": 2}),
            &ctx,
        )
        .await
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::ValidationError);
}

/// A replaced operation is never missing: calls made while it is replaced again and again
/// find the old one or the new one, each answering its own version.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_during_a_replace_find_the_old_or_the_new_operation() {
    let registry = OperationRegistry::new();
    let version = |n: i64| {
        (
            OperationSpec::new("api", "version", OperationKind::Query),
            Handler::unary(move |_input, _ctx| async move { Ok(json!(n)) }),
        )
    };
    let (spec, handler) = version(0);
    assert!(!registry.replace_lazy(spec, handler).unwrap(), "added");
    let done = Arc::new(AtomicBool::new(false));
    let caller = {
        let (registry, done) = (registry.clone(), done.clone());
        tokio::spawn(async move {
            let mut calls = 0_usize;
            let ctx = OperationContext::default();
            // Bounded: at most 200,000 calls, whatever the replacing side does.
            while !done.load(Ordering::Acquire) && calls < 200_000 {
                let reply = registry.execute("api.version", json!({}), &ctx).await;
                let reply = reply.unwrap_or_else(|error| panic!("call {calls}: {error}"));
                assert!(reply.data.is_i64(), "{}", reply.data);
                calls += 1;
                tokio::task::yield_now().await;
            }
            calls
        })
    };
    for n in 1..=500 {
        let (spec, handler) = version(n);
        assert!(registry.replace(spec, handler).unwrap(), "replaced");
        tokio::task::yield_now().await;
    }
    done.store(true, Ordering::Release);
    assert!(caller.await.unwrap() > 0);
    let last = registry
        .execute("api.version", json!({}), &OperationContext::default())
        .await
        .unwrap();
    assert_eq!(last.data, json!(500));
    // A replacement that cannot be built changes nothing.
    let mismatched = OperationSpec::new("api", "version", OperationKind::Subscription);
    let error = registry.replace(mismatched, Handler::unary(|_, _| async { Ok(json!(0)) }));
    assert!(error.is_err());
    assert_eq!(
        registry.spec("api.version").unwrap().kind,
        OperationKind::Query
    );
}

/// Sixteen fields.
#[opkit::operation(namespace = "wide")]
#[allow(clippy::too_many_arguments)]
async fn sixteen(
    a: u8,
    b: u8,
    c: u8,
    d: u8,
    e: u8,
    f: u8,
    g: u8,
    h: u8,
    i: u8,
    j: u8,
    k: u8,
    l: u8,
    m: u8,
    n: u8,
    o: u8,
    p: u8,
) -> u32 {
    [a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p]
        .iter()
        .map(|v| u32::from(*v))
        .sum()
}

/// Seventeen fields: the input object's impls cover any width (a cons list of the fields).
#[opkit::operation(namespace = "wide")]
#[allow(clippy::too_many_arguments)]
async fn seventeen(
    a: u8,
    b: u8,
    c: u8,
    d: u8,
    e: u8,
    f: u8,
    g: u8,
    h: u8,
    i: u8,
    j: u8,
    k: u8,
    l: u8,
    m: u8,
    n: u8,
    o: u8,
    p: u8,
    renamed_q: Option<u8>,
) -> u32 {
    [
        a,
        b,
        c,
        d,
        e,
        f,
        g,
        h,
        i,
        j,
        k,
        l,
        m,
        n,
        o,
        p,
        renamed_q.unwrap_or(0),
    ]
    .iter()
    .map(|v| u32::from(*v))
    .sum()
}

#[test]
fn inputs_of_every_width_serialize_under_their_names_and_read_back() {
    let wide = serde_json::to_value(sixteen::input(
        1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,
    ))
    .unwrap();
    assert_eq!(wide.as_object().unwrap().len(), 16);
    assert_eq!(
        (wide["a"].clone(), wide["p"].clone()),
        (json!(1), json!(16))
    );
    let seventeen_input = seventeen::input(
        1,
        2,
        3,
        4,
        5,
        6,
        7,
        8,
        9,
        10,
        11,
        12,
        13,
        14,
        15,
        16,
        Some(17),
    );
    let wider = serde_json::to_value(&seventeen_input).unwrap();
    assert_eq!(wider.as_object().unwrap().len(), 17);
    assert_eq!(wider["renamed_q"], json!(17));
    // Both read back through their Deserialize impls (the registry's decoder).
    let back: <sixteen as opkit::TypedOperation>::Input = serde_json::from_value(wide).unwrap();
    assert_eq!(serde_json::to_value(back).unwrap()["h"], json!(8));
    let error =
        serde_json::from_value::<<seventeen as opkit::TypedOperation>::Input>(json!({"a": "x"}))
            .unwrap_err()
            .to_string();
    assert!(error.contains('a'), "{error}");
}

/// Data whose `Serialize` fails (a map keyed by something that is not a string would too).
#[derive(schemars::JsonSchema)]
struct Unwritable;

impl serde::Serialize for Unwritable {
    fn serialize<S: serde::Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
        Err(serde::ser::Error::custom("this data cannot be written"))
    }
}

#[opkit::operation(namespace = "broken")]
async fn unwritable() -> Unwritable {
    Unwritable
}

#[tokio::test]
async fn data_that_will_not_serialize_is_an_execution_error_in_either_form() {
    let registry = OperationRegistry::new();
    registry.register_typed::<unwritable>().unwrap();
    let ctx = OperationContext::new();

    // `execute` asks the handler for a `Value`: serialized in the handler, which names the
    // operation.
    let error = registry
        .execute(unwritable::ID, json!({}), &ctx)
        .await
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::ExecutionError);
    assert!(error.message.contains("`broken.unwritable`"), "{error:?}");
    assert!(error.message.contains("cannot be written"), "{error:?}");

    // The front door keeps the data in its type: it fails where it is read.
    let outcome = registry
        .serve(unwritable::ID, json!({}), ctx.clone())
        .await
        .unwrap();
    let opkit::middleware::Outcome::Unary(reply) = outcome else {
        panic!("a unary outcome")
    };
    let error = reply.to_json_bytes().unwrap_err();
    assert_eq!(error.code, ErrorCode::ExecutionError);
    assert!(error.message.contains("cannot be written"), "{error:?}");

    // The registry keeps working.
    registry.register_operation(add_typed).unwrap();
    let envelope = registry
        .execute(add_typed::ID, json!({"a": 2, "b": 3}), &ctx)
        .await
        .unwrap();
    assert_eq!(envelope.data, json!(5));
    let ResponseMeta::Local(meta) = envelope.meta else {
        panic!("local meta")
    };
    assert_eq!(&*meta.operation_id, "math.add_typed");
}

#[opkit::operation(namespace = "math")]
async fn add_typed(a: i64, b: i64) -> i64 {
    a + b
}

/// An envelope a handler builds (`unary_envelope`, `stream_envelope`) is finished as one it
/// writes as a `Value` (`unary`, `stream`): passed through with its meta, its data cast to the
/// output schema, an error envelope's data left as sent.
#[tokio::test]
async fn an_envelope_built_as_one_is_finished_as_one_written_as_json() {
    use opkit::envelope::{McpContentBlock, McpMeta, ResponseEnvelope, mcp_envelope};
    fn answer(error: bool) -> ResponseEnvelope {
        if error {
            let meta = McpMeta {
                is_error: true,
                content: vec![McpContentBlock::text("no")],
                structured_content: None,
                meta: None,
            };
            return mcp_envelope(json!({"sum": 2.0, "why": "no"}), meta);
        }
        let headers = BTreeMap::from([("x-remote".to_owned(), "1".to_owned())]);
        http_envelope(json!({"sum": 2.0}), 200, headers, "application/json")
    }
    let spec = |name: &str, kind| {
        OperationSpec::new("remote", name, kind).output_schema(json!({
            "type": "object",
            "properties": {"sum": {"type": "integer"}},
            "additionalProperties": false
        }))
    };
    let registry = OperationRegistry::new();
    let written = |input: Value| {
        serde_json::to_value(answer(input["error"] == json!(true)))
            .map_err(|error| CallError::execution(error.to_string()))
    };
    registry
        .register(
            spec("json", OperationKind::Query),
            Handler::unary(move |input, _| async move { written(input) }),
        )
        .unwrap();
    registry
        .register(
            spec("built", OperationKind::Query),
            Handler::unary_envelope(
                |input, _| async move { Ok(answer(input["error"] == json!(true))) },
            ),
        )
        .unwrap();
    registry
        .register(
            spec("json_items", OperationKind::Subscription),
            Handler::stream(move |_, _| {
                futures::stream::iter([false, true].map(answer)).map(|envelope| {
                    serde_json::to_value(envelope).map_err(|e| CallError::execution(e.to_string()))
                })
            }),
        )
        .unwrap();
    registry
        .register(
            spec("built_items", OperationKind::Subscription),
            Handler::stream_envelope(|_, _| {
                futures::stream::iter([false, true].map(answer).map(Ok))
            }),
        )
        .unwrap();

    for error in [false, true] {
        let input = json!({ "error": error });
        let json = registry
            .execute("remote.json", input.clone(), &ctx())
            .await
            .unwrap();
        let built = registry
            .execute("remote.built", input, &ctx())
            .await
            .unwrap();
        assert_eq!(built, json);
        if error {
            assert!(built.is_error());
            assert_eq!(built.data, json!({"sum": 2.0, "why": "no"}));
        } else {
            assert_eq!(built.data, json!({"sum": 2}));
            let ResponseMeta::Http(meta) = &built.meta else {
                panic!("{:?}", built.meta)
            };
            assert_eq!(meta.headers["x-remote"], "1");
        }
    }
    let items = |id: &'static str| {
        let registry = registry.clone();
        async move {
            let stream = registry.subscribe(id, json!({}), &ctx()).await.unwrap();
            stream.map(Result::unwrap).collect::<Vec<_>>().await
        }
    };
    let built = items("remote.built_items").await;
    assert_eq!(built, items("remote.json_items").await);
    assert_eq!(built[0].data, json!({"sum": 2}));
    assert!(built[1].is_error());
}
