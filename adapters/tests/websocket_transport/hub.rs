//! The WebSocket transport: a hub on a loopback port, spokes connecting to it (in this
//! process, each over its own WebSocket), the call protocol on top.
#![cfg(feature = "websocket")]

use crate::ops;

use crate::raw::{RawSpoke, next_frame, raw_connection};
use futures::{SinkExt, StreamExt};
use opkit::prelude::*;
use opkit::protocol::{CallHandler, CallHandlerHandle, PendingRequestMap, PubSub, topics};
use opkit_adapters::websocket::{
    HubOptions, SpokeGrant, SpokeOptions, StaticTokens, WsHub, WsSpoke,
};
use ops::{
    CapturedWarnings, PATIENCE, Probes, collect_items, eventually, init_logs, registry, within,
};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;
use tokio_tungstenite::tungstenite::Message;

fn tokens() -> StaticTokens {
    StaticTokens::new()
        .with_token("math-token", SpokeGrant::service("math"))
        .with_token(
            "web-token",
            SpokeGrant::new("web").with_topics(["jobs", "echo"]),
        )
        .with_token(
            "kiosk-token",
            SpokeGrant::new("kiosk").with_identity(Identity::new("kiosk-7")),
        )
        .with_token(
            "ops-token",
            SpokeGrant::new("ops")
                .with_identity(Identity::new("ops-bot").with_scopes(["admin:read"])),
        )
}

async fn hub() -> WsHub {
    WsHub::bind("127.0.0.1:0", tokens()).await.unwrap()
}

fn fast(token: &str) -> SpokeOptions {
    SpokeOptions::new(token).with_backoff(Duration::from_millis(20), Duration::from_millis(200))
}

async fn spoke(hub_url: &str, token: &str) -> Arc<WsSpoke> {
    Arc::new(WsSpoke::connect_with(hub_url, fast(token)).await.unwrap())
}

async fn serve(hub_url: &str, token: &str, probes: &Probes) -> (Arc<WsSpoke>, CallHandlerHandle) {
    let spoke = spoke(hub_url, token).await;
    let handle = CallHandler::new(registry(probes), spoke.clone())
        .spawn()
        .await
        .unwrap();
    (spoke, handle)
}

async fn caller(hub_url: &str, token: &str) -> (Arc<WsSpoke>, PendingRequestMap) {
    let spoke = spoke(hub_url, token).await;
    let map = PendingRequestMap::connect(spoke.clone()).await.unwrap();
    (spoke, map)
}

fn ctx_for(timeout: Duration) -> OperationContext {
    OperationContext::default().with_timeout(timeout)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn round_trip_subscriptions_and_announced_operations() {
    init_logs();
    let hub = hub().await;
    let probes = Probes::default();
    let (_math, _serving) = serve(&hub.url(), "math-token", &probes).await;
    let (_web, map) = caller(&hub.url(), "web-token").await;
    let ctx = ctx_for(Duration::from_secs(20));

    let envelope = map
        .call("math.add", json!({"a": 2, "b": 40}), &ctx)
        .await
        .unwrap();
    assert_eq!(envelope.data, json!({"sum": 42}));
    let invalid = map.call("math.add", json!({}), &ctx).await.unwrap_err();
    assert_eq!(invalid.code, ErrorCode::ValidationError);
    let far = ctx_for(Duration::from_secs(120));
    let missing = map.call("math.nope", json!({}), &far).await.unwrap_err();
    assert_eq!(missing.code, ErrorCode::OperationNotFound);

    let stream = map
        .subscribe("clock.count", json!({"to": 4}), &ctx)
        .await
        .unwrap();
    let items: Vec<_> = collect_items(stream)
        .await
        .into_iter()
        .map(Result::unwrap)
        .collect();
    assert_eq!(items, [json!(1), json!(2), json!(3), json!(4)]);

    // The spoke announced what it serves by joining the request topics.
    let operations = hub.operations();
    assert_eq!(operations["math.add"].len(), 1);
    assert!(operations["math.add"][0].starts_with("math#"));
    assert!(operations.contains_key("clock.count"));
    assert_eq!(hub.spokes().len(), 2);

    // Callers in the hub's process reach spokes too.
    let local = PendingRequestMap::connect(Arc::new(hub.pubsub()))
        .await
        .unwrap();
    let envelope = local
        .call("math.add", json!({"a": 1, "b": 1}), &ctx)
        .await
        .unwrap();
    assert_eq!(envelope.data, json!({"sum": 2}));
    assert_eq!(map.pending_count(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_subscribers_get_everything_and_group_members_share() {
    init_logs();
    let hub = hub().await;
    let a = spoke(&hub.url(), "web-token").await;
    let b = spoke(&hub.url(), "math-token").await;
    let local = hub.pubsub();
    assert!(
        a.publish("jobs", "lost".into())
            .await
            .unwrap()
            .reached_nobody()
    );

    let mut audit_a = a.subscribe("jobs").await.unwrap();
    let mut audit_local = local.subscribe("jobs").await.unwrap();
    let mut worker_a = a.subscribe_group("jobs", "workers").await.unwrap();
    let mut worker_b = b.subscribe_group("jobs", "workers").await.unwrap();
    let mut worker_local = local.subscribe_group("jobs", "workers").await.unwrap();

    let jobs: Vec<String> = (0..30).map(|n| format!("job-{n}")).collect();
    for job in &jobs {
        let receipt = b.publish("jobs", job.clone().into()).await.unwrap();
        assert_eq!(
            receipt.receivers(),
            Some(3),
            "two plain subscribers and one group"
        );
    }
    for subscription in [&mut audit_a, &mut audit_local] {
        for job in &jobs {
            let message = within("a message", subscription.next()).await.unwrap();
            assert_eq!(&message[..], job.as_bytes());
        }
    }
    let mut shared = Vec::new();
    while shared.len() < jobs.len() {
        tokio::select! {
            Some(message) = worker_a.next() => shared.push(message),
            Some(message) = worker_b.next() => shared.push(message),
            Some(message) = worker_local.next() => shared.push(message),
            () = tokio::time::sleep(PATIENCE) => panic!("the workers got {} jobs", shared.len()),
        }
    }
    let mut got: Vec<String> = shared
        .iter()
        .map(|message| String::from_utf8(message.to_vec()).unwrap())
        .collect();
    got.sort();
    let mut expected = jobs.clone();
    expected.sort();
    assert_eq!(got, expected, "each job went to exactly one worker");

    drop((audit_a, worker_a, worker_b));
    drop((audit_local, worker_local));
    within("unsubscribed", async {
        while !a
            .publish("jobs", "late".into())
            .await
            .unwrap()
            .reached_nobody()
        {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
}

/// Three serving spokes, 3 × 1,000 calls: every request executed exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_serving_spokes_execute_every_request_exactly_once() {
    init_logs();
    const CALLS: u64 = 3_000;
    let hub = hub().await;
    let replicas: Vec<Probes> = (0..3).map(|_| Probes::default()).collect();
    let mut serving = Vec::new();
    for probes in &replicas {
        serving.push(serve(&hub.url(), "math-token", probes).await);
    }
    let (_web, map) = caller(&hub.url(), "web-token").await;
    let ctx = ctx_for(Duration::from_secs(60));
    let results: Vec<_> = futures::stream::iter(0..CALLS)
        .map(|n| {
            let (map, ctx) = (map.clone(), ctx.clone());
            async move { (n, map.call("test.work", json!({"n": n}), &ctx).await) }
        })
        .buffer_unordered(64)
        .collect()
        .await;
    for (n, result) in results {
        assert_eq!(result.unwrap().data, json!(n));
    }
    for n in 0..CALLS {
        let executions: usize = replicas.iter().map(|probes| probes.executions_of(n)).sum();
        assert_eq!(executions, 1, "request {n} executed {executions} times");
    }
    let per_replica: Vec<usize> = replicas.iter().map(|probes| probes.calls.get()).collect();
    assert!(
        per_replica.iter().all(|&count| count > 0),
        "{per_replica:?}"
    );
    assert_eq!(map.pending_count(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unauthenticated_spoke_is_refused() {
    init_logs();
    let hub = hub().await;
    let error = WsSpoke::connect(&hub.url(), "guessed-token")
        .await
        .unwrap_err();
    assert!(error.message().contains("401"), "{error}");
    // No token at all: refused in the handshake too.
    let refused = tokio_tungstenite::connect_async(hub.url())
        .await
        .unwrap_err();
    assert!(refused.to_string().contains("401"), "{refused}");
    assert!(hub.spokes().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn access_rules_are_enforced_where_the_operation_runs() {
    init_logs();
    let hub = hub().await;
    let (_math, _serving) = serve(&hub.url(), "math-token", &Probes::default()).await;
    let (_web, web) = caller(&hub.url(), "web-token").await;
    let ctx = ctx_for(Duration::from_secs(20));

    // The identity travels with the call; the serving spoke checks the scope.
    let bob = ctx
        .clone()
        .with_identity(Identity::new("bob").with_scopes(["users:read"]));
    let denied = web.call("admin.secret", json!({}), &bob).await.unwrap_err();
    assert_eq!(denied.code, ErrorCode::AccessDenied);
    let anonymous = web.call("admin.secret", json!({}), &ctx).await.unwrap_err();
    assert_eq!(anonymous.code, ErrorCode::AccessDenied);
    let ann = ctx
        .clone()
        .with_identity(Identity::new("ann").with_scopes(["admin:read"]));
    assert_eq!(
        web.call("admin.secret", json!({}), &ann)
            .await
            .unwrap()
            .data,
        json!("s3cret")
    );

    // A spoke whose token is bound to an identity cannot claim another one: the hub stamps it.
    let (_kiosk, kiosk) = caller(&hub.url(), "kiosk-token").await;
    let forged = kiosk
        .call("admin.secret", json!({}), &ann)
        .await
        .unwrap_err();
    assert_eq!(forged.code, ErrorCode::AccessDenied);
    let (_ops, ops) = caller(&hub.url(), "ops-token").await;
    assert_eq!(
        ops.call("admin.secret", json!({}), &ctx)
            .await
            .unwrap()
            .data,
        json!("s3cret")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_caller_that_times_out_and_an_abort_stop_the_remote_handler() {
    init_logs();
    let hub = hub().await;
    let probes = Probes::default();
    let (_math, serving) = serve(&hub.url(), "math-token", &probes).await;
    let (_web, map) = caller(&hub.url(), "web-token").await;

    let error = map
        .call(
            "test.forever",
            json!({}),
            &ctx_for(Duration::from_millis(300)),
        )
        .await
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::Timeout);
    eventually("the timed-out handler stops", || probes.dropped.get() == 1).await;

    let call = {
        let map = map.clone();
        tokio::spawn(async move {
            map.call(
                "test.forever",
                json!({}),
                &ctx_for(Duration::from_secs(120)),
            )
            .await
        })
    };
    eventually("the handler starts", || probes.started.get() == 2).await;
    call.abort();
    eventually("the aborted handler stops", || probes.dropped.get() == 2).await;
    eventually("nothing runs", || serving.in_flight() == 0).await;
    assert_eq!(map.pending_count(), 0);
}

/// A serving spoke drops: its call in flight fails with TRANSPORT_ERROR at once (not at the
/// deadline), and so do calls made before another spoke serves the operation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spoke_that_drops_fails_its_calls_with_transport_error() {
    init_logs();
    let hub = hub().await;
    let probes = Probes::default();
    let (math, serving) = serve(&hub.url(), "math-token", &probes).await;
    let (_web, map) = caller(&hub.url(), "web-token").await;
    let far = ctx_for(Duration::from_secs(300));

    let in_flight = {
        let (map, far) = (map.clone(), far.clone());
        tokio::spawn(async move { map.call("test.forever", json!({}), &far).await })
    };
    eventually("the handler starts", || probes.started.get() == 1).await;
    math.close();
    let error = within("the call in flight", in_flight)
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::TransportError, "{error:?}");
    assert!(error.message.contains("disconnected"), "{error:?}");

    eventually("the hub forgets the spoke", || hub.spokes().len() == 1).await;
    let error = map
        .call("math.add", json!({"a": 1, "b": 2}), &far)
        .await
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::TransportError, "{error:?}");
    drop(serving);

    // Another spoke takes over.
    let (_math_2, _serving_2) = serve(&hub.url(), "math-token", &Probes::default()).await;
    let envelope = map
        .call("math.add", json!({"a": 1, "b": 2}), &far)
        .await
        .unwrap();
    assert_eq!(envelope.data, json!({"sum": 3}));
    assert_eq!(map.pending_count(), 0);
}

/// Spokes reconnect with backoff after the hub drops them, and after the hub restarts; the
/// same CallHandler and PendingRequestMap keep working.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spokes_reconnect_after_a_drop_and_a_hub_restart() {
    init_logs();
    let hub = hub().await;
    let address = hub.local_addr();
    let url = hub.url();
    let (math, _serving) = serve(&url, "math-token", &Probes::default()).await;
    let (web, map) = caller(&url, "web-token").await;
    let ctx = || ctx_for(Duration::from_secs(2));
    let works = |map: PendingRequestMap| async move {
        map.call("math.add", json!({"a": 20, "b": 22}), &ctx())
            .await
            .map(|envelope| envelope.data)
    };
    assert_eq!(works(map.clone()).await.unwrap(), json!({"sum": 42}));

    assert_eq!(hub.disconnect("math"), 1);
    assert_eq!(hub.disconnect("web"), 1);
    within("both reconnect and calls work again", async {
        while works(map.clone()).await.is_err() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(math.is_connected() && web.is_connected());

    // The hub goes away: calls fail fast; a new hub on the same address gets the spokes back.
    drop(hub);
    eventually("the caller notices", || !web.is_connected()).await;
    let error = map
        .call(
            "math.add",
            json!({"a": 1, "b": 1}),
            &ctx_for(Duration::from_secs(300)),
        )
        .await
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::TransportError, "{error:?}");
    // The old hub's listener closes in its own task, shortly after the drop.
    let hub = within("the address is free again", async {
        loop {
            match WsHub::bind_with(address, tokens(), HubOptions::default()).await {
                Ok(hub) => return hub,
                Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
            }
        }
    })
    .await;
    within("calls work through the new hub", async {
        while works(map.clone()).await.is_err() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert_eq!(hub.spokes().len(), 2);
}

/// Garbage frames are logged and dropped, and bad call events on the protocol's topics are
/// refused by the hub, each with an error naming what is wrong: the connection, the hub and
/// the protocol keep working.
#[tokio::test]
async fn bad_wire_input_is_refused_and_the_rest_keeps_working() {
    let warnings = CapturedWarnings::default();
    let _logs = tracing::subscriber::set_default(warnings.subscriber());
    let hub = hub().await;
    let probes = Probes::default();
    let (_math, _serving) = serve(&hub.url(), "math-token", &probes).await;
    let (_web, map) = caller(&hub.url(), "web-token").await;
    let ctx = ctx_for(Duration::from_secs(20));

    // Frames the hub cannot read, on a raw authenticated connection.
    let mut raw = raw_connection(&hub.url(), "web-token").await;
    assert!(next_frame(&mut raw).await.contains("welcome"));
    for frame in [
        Message::binary(&b"\xff\x00\x13garbage"[..]),
        Message::text("not json at all"),
        Message::text(r#"{"op":"teleport","id":1}"#),
        Message::text(r#"{"op":"publish"}"#),
        Message::text(r#"{"op":"ok","id":3}"#),
    ] {
        raw.send(frame).await.unwrap();
        assert!(next_frame(&mut raw).await.contains(r#""op":"error""#));
    }
    // The same connection still works: subscribe, publish, receive.
    raw.send(Message::text(
        r#"{"op":"subscribe","id":10,"topic":"echo"}"#,
    ))
    .await
    .unwrap();
    assert_eq!(next_frame(&mut raw).await, r#"{"op":"ok","id":10}"#);
    raw.send(Message::binary(
        &b"{\"op\":\"publish\",\"id\":11,\"topic\":\"echo\"}\nhello"[..],
    ))
    .await
    .unwrap();
    let mut frames = vec![next_frame(&mut raw).await, next_frame(&mut raw).await];
    frames.sort();
    assert_eq!(
        frames,
        [
            r#"{"op":"message","sub":10}"#.to_owned() + "\nhello",
            r#"{"op":"ok","id":11,"receivers":1}"#.to_owned()
        ]
    );
    drop(raw);

    // Bad call events on the request topic and the reply topic: refused, naming why.
    let mut raw = RawSpoke::connect(&hub.url(), "web-token").await;
    let request_topic = topics::request_topic("math.add");
    for (payload, why) in [
        (&b"\xff not json"[..], "cannot read this call.requested"),
        (
            br#"{"type":"call.requested","requestId":"x:1"}"#,
            "missing the required field `operationId`",
        ),
        (
            br#"{"type":"call.vanished","requestId":"x:2"}"#,
            "unknown call event type",
        ),
        (
            br#"{"type":"call.completed","requestId":"x:3"}"#,
            "only call.requested",
        ),
    ] {
        let answer = raw.publish(&request_topic, payload).await;
        assert!(crate::raw::refused(&answer, why), "{answer}");
    }
    let pending = {
        let (map, ctx) = (map.clone(), ctx.clone());
        tokio::spawn(async move { map.call("test.forever", json!({}), &ctx).await })
    };
    eventually("the handler starts", || probes.started.get() == 1).await;
    let bad_output = format!(
        r#"{{"type":"call.responded","requestId":"{}:1","output":{{"data":1}}}}"#,
        map.caller_id()
    );
    for (payload, why) in [
        (&b"\x00\x01"[..], "cannot read this as one"),
        (
            br#"{"type":"call.requested","requestId":"q:1"}"#,
            "cannot read this as one",
        ),
        (bad_output.as_bytes(), "not routed to this spoke"),
    ] {
        let answer = raw.publish(map.reply_topic(), payload).await;
        assert!(crate::raw::refused(&answer, why), "{answer}");
    }
    // A reply to a request nobody made reaches nobody.
    let stray = br#"{"type":"call.completed","requestId":"nobody:1"}"#;
    let answer = raw.publish(topics::FALLBACK_REPLY_TOPIC, stray).await;
    assert!(answer.contains(r#""receivers":0"#), "{answer}");
    pending.abort();

    for a in 0..5 {
        let envelope = map
            .call("math.add", json!({"a": a, "b": 1}), &ctx)
            .await
            .unwrap();
        assert_eq!(envelope.data, json!({"sum": a + 1}));
    }
    // Refusals are logged at a bounded rate: the first one of the second, at least.
    for expected in ["malformed frame", "spokes do not send"] {
        assert!(
            warnings.contains(expected),
            "no warning mentions {expected:?}: {:#?}",
            warnings.messages()
        );
    }
}
