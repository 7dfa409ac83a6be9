//! The Redis transport against a real `redis-server` (started by the harness on a free
//! loopback port): raw pub/sub semantics, the call protocol on top, load, timeouts, aborts,
//! access rules, a server restart and bad wire input.
#![cfg(all(feature = "redis", feature = "testing"))]

use crate::redis_support;

use futures::StreamExt;
use opkit::prelude::*;
use opkit::protocol::{CallHandler, PendingOptions, PendingRequestMap, PubSub, topics};
use redis::AsyncCommands;
use redis_support::RedisServer;
use redis_support::ops::next_text as next;
use redis_support::ops::{
    CapturedWarnings, PATIENCE, Probes, collect_items, eventually, init_logs, registry, within,
};
use serde_json::json;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_subscribers_get_everything_and_group_members_share() {
    init_logs();
    let server = RedisServer::start();
    let a = server.bus("fanout:").await;
    let b = server.bus("fanout:").await;

    // Nobody listens yet: the receipt says so.
    let receipt = a.publish("jobs", "lost".into()).await.unwrap();
    assert!(receipt.reached_nobody());

    let mut audit_1 = a.subscribe("jobs").await.unwrap();
    let mut audit_2 = b.subscribe("jobs").await.unwrap();
    let mut worker_1 = a.subscribe_group("jobs", "workers").await.unwrap();
    let mut worker_2 = b.subscribe_group("jobs", "workers").await.unwrap();
    let mut other_group = b.subscribe_group("jobs", "auditors").await.unwrap();

    let jobs: Vec<String> = (0..40).map(|n| format!("job-{n}")).collect();
    for job in &jobs {
        let receipt = a.publish("jobs", job.clone().into()).await.unwrap();
        // Two plain subscribers + two groups (each counts once).
        assert_eq!(receipt.receivers(), Some(4));
    }
    // Every plain subscriber and the single-member group get every message, in order.
    for subscription in [&mut audit_1, &mut audit_2, &mut other_group] {
        for job in &jobs {
            assert_eq!(&next(subscription).await, job);
        }
    }
    // The two members of `workers` share the messages: each exactly once, in order per member.
    let mut shared = Vec::new();
    while shared.len() < jobs.len() {
        tokio::select! {
            Some(message) = worker_1.next() => shared.push((1, String::from_utf8(message.to_vec()).unwrap())),
            Some(message) = worker_2.next() => shared.push((2, String::from_utf8(message.to_vec()).unwrap())),
            () = tokio::time::sleep(PATIENCE) => panic!("the workers got {} of {} jobs", shared.len(), jobs.len()),
        }
    }
    let mut got: Vec<&String> = shared.iter().map(|(_, job)| job).collect();
    got.sort();
    let mut expected: Vec<&String> = jobs.iter().collect();
    expected.sort();
    assert_eq!(got, expected, "every job went to exactly one worker");
    for member in [1, 2] {
        let mine: Vec<usize> = shared
            .iter()
            .filter(|(who, _)| *who == member)
            .map(|(_, job)| job[4..].parse().unwrap())
            .collect();
        assert!(mine.windows(2).all(|pair| pair[0] < pair[1]), "in order");
    }

    // Dropping subscriptions unsubscribes: the group members leave, the channel empties.
    drop((audit_1, audit_2, worker_1, worker_2, other_group));
    let mut raw = server.raw().await;
    let members_key = a.members_key("jobs");
    within("members leave", async {
        loop {
            let members: usize = raw.zcard(&members_key).await.unwrap();
            let receipt = a.publish("jobs", "late".into()).await.unwrap();
            if members == 0 && receipt.reached_nobody() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn round_trip_errors_and_subscriptions() {
    init_logs();
    let server = RedisServer::start();
    let probes = Probes::default();
    let _replica = CallHandler::new(registry(&probes), server.bus("rt:").await)
        .spawn()
        .await
        .unwrap();
    let map = PendingRequestMap::connect(server.bus("rt:").await)
        .await
        .unwrap();
    let ctx = OperationContext::default();

    let envelope = map
        .call("math.add", json!({"a": 2, "b": 40}), &ctx)
        .await
        .unwrap();
    assert_eq!(envelope.data, json!({"sum": 42}));
    assert!(
        matches!(&envelope.meta, opkit::ResponseMeta::Local(meta) if &*meta.operation_id == "math.add")
    );

    let invalid = map
        .call("math.add", json!({"a": "two"}), &ctx)
        .await
        .unwrap_err();
    assert_eq!(invalid.code, ErrorCode::ValidationError);

    // Nobody serves it: the publish receipt says so, no waiting for the deadline.
    let far = ctx.clone().with_timeout(Duration::from_secs(120));
    let missing = map.call("math.nope", json!({}), &far).await.unwrap_err();
    assert_eq!(missing.code, ErrorCode::OperationNotFound);

    let stream = map
        .subscribe("clock.count", json!({"to": 5}), &ctx)
        .await
        .unwrap();
    let items = collect_items(stream).await;
    assert_eq!(
        items.into_iter().map(Result::unwrap).collect::<Vec<_>>(),
        [json!(1), json!(2), json!(3), json!(4), json!(5)]
    );
    assert_eq!(map.pending_count(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn access_rules_are_enforced_by_the_replica() {
    init_logs();
    let server = RedisServer::start();
    let _replica = CallHandler::new(registry(&Probes::default()), server.bus("acl:").await)
        .spawn()
        .await
        .unwrap();
    let map = PendingRequestMap::connect(server.bus("acl:").await)
        .await
        .unwrap();
    let anonymous = map
        .call("admin.secret", json!({}), &OperationContext::default())
        .await
        .unwrap_err();
    assert_eq!(anonymous.code, ErrorCode::AccessDenied);
    let reader =
        OperationContext::default().with_identity(Identity::new("bob").with_scopes(["users:read"]));
    let denied = map
        .call("admin.secret", json!({}), &reader)
        .await
        .unwrap_err();
    assert_eq!(denied.code, ErrorCode::AccessDenied);
    let admin =
        OperationContext::default().with_identity(Identity::new("ann").with_scopes(["admin:read"]));
    let granted = map.call("admin.secret", json!({}), &admin).await.unwrap();
    assert_eq!(granted.data, json!("s3cret"));
}

/// 3 replicas, 3 callers × 3,000 calls: every request is executed exactly once, and every
/// replica takes part.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_replicas_execute_every_request_exactly_once() {
    init_logs();
    const CALLERS: u64 = 3;
    const CALLS: u64 = 3_000;
    let server = RedisServer::start();
    let replicas: Vec<Probes> = (0..3).map(|_| Probes::default()).collect();
    let mut handles = Vec::new();
    for probes in &replicas {
        handles.push(
            CallHandler::new(registry(probes), server.bus("load:").await)
                .spawn()
                .await
                .unwrap(),
        );
    }
    let mut callers = Vec::new();
    for caller in 0..CALLERS {
        let map = PendingRequestMap::connect(server.bus("load:").await)
            .await
            .unwrap();
        callers.push(tokio::spawn(async move {
            let ctx = OperationContext::default().with_timeout(Duration::from_secs(60));
            let results: Vec<_> = futures::stream::iter(0..CALLS)
                .map(|i| {
                    let (map, ctx) = (map.clone(), ctx.clone());
                    let n = caller * CALLS + i;
                    async move { (n, map.call("test.work", json!({"n": n}), &ctx).await) }
                })
                .buffer_unordered(64)
                .collect()
                .await;
            assert_eq!(map.pending_count(), 0);
            results
        }));
    }
    for caller in callers {
        for (n, result) in within("the load", caller).await.unwrap() {
            let envelope = result.unwrap_or_else(|error| panic!("call {n} failed: {error:?}"));
            assert_eq!(envelope.data, json!(n));
        }
    }
    let total = CALLERS * CALLS;
    for n in 0..total {
        let executions: usize = replicas.iter().map(|probes| probes.executions_of(n)).sum();
        assert_eq!(executions, 1, "request {n} was executed {executions} times");
    }
    let per_replica: Vec<usize> = replicas.iter().map(|probes| probes.calls.get()).collect();
    assert_eq!(per_replica.iter().sum::<usize>() as u64, total);
    assert!(
        per_replica.iter().all(|&count| count > 0),
        "every replica serves: {per_replica:?}"
    );
    drop(handles);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_caller_that_times_out_stops_the_handler() {
    init_logs();
    let server = RedisServer::start();
    let probes = Probes::default();
    let _replica = CallHandler::new(registry(&probes), server.bus("timeout:").await)
        .spawn()
        .await
        .unwrap();
    let map = PendingRequestMap::connect(server.bus("timeout:").await)
        .await
        .unwrap();
    let ctx = OperationContext::default().with_timeout(Duration::from_millis(300));
    let error = within("the call", map.call("test.forever", json!({}), &ctx))
        .await
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::Timeout);
    assert_eq!(map.pending_count(), 0);
    // The deadline travelled with the request, and the caller published call.aborted: the
    // handler's future is dropped.
    eventually("the handler stops", || probes.dropped.get() == 1).await;
    assert_eq!(probes.started.get(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_abort_stops_the_remote_handler() {
    init_logs();
    let server = RedisServer::start();
    let probes = Probes::default();
    let replica = CallHandler::new(registry(&probes), server.bus("abort:").await)
        .spawn()
        .await
        .unwrap();
    let map = PendingRequestMap::connect(server.bus("abort:").await)
        .await
        .unwrap();
    let call = {
        let map = map.clone();
        tokio::spawn(async move {
            let ctx = OperationContext::default().with_timeout(Duration::from_secs(120));
            map.call("test.forever", json!({}), &ctx).await
        })
    };
    eventually("the handler starts", || probes.started.get() == 1).await;
    assert_eq!(replica.in_flight(), 1);
    // The caller gives up: dropping the call's future publishes call.aborted.
    call.abort();
    eventually("the handler is dropped", || probes.dropped.get() == 1).await;
    eventually("the request is no longer running", || {
        replica.in_flight() == 0
    })
    .await;
    assert_eq!(map.pending_count(), 0);

    // Cancelling the context aborts too.
    let token = tokio_util::sync::CancellationToken::new();
    let ctx = OperationContext::default().with_cancellation(token.clone());
    let call = {
        let map = map.clone();
        tokio::spawn(async move { map.call("test.forever", json!({}), &ctx).await })
    };
    eventually("the second handler starts", || probes.started.get() == 2).await;
    token.cancel();
    let cancelled = within("the cancelled call", call)
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(cancelled.code, ErrorCode::Aborted);
    eventually("the second handler is dropped", || {
        probes.dropped.get() == 2
    })
    .await;
}

/// Redis stops mid-run: calls made while it is down fail fast with TRANSPORT_ERROR; after it
/// restarts (empty: no persistence), the same caller and replica work again without being
/// rebuilt.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_restart_mid_run() {
    init_logs();
    let mut server = RedisServer::start();
    let probes = Probes::default();
    let _replica = CallHandler::new(registry(&probes), server.bus("restart:").await)
        .spawn()
        .await
        .unwrap();
    let map = PendingRequestMap::connect(server.bus("restart:").await)
        .await
        .unwrap();
    let add = |a: i64| {
        let map = map.clone();
        async move {
            let ctx = OperationContext::default().with_timeout(Duration::from_secs(2));
            map.call("math.add", json!({"a": a, "b": 1}), &ctx).await
        }
    };
    for a in 0..20 {
        assert_eq!(add(a).await.unwrap().data, json!({"sum": a + 1}));
    }
    // A call in flight when the server dies ends (TIMEOUT at its deadline), never hangs.
    let in_flight = {
        let map = map.clone();
        tokio::spawn(async move {
            let ctx = OperationContext::default().with_timeout(Duration::from_secs(2));
            map.call("test.forever", json!({}), &ctx).await
        })
    };
    eventually("the handler starts", || probes.started.get() == 1).await;

    server.stop();
    // With a deadline far away, TRANSPORT_ERROR (not TIMEOUT) shows the call failed fast.
    let ctx = OperationContext::default().with_timeout(Duration::from_secs(120));
    for a in 0..5 {
        let error = within(
            "a call while redis is down",
            map.call("math.add", json!({"a": a, "b": 1}), &ctx),
        )
        .await
        .unwrap_err();
        assert_eq!(error.code, ErrorCode::TransportError, "{error:?}");
    }
    let ended = within("the call in flight", in_flight)
        .await
        .unwrap()
        .unwrap_err();
    assert!(
        matches!(ended.code, ErrorCode::Timeout | ErrorCode::TransportError),
        "{ended:?}"
    );

    server.restart();
    // The subscriptions reconnect in the background; until they have, calls fail with a
    // transient TRANSPORT_ERROR — never OPERATION_NOT_FOUND, which would say nobody serves
    // the operation and stop a caller's retries.
    let mut transient = 0;
    within("calls work again", async {
        loop {
            match add(1).await {
                Ok(_) => break,
                Err(error) => {
                    assert_ne!(error.code, ErrorCode::OperationNotFound, "{error:?}");
                    transient += 1;
                }
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    eprintln!("{transient} calls failed transiently while the replica rejoined");
    for a in 0..50 {
        assert_eq!(add(a).await.unwrap().data, json!({"sum": a + 1}));
    }
    assert_eq!(map.pending_count(), 0);
}

/// Garbage on every topic the protocol uses — not JSON, missing fields, unknown event types, a
/// stream entry without a payload, an output that is not an envelope — is logged and
/// dropped; the transport and the protocol keep working.
#[tokio::test]
async fn bad_wire_input_is_logged_and_dropped() {
    let warnings = CapturedWarnings::default();
    let _logs = tracing::subscriber::set_default(warnings.subscriber());
    let server = RedisServer::start();
    let probes = Probes::default();
    let bus = server.bus("bad:").await;
    let _replica = CallHandler::new(registry(&probes), bus.clone())
        .spawn()
        .await
        .unwrap();
    let map = PendingRequestMap::connect_with(
        server.bus("bad:").await,
        PendingOptions::default().with_caller_id("victim"),
    )
    .await
    .unwrap();
    let ctx = OperationContext::default().with_timeout(Duration::from_secs(30));
    let mut raw = server.raw().await;

    // Request topic, through the stream (what replicas read).
    let stream = bus.stream_key(&topics::request_topic("math.add"));
    let _: String = raw
        .xadd(&stream, "*", &[("x", "no payload field")])
        .await
        .unwrap();
    let _: String = raw
        .xadd(&stream, "*", &[("p", &b"\xff\x00garbage"[..])])
        .await
        .unwrap();
    for payload in [
        r#"{"type":"call.requested","requestId":"victim:999"}"#,
        r#"{"type":"call.teleported","requestId":"victim:998"}"#,
        r#"[1,2,3]"#,
    ] {
        let _: String = raw.xadd(&stream, "*", &[("p", payload)]).await.unwrap();
    }
    // Reply topic, through the channel (what callers read).
    let channel = bus.channel_name(map.reply_topic());
    for payload in [
        &b"\xff\xfe not json"[..],
        br#"{"type":"call.responded"}"#,
        br#"{"type":"call.exploded","requestId":"victim:1000"}"#,
    ] {
        let _: i64 = raw.publish(&channel, payload).await.unwrap();
    }
    // Abort topic: garbage too.
    let abort = bus.channel_name(&topics::abort_topic("math.add"));
    let _: i64 = raw.publish(&abort, "nonsense").await.unwrap();

    // An output that is not an envelope for a pending call: that call fails, nothing else.
    let pending = {
        let map = map.clone();
        let ctx = ctx.clone();
        tokio::spawn(async move { map.call("test.forever", json!({}), &ctx).await })
    };
    eventually("the handler starts", || probes.started.get() == 1).await;
    let _: i64 = raw
        .publish(
            &channel,
            r#"{"type":"call.responded","requestId":"victim:1","output":{"data":1}}"#,
        )
        .await
        .unwrap();
    let refused = within("the refused output", pending)
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(refused.code, ErrorCode::ValidationError, "{refused:?}");

    // Everything still works.
    for a in 0..10 {
        let envelope = map
            .call("math.add", json!({"a": a, "b": 2}), &ctx)
            .await
            .unwrap();
        assert_eq!(envelope.data, json!({"sum": a + 2}));
    }
    for expected in [
        "without a `p` payload field",
        "not JSON",
        "malformed call.requested",
        "unknown call event type",
        "must be a JSON object",
        "malformed event arrived on a reply topic",
        "malformed call.aborted",
        "not an envelope",
    ] {
        assert!(
            warnings.contains(expected),
            "no warning mentions {expected:?}; got {:#?}",
            warnings.messages()
        );
    }
}

/// A transport whose server is gone at connect time fails at once.
#[tokio::test]
async fn connecting_to_a_stopped_server_fails_fast() {
    let mut server = RedisServer::start();
    let url = server.url();
    server.stop();
    let error = opkit_adapters::redis::RedisPubSub::connect(&url)
        .await
        .unwrap_err();
    assert!(error.message().contains("redis"), "{error}");
}
