//! Middleware (`opkit::middleware`) on the in-process paths: `execute`, `subscribe`, typed
//! calls, nested env calls and the front door (`OperationRegistry::serve`); order, scopes,
//! rejections, per-item hooks, the ready-made policies and tower layers.

use futures::StreamExt;
use opkit::edge::Edge;
use opkit::middleware::{
    self, Audit, AuditRecord, Cache, Call, ConcurrencyLimit, Next, Outcome, RateLimit,
    RateLimitKey, Reply, Scope, tower_layer,
};
use opkit::prelude::*;
use parking_lot::Mutex;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

static SIDE_EFFECTS: AtomicUsize = AtomicUsize::new(0);

/// Adds two integers.
#[operation(namespace = "mw.math")]
async fn add(a: i64, b: i64) -> i64 {
    a + b
}

/// Records that it ran.
#[operation(namespace = "mw.effects", mutation)]
async fn touch(tag: String) -> String {
    SIDE_EFFECTS.fetch_add(1, Ordering::SeqCst);
    tag
}

/// Counts to `n`.
#[operation(namespace = "mw.stream", subscription)]
fn count(n: u32) -> impl Stream<Item = u32> + Send + 'static {
    futures::stream::iter(1..=n)
}

/// Sleeps longer than its own timeout.
#[operation(namespace = "mw.slow", timeout = "50ms")]
async fn sleepy() -> u32 {
    tokio::time::sleep(Duration::from_secs(5)).await;
    1
}

/// Asks for the `expensive` layer.
#[operation(namespace = "mw.layers", layer = "expensive")]
async fn heavy(n: u64) -> u64 {
    n
}

/// Counts its own runs, so a cache hit is visible.
#[operation(namespace = "mw.cache")]
async fn lookup(ctx: &OperationContext, key: String) -> String {
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    let run = RUNS.fetch_add(1, Ordering::SeqCst);
    let who = ctx
        .identity()
        .map_or("anonymous", |identity| identity.id.as_str());
    format!("{key} for {who} (run {run})")
}

/// Calls `mw.math.add` through its env.
#[operation(namespace = "mw.nested")]
async fn twice(ctx: &OperationContext, n: i64) -> Result<i64, CallError> {
    let envelope = ctx
        .env()
        .call("mw.math.add", json!({"a": n, "b": n}))
        .await?;
    Ok(envelope.data.as_i64().unwrap_or_default())
}

fn registry() -> OperationRegistry {
    let registry = OperationRegistry::new();
    for register in [
        OperationRegistry::register_typed::<add>,
        OperationRegistry::register_typed::<touch>,
        OperationRegistry::register_typed::<count>,
        OperationRegistry::register_typed::<sleepy>,
        OperationRegistry::register_typed::<heavy>,
        OperationRegistry::register_typed::<lookup>,
        OperationRegistry::register_typed::<twice>,
    ] {
        register(&registry).unwrap();
    }
    registry
}

/// A middleware that appends `name` to `log` on the way in and `/name` on the way out.
fn tracer(name: &'static str, log: Arc<Mutex<Vec<String>>>) -> impl middleware::Middleware {
    middleware::from_fn(move |call: Call, next: Next| {
        let log = log.clone();
        async move {
            log.lock().push(format!("{name}:{}", call.id()));
            let outcome = next.run(call).await;
            log.lock().push(format!("/{name}"));
            outcome
        }
    })
}

#[tokio::test]
async fn middleware_runs_in_registration_order_on_every_path() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let registry = registry()
        .with_middleware(tracer("a", log.clone()))
        .with_middleware_for(Scope::namespace("mw.math"), tracer("b", log.clone()))
        .with_middleware(tracer("c", log.clone()));
    let ctx = registry.context();

    let envelope = registry
        .execute("mw.math.add", json!({"a": 1, "b": 2}), &ctx)
        .await
        .unwrap();
    assert_eq!(envelope.data, json!(3));
    assert_eq!(
        std::mem::take(&mut *log.lock()),
        [
            "a:mw.math.add",
            "b:mw.math.add",
            "c:mw.math.add",
            "/c",
            "/b",
            "/a"
        ]
    );

    // A typed call made with the registry's context.
    assert_eq!(add::call(&ctx, 2, 3).await.unwrap().data, 5);
    assert_eq!(
        std::mem::take(&mut *log.lock()),
        [
            "a:mw.math.add",
            "b:mw.math.add",
            "c:mw.math.add",
            "/c",
            "/b",
            "/a"
        ]
    );

    // A namespace scope covers only its namespace.
    registry
        .execute("mw.effects.touch", json!({"tag": "x"}), &ctx)
        .await
        .unwrap();
    assert_eq!(
        std::mem::take(&mut *log.lock()),
        ["a:mw.effects.touch", "c:mw.effects.touch", "/c", "/a"]
    );

    // A nested call through the env passes through the middleware again.
    let envelope = registry
        .execute("mw.nested.twice", json!({"n": 4}), &ctx)
        .await
        .unwrap();
    assert_eq!(envelope.data, json!(8));
    let seen = std::mem::take(&mut *log.lock());
    assert_eq!(
        seen.iter()
            .filter(|line| line.as_str() == "a:mw.math.add")
            .count(),
        1,
        "{seen:?}"
    );
    assert_eq!(seen.first().map(String::as_str), Some("a:mw.nested.twice"));

    // The front door, as an edge calls it.
    let served = registry
        .serve(
            "mw.math.add",
            json!({"a": 5, "b": 5}),
            OperationContext::new().with_edge(Edge::new("test")),
        )
        .await
        .unwrap();
    let Outcome::Unary(reply) = served else {
        panic!("a query answers once")
    };
    assert_eq!(reply.into_envelope().unwrap().data, json!(10));
    assert_eq!(std::mem::take(&mut *log.lock()).len(), 6);
}

#[tokio::test]
async fn a_rejecting_middleware_short_circuits_before_the_handler() {
    let registry =
        registry().with_middleware(middleware::from_fn(|call: Call, next: Next| async move {
            if call.spec().kind == OperationKind::Mutation && call.ctx().identity().is_none() {
                return Err(CallError::unauthenticated("mutations need a caller"));
            }
            next.run(call).await
        }));
    let before = SIDE_EFFECTS.load(Ordering::SeqCst);
    let ctx = registry.context();
    let error = registry
        .execute("mw.effects.touch", json!({"tag": "x"}), &ctx)
        .await
        .unwrap_err();
    assert_eq!(error.kind, Some(ErrorKind::Unauthenticated));
    let error = touch::call(&ctx, "typed".into()).await.unwrap_err();
    assert_eq!(error.kind, Some(ErrorKind::Unauthenticated));
    let error = registry
        .serve(
            "mw.effects.touch",
            json!({"tag": "x"}),
            OperationContext::new(),
        )
        .await
        .unwrap_err();
    assert_eq!(error.kind, Some(ErrorKind::Unauthenticated));
    assert_eq!(
        SIDE_EFFECTS.load(Ordering::SeqCst),
        before,
        "the handler never ran"
    );
}

#[tokio::test]
async fn typed_calls_serialize_nothing_for_a_middleware_that_reads_nothing() {
    let read = Arc::new(Mutex::new(Vec::new()));
    let seen = read.clone();
    let registry =
        registry().with_middleware(middleware::from_fn(move |mut call: Call, next: Next| {
            let seen = seen.clone();
            async move {
                let typed = call.is_typed();
                if call.id() == "mw.layers.heavy" {
                    // This one reads the input: a typed call's is serialized now.
                    seen.lock().push((typed, call.input()?.clone()));
                }
                let mut reply = next.run(call).await?.into_reply()?;
                if typed {
                    // Reading the result of a typed call serializes it, and the caller still gets
                    // its own value.
                    let _ = reply.envelope()?;
                }
                Ok(Outcome::Unary(reply))
            }
        }));
    let ctx = registry.context();
    assert_eq!(heavy::call(&ctx, 7).await.unwrap().data, 7);
    assert_eq!(add::call(&ctx, 1, 1).await.unwrap().data, 2);
    assert_eq!(*read.lock(), [(true, json!({"n": 7}))]);
}

#[tokio::test]
async fn a_middleware_can_replace_the_input_and_the_result_of_typed_calls() {
    let registry = registry().with_middleware(middleware::from_fn(
        |mut call: Call, next: Next| async move {
            call.set_input(json!({"a": 10, "b": 20}));
            let mut reply = next.run(call).await?.into_reply()?;
            let mut envelope = reply.envelope()?.clone();
            envelope.data = json!(envelope.data.as_i64().unwrap_or_default() + 1);
            Ok(Outcome::Unary(Reply::new(envelope)))
        },
    ));
    let ctx = registry.context();
    assert_eq!(add::call(&ctx, 1, 2).await.unwrap().data, 31);
    let envelope = registry
        .execute("mw.math.add", json!({"a": 1, "b": 2}), &ctx)
        .await
        .unwrap();
    assert_eq!(envelope.data, json!(31));
}

#[tokio::test]
async fn a_middleware_adds_state_the_handler_reads() {
    struct Greeting(&'static str);
    let registry = OperationRegistry::new().with_middleware(middleware::from_fn(
        |mut call: Call, next: Next| {
            let ctx = call.ctx().clone().with_state(Greeting("hello"));
            *call.ctx_mut() = ctx;
            next.run(call)
        },
    ));
    registry
        .register(
            OperationSpec::new("mw", "greet", OperationKind::Query),
            Handler::unary(|_input, ctx| async move { Ok(json!(ctx.state::<Greeting>()?.0)) }),
        )
        .unwrap();
    let envelope = registry
        .execute("mw.greet", json!({}), &registry.context())
        .await
        .unwrap();
    assert_eq!(envelope.data, json!("hello"));
}

#[tokio::test]
async fn subscription_items_pass_through_a_per_item_hook_on_every_path() {
    let items = Arc::new(AtomicUsize::new(0));
    let counted = items.clone();
    let registry =
        registry().with_middleware(middleware::from_fn(move |call: Call, next: Next| {
            let counted = counted.clone();
            async move {
                let outcome = next.run(call).await?;
                Ok(outcome.map_items(move |item| {
                    counted.fetch_add(1, Ordering::SeqCst);
                    let mut reply = item?;
                    let mut envelope = reply.envelope()?.clone();
                    envelope.data = json!(envelope.data.as_u64().unwrap_or_default() * 10);
                    Ok(Reply::new(envelope))
                }))
            }
        }));
    let ctx = registry.context();
    let json: Vec<Value> = registry
        .subscribe("mw.stream.count", json!({"n": 3}), &ctx)
        .await
        .unwrap()
        .map(|item| item.unwrap().data)
        .collect()
        .await;
    assert_eq!(json, [json!(10), json!(20), json!(30)]);
    let typed: Vec<u32> = count::subscribe(&ctx, 2)
        .map(|item| item.unwrap().data)
        .collect()
        .await;
    assert_eq!(typed, [10, 20]);
    let Outcome::Stream(served) = registry
        .serve("mw.stream.count", json!({"n": 1}), OperationContext::new())
        .await
        .unwrap()
    else {
        panic!("a subscription is a stream")
    };
    let served: Vec<Value> = served
        .map(|item| item.unwrap().into_envelope().unwrap().data)
        .collect()
        .await;
    assert_eq!(served, [json!(10)]);
    assert_eq!(items.load(Ordering::SeqCst), 6);
}

#[tokio::test]
async fn the_timeout_attribute_bounds_every_path() {
    let registry = registry();
    let ctx = registry.context();
    let error = registry
        .execute("mw.slow.sleepy", json!({}), &ctx)
        .await
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::Timeout);
    let error = sleepy::call(&OperationContext::new()).await.unwrap_err();
    assert_eq!(error.code, ErrorCode::Timeout);
    assert_eq!(sleepy::spec().timeout, Some(Duration::from_millis(50)));
}

#[tokio::test]
async fn a_layer_scope_covers_the_operations_that_name_it() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let registry =
        registry().with_middleware_for(Scope::layer("expensive"), tracer("x", log.clone()));
    let ctx = registry.context();
    heavy::call(&ctx, 1).await.unwrap();
    add::call(&ctx, 1, 1).await.unwrap();
    registry
        .execute("mw.layers.heavy", json!({"n": 2}), &ctx)
        .await
        .unwrap();
    assert_eq!(
        *log.lock(),
        ["x:mw.layers.heavy", "/x", "x:mw.layers.heavy", "/x"]
    );
}

#[tokio::test]
async fn the_cache_answers_without_the_handler_and_never_across_identities() {
    let registry = registry().with_middleware(Cache::new(Duration::from_secs(60)));
    let ann = registry.context().with_identity(Identity::new("ann"));
    let bob = registry.context().with_identity(Identity::new("bob"));
    let input = json!({"key": "k"});
    let first = registry
        .execute("mw.cache.lookup", input.clone(), &ann)
        .await
        .unwrap();
    let again = registry
        .execute("mw.cache.lookup", input.clone(), &ann)
        .await
        .unwrap();
    assert_eq!(
        first.data, again.data,
        "the second call is the cached envelope"
    );
    let typed = lookup::call(&ann, "k".into()).await.unwrap();
    assert_eq!(json!(typed.data), first.data, "typed calls share the cache");
    let other = registry
        .execute("mw.cache.lookup", input.clone(), &bob)
        .await
        .unwrap();
    assert_ne!(other.data, first.data, "bob never gets ann's result");
    assert!(other.data.as_str().unwrap().contains("for bob"));
    let other_key = registry
        .execute("mw.cache.lookup", json!({"key": "j"}), &ann)
        .await
        .unwrap();
    assert_ne!(other_key.data, first.data);
    // The front door carries the hint the HTTP and MCP servers surface.
    let Outcome::Unary(reply) = registry
        .serve(
            "mw.cache.lookup",
            input,
            OperationContext::new().with_identity(Identity::new("ann")),
        )
        .await
        .unwrap()
    else {
        panic!("a query answers once")
    };
    assert_eq!(
        reply.cache_hint().map(|hint| hint.ttl),
        Some(Duration::from_secs(60))
    );
}

#[tokio::test]
async fn a_rate_limit_is_one_budget_per_identity_across_paths() {
    let registry =
        registry().with_middleware(RateLimit::per_minute(3).keyed_by(RateLimitKey::Identity));
    let ann = registry.context().with_identity(Identity::new("ann"));
    registry
        .execute("mw.math.add", json!({"a": 1, "b": 1}), &ann)
        .await
        .unwrap();
    add::call(&ann, 1, 1).await.unwrap();
    registry
        .serve(
            "mw.math.add",
            json!({"a": 1, "b": 1}),
            OperationContext::new().with_identity(Identity::new("ann")),
        )
        .await
        .unwrap();
    let error = add::call(&ann, 1, 1).await.unwrap_err();
    assert_eq!(error.kind, Some(ErrorKind::RateLimited));
    assert_eq!(error.code, ErrorCode::ExecutionError);
    let retry = error
        .details
        .as_ref()
        .and_then(|details| details["retryAfterMs"].as_u64())
        .unwrap();
    assert!(retry > 0 && retry <= 20_000, "{retry}");
    // Another identity has its own budget.
    let bob = registry.context().with_identity(Identity::new("bob"));
    add::call(&bob, 1, 1).await.unwrap();
}

#[tokio::test]
async fn concurrency_caps_hold_with_opkit_and_tower_layers() {
    for tower in [false, true] {
        let running = Arc::new(AtomicUsize::new(0));
        let peak = Arc::new(AtomicUsize::new(0));
        let registry = OperationRegistry::new();
        let (now, most) = (running.clone(), peak.clone());
        registry
            .register(
                OperationSpec::new("mw", "busy", OperationKind::Query),
                Handler::unary(move |_input, _ctx| {
                    let (now, most) = (now.clone(), most.clone());
                    async move {
                        let at = now.fetch_add(1, Ordering::SeqCst) + 1;
                        most.fetch_max(at, Ordering::SeqCst);
                        tokio::time::sleep(Duration::from_millis(20)).await;
                        now.fetch_sub(1, Ordering::SeqCst);
                        Ok(json!(at))
                    }
                }),
            )
            .unwrap();
        let registry = if tower {
            registry.with_middleware_for(
                Scope::operation("mw.busy"),
                tower_layer(tower::limit::ConcurrencyLimitLayer::new(2)),
            )
        } else {
            registry.with_middleware_for(Scope::operation("mw.busy"), ConcurrencyLimit::new(2))
        };
        let calls =
            (0..8).map(|_| registry.execute("mw.busy", json!({}), &OperationContext::new()));
        for result in futures::future::join_all(calls).await {
            result.unwrap();
        }
        assert_eq!(peak.load(Ordering::SeqCst), 2, "tower: {tower}");
    }
}

#[tokio::test]
async fn a_full_cap_can_refuse_at_once_and_tower_timeouts_are_timeouts() {
    let registry = registry()
        .with_middleware_for(
            Scope::operation("mw.slow.sleepy"),
            ConcurrencyLimit::new(1).reject_when_full(),
        )
        .with_middleware_for(
            Scope::operation("mw.math.add"),
            tower_layer(tower::timeout::TimeoutLayer::new(Duration::from_millis(1))),
        );
    let ctx = registry.context();
    let (first, second) = tokio::join!(
        registry.execute("mw.slow.sleepy", json!({}), &ctx),
        registry.execute("mw.slow.sleepy", json!({}), &ctx),
    );
    let codes = [first.unwrap_err(), second.unwrap_err()].map(|error| error.kind);
    assert!(codes.contains(&Some(ErrorKind::Unavailable)), "{codes:?}");
    // The tower timeout layer: an operation that answers at once still passes.
    assert_eq!(add::call(&ctx, 1, 2).await.unwrap().data, 3);
}

#[tokio::test]
async fn audit_records_who_called_what_through_which_edge() {
    let records: Arc<Mutex<Vec<AuditRecord>>> = Arc::default();
    let sink = records.clone();
    let registry = registry()
        .with_middleware(Audit::new().with_sink(move |record| sink.lock().push(record.clone())))
        .with_middleware(RateLimit::per_minute(1).keyed_by(RateLimitKey::Operation));
    let ctx = OperationContext::new()
        .with_identity(Identity::new("ann"))
        .with_edge(Edge::new(Edge::HTTP));
    registry
        .serve("mw.math.add", json!({"a": 1, "b": 2}), ctx.clone())
        .await
        .unwrap();
    registry
        .serve("mw.math.add", json!({"a": 1, "b": 2}), ctx.clone())
        .await
        .unwrap_err();
    let Outcome::Stream(items) = registry
        .serve("mw.stream.count", json!({"n": 2}), ctx)
        .await
        .unwrap()
    else {
        panic!("a stream")
    };
    assert_eq!(items.count().await, 2);
    let records = records.lock();
    let summary: Vec<_> = records
        .iter()
        .map(|record| {
            (
                record.operation.as_str(),
                record.identity.as_deref(),
                record.edge,
                record.outcome,
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("mw.math.add", Some("ann"), Some("http_server"), Ok(())),
            (
                "mw.math.add",
                Some("ann"),
                Some("http_server"),
                Err(ErrorCode::ExecutionError)
            ),
            ("mw.stream.count", Some("ann"), Some("http_server"), Ok(())),
        ]
    );
}

#[tokio::test]
async fn the_front_door_checks_access_and_names_unknown_operations() {
    #[operation(namespace = "mw.secret", access(scopes = ["secret:read"]))]
    async fn peek() -> u8 {
        1
    }
    let registry = OperationRegistry::new();
    registry.register_operation(peek).unwrap();
    let error = registry
        .serve("mw.secret.peek", json!({}), OperationContext::new())
        .await
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::AccessDenied);
    let allowed =
        OperationContext::new().with_identity(Identity::new("ann").with_scopes(["secret:read"]));
    assert!(
        registry
            .serve("mw.secret.peek", json!({}), allowed)
            .await
            .is_ok()
    );
    let error = registry
        .serve("mw.nothing", json!({}), OperationContext::new())
        .await
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::OperationNotFound);
}
