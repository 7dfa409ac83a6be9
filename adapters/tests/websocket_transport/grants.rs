//! Grants limit what an authenticated spoke can do on the hub. Written as the attacks a spoke
//! holding a valid token would try: reading requests and other callers' replies, answering or
//! aborting another caller's call, joining a handler group it was not granted, calling what
//! its grant leaves out — beside the honest calls, which keep working.
#![cfg(feature = "websocket")]

use crate::ops::{Counter, Probes, eventually, init_logs, registry, within};
use crate::raw::{RawSpoke, refused};
use opkit::prelude::*;
use opkit::protocol::{CallEvent, CallHandler, PendingRequestMap, topics};
use opkit_adapters::websocket::{SpokeGrant, StaticTokens, WsHub, WsSpoke};
use parking_lot::Mutex;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

fn tokens() -> StaticTokens {
    StaticTokens::new()
        .with_token("server-token", SpokeGrant::service("server"))
        .with_token("math-token", SpokeGrant::new("math").serving(["math.*"]))
        .with_token("victim-token", SpokeGrant::new("victim"))
        .with_token(
            "client-token",
            SpokeGrant::new("client").with_identity(Identity::new("kiosk-7")),
        )
        .with_token(
            "shop-token",
            SpokeGrant::new("shop")
                .with_identity(Identity::new("till-1"))
                .calling(["math.*"]),
        )
}

async fn spoke(url: &str, token: &str) -> Arc<WsSpoke> {
    Arc::new(WsSpoke::connect(url, token).await.unwrap())
}

fn ctx() -> OperationContext {
    OperationContext::default().with_timeout(Duration::from_secs(60))
}

/// A client spoke cannot read an operation's requests or aborts, nor join its handler group;
/// a spoke granted some operations serves those and no other.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_cannot_read_requests_or_join_a_handler_group() {
    init_logs();
    let hub = WsHub::bind("127.0.0.1:0", tokens()).await.unwrap();
    let probes = Probes::default();
    let _serving = CallHandler::new(registry(&probes), spoke(&hub.url(), "server-token").await)
        .spawn()
        .await
        .unwrap();

    let mut client = RawSpoke::connect(&hub.url(), "client-token").await;
    let requests = topics::request_topic("math.add");
    let aborts = topics::abort_topic("math.add");
    for (topic, group) in [
        (requests.as_str(), None),
        (requests.as_str(), Some(topics::HANDLER_GROUP)),
        (aborts.as_str(), None),
    ] {
        let answer = client.subscribe(topic, group).await;
        assert!(
            refused(&answer, "SpokeGrant::serving"),
            "{topic} {group:?}: {answer}"
        );
    }
    let plain = client.subscribe("jobs", None).await;
    assert!(refused(&plain, "SpokeGrant::with_topics"), "{plain}");
    // A call handler on a client spoke cannot start: the hub refuses its subscriptions.
    let rogue = Probes::default();
    let spawned = CallHandler::new(registry(&rogue), spoke(&hub.url(), "client-token").await)
        .spawn()
        .await;
    assert!(spawned.is_err(), "a client spoke started serving");

    // Every call is answered by the real server, none by the client.
    let (_victim, victim) = caller(&hub.url(), "victim-token").await;
    for n in 0..4 {
        let sum = victim
            .call("math.add", json!({"a": n, "b": 1}), &ctx())
            .await
            .unwrap();
        assert_eq!(sum.data, json!({"sum": n + 1}));
    }
    assert_eq!(rogue.calls.get(), 0);
    client.listen(Duration::from_millis(200)).await;
    assert!(client.messages.is_empty(), "{:?}", client.messages);

    // A spoke granted `math.*` serves `math.add` and nothing else.
    let math = Probes::default();
    let math_spoke = spoke(&hub.url(), "math-token").await;
    let refused_other = CallHandler::new(registry(&math), math_spoke.clone())
        .spawn()
        .await;
    assert!(refused_other.is_err(), "it serves more than `math.*`");
    let mut raw_math = RawSpoke::connect(&hub.url(), "math-token").await;
    let joined = raw_math
        .subscribe(&requests, Some(topics::HANDLER_GROUP))
        .await;
    assert!(joined.contains(r#""op":"ok""#), "{joined}");
    let other = raw_math
        .subscribe(
            &topics::request_topic("admin.secret"),
            Some(topics::HANDLER_GROUP),
        )
        .await;
    assert!(refused(&other, "serve `admin.secret`"), "{other}");
}

async fn caller(url: &str, token: &str) -> (Arc<WsSpoke>, PendingRequestMap) {
    let spoke = spoke(url, token).await;
    let map = PendingRequestMap::connect(spoke.clone()).await.unwrap();
    (spoke, map)
}

/// A spoke that subscribes to another caller's reply topic (or the fallback one) is allowed
/// to, and receives nothing of that caller's: replies go to the connection that made the
/// request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snooping_spoke_receives_no_one_elses_replies() {
    init_logs();
    let hub = WsHub::bind("127.0.0.1:0", tokens()).await.unwrap();
    let _serving = CallHandler::new(
        registry(&Probes::default()),
        spoke(&hub.url(), "server-token").await,
    )
    .spawn()
    .await
    .unwrap();
    let (_victim, victim) = caller(&hub.url(), "victim-token").await;
    for token in ["client-token", "server-token"] {
        let mut snoop = RawSpoke::connect(&hub.url(), token).await;
        for topic in [victim.reply_topic(), topics::FALLBACK_REPLY_TOPIC] {
            let answer = snoop.subscribe(topic, None).await;
            assert!(answer.contains(r#""op":"ok""#), "{answer}");
        }
        let grouped = snoop
            .subscribe(victim.reply_topic(), Some("snoopers"))
            .await;
        assert!(refused(&grouped, "not in a group"), "{grouped}");
        let sum = victim
            .call("math.add", json!({"a": 2, "b": 3}), &ctx())
            .await
            .unwrap();
        assert_eq!(sum.data, json!({"sum": 5}));
        let items = victim
            .subscribe("clock.count", json!({"to": 3}), &ctx())
            .await
            .unwrap();
        assert_eq!(crate::ops::collect_items(items).await.len(), 3);
        snoop.listen(Duration::from_millis(300)).await;
        assert!(
            snoop.messages.is_empty(),
            "{token} read the victim's replies: {:?}",
            snoop.messages
        );
    }
}

/// `gate.hold`: records its request id, then waits for the gate and answers `"real"`;
/// counts the runs that were dropped (cancelled) before answering.
fn gated(
    gate: &Arc<tokio::sync::Semaphore>,
    seen: &Arc<Mutex<Vec<String>>>,
    dropped: &Counter,
) -> OperationRegistry {
    let registry = OperationRegistry::new();
    let (gate, seen, dropped) = (gate.clone(), seen.clone(), dropped.clone());
    registry
        .register(
            OperationSpec::new("gate", "hold", OperationKind::Query),
            Handler::unary(move |_input, ctx| {
                seen.lock().push(ctx.request_id().to_owned());
                let (gate, dropped) = (gate.clone(), dropped.clone());
                async move {
                    struct Cancelled(Option<Counter>);
                    impl Drop for Cancelled {
                        fn drop(&mut self) {
                            if let Some(counter) = self.0.take() {
                                counter.bump();
                            }
                        }
                    }
                    let mut guard = Cancelled(Some(dropped));
                    gate.acquire().await.unwrap().forget();
                    guard.0 = None;
                    Ok(json!("real"))
                }
            }),
        )
        .unwrap();
    registry
}

/// Another spoke forges the answer to a caller's request and its abort, on the caller's
/// topics: both are refused, the run goes on, and the caller gets the real answer. A client
/// and a trusted service spoke alike.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forged_replies_and_aborts_do_not_reach_the_caller() {
    init_logs();
    let hub = WsHub::bind("127.0.0.1:0", tokens()).await.unwrap();
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let cancelled = Counter::default();
    let _serving = CallHandler::new(
        gated(&gate, &seen, &cancelled),
        spoke(&hub.url(), "server-token").await,
    )
    .spawn()
    .await
    .unwrap();
    let (_victim, victim) = caller(&hub.url(), "victim-token").await;
    for (round, token) in ["client-token", "server-token"].into_iter().enumerate() {
        let call = {
            let victim = victim.clone();
            tokio::spawn(async move { victim.call("gate.hold", json!({}), &ctx()).await })
        };
        eventually("the handler holds the call", || {
            seen.lock().len() == round + 1
        })
        .await;
        let request_id = seen.lock()[round].clone();
        let mut attacker = RawSpoke::connect(&hub.url(), token).await;
        let forged = CallEvent::responded(
            request_id.as_str(),
            opkit::envelope::local_envelope(json!("forged"), "gate.hold"),
        )
        .to_bytes()
        .unwrap();
        let answer = attacker.publish(victim.reply_topic(), &forged).await;
        assert!(
            refused(&answer, "not routed to this spoke"),
            "{token}: {answer}"
        );
        let abort = CallEvent::aborted(request_id.as_str()).to_bytes().unwrap();
        let answer = attacker
            .publish(&topics::abort_topic("gate.hold"), &abort)
            .await;
        assert!(
            refused(&answer, "only its caller aborts it"),
            "{token}: {answer}"
        );
        gate.add_permits(1);
        let real = within("the real answer", call).await.unwrap().unwrap();
        assert_eq!(real.data, json!("real"), "{token}");
        assert_eq!(cancelled.get(), 0, "{token}: the run was cancelled");
    }
}

/// The spoke a request was routed to answers it with a reply only its head is right in (a key
/// written twice, JSON broken after the head): the hub routes replies by their head, so the
/// caller reads the rest, drops what it cannot read and never takes the forged data; its call
/// ends by its deadline, as with a server that never answers, and the hub no longer tracks it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_malformed_after_its_head_is_not_taken() {
    init_logs();
    let hub = WsHub::bind("127.0.0.1:0", tokens()).await.unwrap();
    let mut server = RawSpoke::connect(&hub.url(), "math-token").await;
    let joined = server
        .subscribe(
            &topics::request_topic("math.add"),
            Some(topics::HANDLER_GROUP),
        )
        .await;
    assert!(joined.contains(r#""op":"ok""#), "{joined}");
    let (_victim, victim) = caller(&hub.url(), "victim-token").await;
    for (n, tail) in [
        r#","output":{"data":"forged","meta":{"source":"local","operationId":"math.add","timestamp":1}},"requestId":"ID"}"#,
        r#","output":{"data":"forged","meta":{"source":"local","operationId":"math.add","timestamp":1}}"#,
        r#","output":{"data":"forged","meta":{"source":"local","operationId":"math.add","timestamp":1}},"type":"call.error"}"#,
    ]
    .into_iter()
    .enumerate()
    {
        let call = {
            let victim = victim.clone();
            let soon = OperationContext::default().with_timeout(Duration::from_millis(800));
            tokio::spawn(async move { victim.call("math.add", json!({"a": 1, "b": 2}), &soon).await })
        };
        let request_id = format!("{}:{}", victim.caller_id(), n + 1);
        within("the request reaches the server", async {
            while !server.messages.iter().any(|frame| frame.contains(&request_id)) {
                server.listen(Duration::from_millis(20)).await;
            }
        })
        .await;
        let reply = format!(
            r#"{{"type":"call.responded","requestId":"{request_id}"{}"#,
            tail.replace("ID", &request_id)
        );
        server.publish(victim.reply_topic(), reply.as_bytes()).await;
        let ended = within("the call ends by its deadline", call).await.unwrap();
        let error = ended.expect_err("a malformed reply was taken");
        assert_eq!(error.code, ErrorCode::Timeout, "{error:?}");
        eventually("the hub forgets the call", || hub.calls_in_flight() == 0).await;
    }
}

/// A `call.aborted` someone else publishes for a call — on its abort topic, another
/// operation's, or a plain topic — does not make the hub forget the call: when its serving
/// spoke drops, the caller still gets `TRANSPORT_ERROR` at once, not a wait until its
/// deadline.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aborts_from_others_do_not_untrack_a_call() {
    init_logs();
    let hub = WsHub::bind("127.0.0.1:0", tokens()).await.unwrap();
    let probes = Probes::default();
    let server = spoke(&hub.url(), "server-token").await;
    let _serving = CallHandler::new(registry(&probes), server.clone())
        .spawn()
        .await
        .unwrap();
    let (_victim, victim) = caller(&hub.url(), "victim-token").await;
    let call = {
        let victim = victim.clone();
        let far = OperationContext::default().with_timeout(Duration::from_secs(300));
        tokio::spawn(async move { victim.call("test.forever", json!({}), &far).await })
    };
    eventually("the handler starts", || probes.started.get() == 1).await;
    assert_eq!(hub.calls_in_flight(), 1);
    // The request id: the victim's first call.
    let request_id = format!("{}:1", victim.caller_id());
    let abort = CallEvent::aborted(request_id.as_str()).to_bytes().unwrap();
    let mut attacker = RawSpoke::connect(&hub.url(), "server-token").await;
    for topic in [
        topics::abort_topic("test.forever"),
        topics::abort_topic("math.add"),
        "anything".to_owned(),
    ] {
        attacker.publish(&topic, &abort).await;
    }
    assert_eq!(
        hub.calls_in_flight(),
        1,
        "an abort from another spoke untracked the call"
    );
    assert_eq!(probes.dropped.get(), 0, "the run was cancelled");
    server.close();
    let error = within("the caller hears of the drop", call)
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::TransportError, "{error:?}");
}

/// A spoke granted some operations calls those only — also by naming another operation in a
/// request it publishes on an allowed operation's topic.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spoke_calls_only_what_its_grant_names() {
    init_logs();
    let hub = WsHub::bind("127.0.0.1:0", tokens()).await.unwrap();
    let _serving = CallHandler::new(
        registry(&Probes::default()),
        spoke(&hub.url(), "server-token").await,
    )
    .spawn()
    .await
    .unwrap();
    let (_shop, shop) = caller(&hub.url(), "shop-token").await;
    let sum = shop
        .call("math.add", json!({"a": 1, "b": 1}), &ctx())
        .await
        .unwrap();
    assert_eq!(sum.data, json!({"sum": 2}));
    let refused_call = shop
        .call("clock.count", json!({"to": 1}), &ctx())
        .await
        .unwrap_err();
    assert_eq!(refused_call.code, ErrorCode::TransportError);
    assert!(
        refused_call.message.contains("SpokeGrant::calling"),
        "{refused_call:?}"
    );
    let mut raw = RawSpoke::connect(&hub.url(), "shop-token").await;
    let smuggled = opkit::protocol::CallRequested::new("s:1", "admin.secret", json!({}));
    let answer = raw
        .publish(
            &topics::request_topic("math.add"),
            &CallEvent::Requested(smuggled).to_bytes().unwrap(),
        )
        .await;
    assert!(
        refused(&answer, "names the operation `admin.secret`"),
        "{answer}"
    );
}
