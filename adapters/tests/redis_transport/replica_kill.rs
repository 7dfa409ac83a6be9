//! A replica that dies mid-call: a real child process serving operations over Redis, killed
//! by its PID (SIGKILL) while it runs a request and while it takes part in a load; and a
//! query held by a replica that dies, answered by another one.
//!
//! The child is this test binary run again with `replica_child_process --ignored` and the
//! environment variables below; it records every execution in Redis, so the parent counts
//! executions across processes.
#![cfg(feature = "redis")]

use crate::redis_support;

use futures::StreamExt;
use opkit::prelude::*;
use opkit::protocol::{CallHandler, PendingRequestMap};
use opkit_adapters::redis::{RedisOptions, RedisPubSub};
use opkit_testkit::rerun::{ChildTest, Stdout, run_child, test_name};
use redis::AsyncCommands;
use redis_support::RedisServer;
use redis_support::ops::{init_logs, within};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

const URL_VAR: &str = "OPKIT_TEST_REPLICA_REDIS_URL";
const NAME_VAR: &str = "OPKIT_TEST_REPLICA_NAME";
const PREFIX: &str = "kill:";
/// Redis keys the replicas record into.
const EXECUTIONS: &str = "kill-test:executions";
const BY_REPLICA: &str = "kill-test:by-replica";
const BLOCK_STARTED: &str = "kill-test:block-started";
const LOOKUP_STARTED: &str = "kill-test:lookup-started";

/// Operations that record their executions in Redis:
/// - `test.work` `{n}` → `n` after 10 ms (`HINCRBY executions n 1`, `HINCRBY by-replica <name> 1`)
/// - `test.block` → never answers (`INCR block-started`); a mutation: never redelivered
/// - `test.lookup` → `"found"` (`INCR lookup-started`); a query that never answers on the
///   replica named `doomed`
async fn recording_registry(url: &str, name: &str) -> OperationRegistry {
    let conn = redis_support::connect_raw(url).await;
    let registry = OperationRegistry::new();
    let doomed = name == "doomed";
    let (work_conn, name) = (conn.clone(), name.to_owned());
    registry
        .register(
            OperationSpec::new("test", "work", OperationKind::Mutation),
            Handler::unary(move |input: Value, _ctx| {
                let (mut conn, name) = (work_conn.clone(), name.clone());
                async move {
                    let n = input["n"].as_u64().unwrap_or(u64::MAX);
                    let _: i64 = conn
                        .hincr(EXECUTIONS, n, 1)
                        .await
                        .map_err(CallError::execution_from)?;
                    let _: i64 = conn
                        .hincr(BY_REPLICA, &name, 1)
                        .await
                        .map_err(CallError::execution_from)?;
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    Ok(json!(n))
                }
            }),
        )
        .unwrap();
    let lookup_conn = conn.clone();
    registry
        .register(
            OperationSpec::new("test", "lookup", OperationKind::Query),
            Handler::unary(move |_input, _ctx| {
                let mut conn = lookup_conn.clone();
                async move {
                    let _: i64 = conn
                        .incr(LOOKUP_STARTED, 1)
                        .await
                        .map_err(CallError::execution_from)?;
                    if doomed {
                        futures::future::pending::<()>().await;
                    }
                    Ok(json!("found"))
                }
            }),
        )
        .unwrap();
    registry
        .register(
            OperationSpec::new("test", "block", OperationKind::Mutation),
            Handler::unary(move |_input, _ctx| {
                let mut conn = conn.clone();
                async move {
                    let _: i64 = conn
                        .incr(BLOCK_STARTED, 1)
                        .await
                        .map_err(CallError::execution_from)?;
                    futures::future::pending::<()>().await;
                    Ok(Value::Null)
                }
            }),
        )
        .unwrap();
    registry
}

trait ExecutionFrom {
    fn execution_from(error: redis::RedisError) -> CallError;
}

impl ExecutionFrom for CallError {
    fn execution_from(error: redis::RedisError) -> CallError {
        CallError::execution(error.to_string())
    }
}

async fn bus(url: &str) -> Arc<RedisPubSub> {
    Arc::new(
        // A short lease: a dead replica's queries are claimed well within the test's deadlines.
        RedisPubSub::connect_with(
            url,
            RedisOptions::default()
                .with_prefix(PREFIX)
                .with_lease(Duration::from_secs(2)),
        )
        .await
        .unwrap(),
    )
}

/// Not a test: the body of the replica child process. Does nothing unless run by the parent.
#[test]
#[ignore = "a helper: the replica child process of `a_replica_killed_mid_call`"]
fn replica_child_process() {
    let (Ok(url), Ok(name)) = (std::env::var(URL_VAR), std::env::var(NAME_VAR)) else {
        return;
    };
    run_child(async {
        let registry = recording_registry(&url, &name).await;
        let _serving = CallHandler::new(registry, bus(&url).await)
            .spawn()
            .await
            .unwrap();
        let mut conn = redis_support::connect_raw(&url).await;
        let _: () = conn
            .set(format!("kill-test:ready:{name}"), 1)
            .await
            .unwrap();
        futures::future::pending::<()>().await;
    });
}

/// The replica child process named `name` (killed by PID when dropped, even when the test
/// fails).
fn spawn_replica(server: &RedisServer, name: &str) -> ChildTest {
    let url = server.url();
    ChildTest::spawn(
        &test_name(module_path!(), "replica_child_process"),
        &[(URL_VAR, url.as_ref()), (NAME_VAR, name.as_ref())],
        Stdout::Discard,
    )
}

async fn wait_for_key(conn: &mut redis::aio::MultiplexedConnection, key: &str, at_least: i64) {
    within(&format!("waiting for {key} >= {at_least}"), async {
        loop {
            let value: Option<i64> = conn.get(key).await.unwrap();
            if value.unwrap_or(0) >= at_least {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_killed_mid_call() {
    init_logs();
    let server = RedisServer::start();
    let url = server.url();
    let mut raw = server.raw().await;
    let mut doomed = spawn_replica(&server, "doomed");
    wait_for_key(&mut raw, "kill-test:ready:doomed", 1).await;
    let map = PendingRequestMap::connect(bus(&url).await).await.unwrap();

    // 1. Only the doomed replica serves: the request lands there and starts.
    let blocked = {
        let map = map.clone();
        tokio::spawn(async move {
            let ctx = OperationContext::default().with_timeout(Duration::from_secs(3));
            map.call("test.block", json!({}), &ctx).await
        })
    };
    wait_for_key(&mut raw, BLOCK_STARTED, 1).await;

    // 2. A survivor joins (in this process); a paced load runs across both replicas.
    let survivor = CallHandler::new(recording_registry(&url, "survivor").await, bus(&url).await)
        .spawn()
        .await
        .unwrap();
    const LOAD: u64 = 600;
    let load = {
        let map = map.clone();
        tokio::spawn(async move {
            futures::stream::iter(0..LOAD)
                .map(|n| {
                    let map = map.clone();
                    // Each call has its own deadline, 3 s after it starts.
                    let ctx = OperationContext::default().with_timeout(Duration::from_secs(3));
                    async move { (n, map.call("test.work", json!({"n": n}), &ctx).await) }
                })
                .buffer_unordered(8)
                .collect::<Vec<_>>()
                .await
        })
    };
    within("the doomed replica takes part in the load", async {
        loop {
            let done: Option<i64> = raw.hget(BY_REPLICA, "doomed").await.unwrap();
            if done.unwrap_or(0) >= 20 {
                return;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;

    // 3. Kill it (SIGKILL, by PID) mid-call and mid-load.
    doomed.kill();

    // The blocked call ends at its deadline: TIMEOUT, not a hang, and not re-executed.
    let error = within("the blocked call", blocked)
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::Timeout, "{error:?}");

    // Every load call ends: answered, or TIMEOUT when the doomed replica took it and died.
    let results = within("the load", load).await.unwrap();
    let executions: HashMap<u64, i64> = raw.hgetall(EXECUTIONS).await.unwrap();
    let mut timeouts = 0;
    for (n, result) in &results {
        let count = executions.get(n).copied().unwrap_or(0);
        assert!(count <= 1, "request {n} was executed {count} times");
        match result {
            Ok(envelope) => {
                assert_eq!(envelope.data, json!(n));
                assert_eq!(count, 1, "request {n} answered but executed {count} times");
            }
            Err(error) => {
                assert_eq!(error.code, ErrorCode::Timeout, "request {n}: {error:?}");
                timeouts += 1;
            }
        }
    }
    assert_eq!(results.len() as u64, LOAD);
    let by_replica: HashMap<String, i64> = raw.hgetall(BY_REPLICA).await.unwrap();
    println!("load: {by_replica:?}, {timeouts} timeouts");
    assert!(by_replica.get("survivor").copied().unwrap_or(0) > 0);

    // 4. The survivor serves everything from now on; the killed request never ran again.
    let ctx = OperationContext::default().with_timeout(Duration::from_secs(10));
    for n in LOAD..LOAD + 50 {
        let envelope = map.call("test.work", json!({"n": n}), &ctx).await.unwrap();
        assert_eq!(envelope.data, json!(n));
    }
    let started: i64 = raw.get(BLOCK_STARTED).await.unwrap();
    assert_eq!(
        started, 1,
        "the request of the dead replica was executed again"
    );
    assert_eq!(map.pending_count(), 0);
    drop(survivor);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_query_held_by_a_killed_replica_is_answered_by_another() {
    init_logs();
    let server = RedisServer::start();
    let url = server.url();
    let mut raw = server.raw().await;
    let mut doomed = spawn_replica(&server, "doomed");
    wait_for_key(&mut raw, "kill-test:ready:doomed", 1).await;
    let map = PendingRequestMap::connect(bus(&url).await).await.unwrap();

    // Only the doomed replica serves: the query lands there and hangs.
    let lookup = {
        let map = map.clone();
        tokio::spawn(async move {
            let ctx = OperationContext::default().with_timeout(Duration::from_secs(25));
            map.call("test.lookup", json!({}), &ctx).await
        })
    };
    wait_for_key(&mut raw, LOOKUP_STARTED, 1).await;
    let survivor = CallHandler::new(recording_registry(&url, "survivor").await, bus(&url).await)
        .spawn()
        .await
        .unwrap();
    doomed.kill();

    // Once the doomed replica's lease expires, the survivor claims the query and answers it
    // before the caller's deadline: it ran twice (once on each replica), as queries may.
    let answer = within("the held query", lookup).await.unwrap().unwrap();
    assert_eq!(answer.data, json!("found"));
    let started: i64 = raw.get(LOOKUP_STARTED).await.unwrap();
    assert_eq!(started, 2);
    assert_eq!(map.pending_count(), 0);

    drop(survivor);
}
