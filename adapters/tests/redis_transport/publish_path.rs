//! How a publish on a topic with groups reaches Redis: the script until the publisher has seen
//! the topic served, then plain commands (a transaction on a cluster); the live key they read
//! follows the members set; a publish is refused (not sent) only when nothing ran; an entry added after the last member left is taken back, so a
//! member joining later never runs a request its caller was told reached nobody.
#![cfg(all(feature = "redis", feature = "testing"))]

use crate::redis_support;

use opkit::protocol::{Delivery, PubSub};
use opkit_adapters::redis::{RedisOptions, RedisPubSub};
use redis::AsyncCommands;
use redis_support::RedisServer;
use redis_support::ops::next_text as next;
use redis_support::ops::{init_logs, within};
use std::collections::HashMap;
use std::time::Duration;

/// Calls per command name so far (`INFO commandstats`).
async fn command_calls(raw: &mut redis::aio::MultiplexedConnection) -> HashMap<String, u64> {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(raw)
        .await
        .unwrap();
    info.lines()
        .filter_map(|line| {
            let (name, rest) = line.strip_prefix("cmdstat_")?.split_once(":calls=")?;
            let calls = rest.split(',').next()?.parse().ok()?;
            Some((name.to_owned(), calls))
        })
        .collect()
}

fn delta(after: &HashMap<String, u64>, before: &HashMap<String, u64>, name: &str) -> u64 {
    after.get(name).copied().unwrap_or(0) - before.get(name).copied().unwrap_or(0)
}

/// A transport whose members renew their lease rarely, so that no renewal script runs while a
/// test counts commands.
async fn slow_renewing_bus(server: &RedisServer, prefix: &str) -> RedisPubSub {
    RedisPubSub::connect_with(
        &server.url(),
        RedisOptions::default()
            .with_prefix(prefix)
            .with_lease(Duration::from_secs(60)),
    )
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_served_topic_is_published_by_plain_commands_after_one_script() {
    init_logs();
    let server = RedisServer::start();
    let serving = slow_renewing_bus(&server, "tx:").await;
    let publishing = slow_renewing_bus(&server, "tx:").await;
    let mut worker = serving.subscribe_group("jobs", "workers").await.unwrap();
    let mut raw = server.raw().await;

    // The live key mirrors the members set: it expires when the latest lease ends.
    let live_key = serving.live_key("jobs");
    let members_key = serving.members_key("jobs");
    let groups: i64 = raw.get(&live_key).await.unwrap();
    assert_eq!(groups, 1);
    let lease_end: Vec<(String, i64)> = raw.zrange_withscores(&members_key, 0, -1).await.unwrap();
    let expires: i64 = redis::cmd("PEXPIRETIME")
        .arg(&live_key)
        .query_async(&mut raw)
        .await
        .unwrap();
    assert_eq!(expires, lease_end[0].1, "the live key ends with the lease");

    let before = command_calls(&mut raw).await;
    for n in 0..50 {
        let receipt = publishing
            .publish("jobs", format!("job-{n}").into())
            .await
            .unwrap();
        assert_eq!(receipt.receivers(), Some(1), "one group");
    }
    for n in 0..50 {
        assert_eq!(next(&mut worker).await, format!("job-{n}"));
    }
    let after = command_calls(&mut raw).await;
    // Every publish but the first is three plain commands (no `MULTI` .. `EXEC`); the first
    // runs the script. Scripts counted
    // beside it: at most the member's first lease renewal, which its reader runs at once after
    // joining (a renewal is a script too), and not one per publish. (An `EVALSHA` refused with
    // `NOSCRIPT` is sent again after loading: those are not counted.)
    let scripts = delta(&after, &before, "evalsha") - delta(&after, &before, "script|load");
    assert!(
        scripts <= 2,
        "only the first publish runs the script: {after:?}"
    );
    assert_eq!(delta(&after, &before, "get"), 49);
    // (The script's own `PUBLISH` is counted too.)
    assert_eq!(delta(&after, &before, "publish"), 50);
    assert_eq!(delta(&after, &before, "xadd"), 50);
    assert_eq!(delta(&after, &before, "multi"), 0);
    assert_eq!(delta(&after, &before, "exec"), 0);

    // A members set kept by something that does not write the live key (an older opkit's
    // join) leaves it missing while a member is live: the publish that finds it missing is
    // settled as the script would have (the entry kept, the key written again).
    let _: () = raw.del(&live_key).await.unwrap();
    let receipt = publishing.publish("jobs", "kept".into()).await.unwrap();
    assert_eq!(receipt.receivers(), Some(1));
    let groups: i64 = raw.get(&live_key).await.unwrap();
    assert_eq!(groups, 1, "the settle script wrote the live key again");
    assert_eq!(next(&mut worker).await, "kept");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_published_after_the_last_member_left_is_never_read() {
    init_logs();
    let server = RedisServer::start();
    let serving = slow_renewing_bus(&server, "left:").await;
    let publishing = slow_renewing_bus(&server, "left:").await;
    let mut raw = server.raw().await;
    let live_key = serving.live_key("jobs");
    let stream_key = serving.stream_key("jobs");

    let mut worker = serving.subscribe_group("jobs", "workers").await.unwrap();
    for message in ["one", "two"] {
        let receipt = publishing.publish("jobs", message.into()).await.unwrap();
        assert_eq!(receipt.receivers(), Some(1));
        assert_eq!(next(&mut worker).await, message);
    }

    // The only member leaves: its leave deletes the live key. The publisher still believes
    // the topic served, so its next publish adds the entry with its plain commands, finds no
    // live key, and takes the entry back: the receipt says nobody, and the stream does not keep it.
    drop(worker);
    within("the member leaves", async {
        loop {
            let exists: bool = raw.exists(&live_key).await.unwrap();
            if !exists {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    let length_before: usize = raw.xlen(&stream_key).await.unwrap();
    let receipt = publishing.publish("jobs", "orphan".into()).await.unwrap();
    assert!(receipt.reached_nobody(), "{receipt:?}");
    let length_after: usize = raw.xlen(&stream_key).await.unwrap();
    assert_eq!(length_after, length_before, "the entry was taken back");

    // A member of the same group joining later reads what is published after it joined, and
    // never the entry its caller was told reached nobody.
    let mut rejoined = serving.subscribe_group("jobs", "workers").await.unwrap();
    let receipt = publishing.publish("jobs", "three".into()).await.unwrap();
    assert_eq!(receipt.receivers(), Some(1));
    assert_eq!(next(&mut rejoined).await, "three");

    // A topic nobody ever served: no stream is left behind by the script.
    let receipt = publishing.publish("nobody", "x".into()).await.unwrap();
    assert!(receipt.reached_nobody());
    let exists: bool = raw.exists(serving.stream_key("nobody")).await.unwrap();
    assert!(!exists);
}

/// A server that became a replica (as after a failover) runs `PUBLISH` for its own subscribers
/// and refuses writes with `READONLY`: a publish is "not sent" only when nobody received it,
/// and of unknown outcome when a subscriber did.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_publish_a_replica_refused_is_not_sent_unless_someone_received_it() {
    init_logs();
    let server = RedisServer::start();
    let master = RedisServer::start();
    let serving = slow_renewing_bus(&server, "ro:").await;
    let publishing = slow_renewing_bus(&server, "ro:").await;
    let mut worker = serving.subscribe_group("jobs", "workers").await.unwrap();
    for message in ["one", "two"] {
        let receipt = publishing.publish("jobs", message.into()).await.unwrap();
        assert_eq!(receipt.receivers(), Some(1));
        assert_eq!(next(&mut worker).await, message);
    }
    // A plain subscriber of the topic, beside the group.
    let mut listener = publishing.subscribe("jobs").await.unwrap();
    let receipt = publishing.publish("jobs", "three".into()).await.unwrap();
    assert_eq!(receipt.receivers(), Some(2));
    assert_eq!(next(&mut listener).await, "three");

    // The server follows another: it is a replica now, and keeps no write.
    let mut raw = server.raw().await;
    let () = redis::cmd("REPLICAOF")
        .arg("127.0.0.1")
        .arg(master.port())
        .query_async(&mut raw)
        .await
        .unwrap();
    let refused = |error: &opkit::protocol::TransportError| {
        error
            .to_string()
            .to_lowercase()
            .contains("read only replica")
    };

    // The topic is still believed served: its plain commands' `PUBLISH` reached the listener,
    // and the refused `XADD` leaves a request that may have run.
    let error = within(
        "a publish to a replica",
        publishing.publish("jobs", "x".into()),
    )
    .await
    .unwrap_err();
    assert_eq!(error.delivery(), Delivery::Unknown, "{error}");
    assert!(
        refused(&error) && error.to_string().contains("may have run"),
        "{error}"
    );
    assert_eq!(next(&mut listener).await, "x");

    // Now the script publishes (the topic is no longer believed served): its first write is
    // refused before its `PUBLISH`, so nothing ran and the publish was not sent.
    let error = within(
        "a publish to a replica",
        publishing.publish("jobs", "y".into()),
    )
    .await
    .unwrap_err();
    assert_eq!(error.delivery(), Delivery::NotSent, "{error}");
    assert!(refused(&error), "{error}");
    let () = redis::cmd("PUBLISH")
        .arg("ro:jobs")
        .arg("z")
        .query_async(&mut raw)
        .await
        .unwrap();
    assert_eq!(
        next(&mut listener).await,
        "z",
        "the refused publish reached nobody"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_cluster_the_transaction_runs_on_the_topics_shard() {
    init_logs();
    let cluster = redis_support::cluster::RedisCluster::start(3, 0);
    let connect = || async {
        RedisPubSub::connect_cluster_with(
            &cluster.urls(),
            RedisOptions::default()
                .with_prefix("ctx:")
                .with_lease(Duration::from_secs(60)),
        )
        .await
        .unwrap()
    };
    let serving = connect().await;
    let publishing = connect().await;
    let mut worker = serving.subscribe_group("jobs", "workers").await.unwrap();
    let mut masters = Vec::new();
    for port in cluster.masters() {
        masters.push(redis_support::connect_raw(&format!("redis://127.0.0.1:{port}")).await);
    }
    let mut before = HashMap::new();
    for (n, master) in masters.iter_mut().enumerate() {
        before.insert(n, command_calls(master).await);
    }
    for n in 0..20 {
        let receipt = publishing
            .publish("jobs", format!("job-{n}").into())
            .await
            .unwrap();
        assert_eq!(receipt.receivers(), Some(1));
    }
    for n in 0..20 {
        assert_eq!(next(&mut worker).await, format!("job-{n}"));
    }
    let (mut transactions, mut added) = (0, 0);
    let mut shard = None;
    for (n, master) in masters.iter_mut().enumerate() {
        let after = command_calls(master).await;
        let (here_exec, here_added) = (
            delta(&after, &before[&n], "exec"),
            delta(&after, &before[&n], "xadd"),
        );
        // Each transaction went straight to the topic's shard: a `MULTI` sent to another
        // master first (then redirected) would leave an `EXEC` counted there too.
        if here_added > 0 || here_exec > 0 {
            assert_eq!(shard.replace(n), None, "commands on two masters");
        }
        transactions += here_exec;
        added += here_added;
    }
    assert_eq!(added, 20);
    assert_eq!(
        transactions, 19,
        "every publish but the first is a transaction"
    );

    // A command of the transaction that fails is the publish's error, named: the stream
    // replaced by a string, its `XADD` is refused.
    let stream = serving.stream_key("jobs");
    let holder = &mut masters[shard.expect("the topic's shard")];
    let () = holder.del(&stream).await.unwrap();
    let () = holder.set(&stream, "not a stream").await.unwrap();
    let error = within(
        "a refused publish",
        publishing.publish("jobs", "refused".into()),
    )
    .await
    .unwrap_err();
    assert!(error.to_string().contains("WRONGTYPE"), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_transaction_trims_entries_older_than_the_retention() {
    init_logs();
    let server = RedisServer::start();
    let options = || {
        RedisOptions::default()
            .with_prefix("trim:")
            .with_lease(Duration::from_secs(60))
            .with_retention(Duration::from_millis(100))
    };
    let serving = RedisPubSub::connect_with(&server.url(), options())
        .await
        .unwrap();
    let publishing = RedisPubSub::connect_with(&server.url(), options())
        .await
        .unwrap();
    let _worker = serving.subscribe_group("jobs", "workers").await.unwrap();
    let mut raw = server.raw().await;
    let stream_key = serving.stream_key("jobs");

    // 300 entries fill three of the stream's nodes (100 entries each by default); trimming
    // (`MINID ~`) drops whole nodes once every entry in them is older than the retention.
    for n in 0..300 {
        let receipt = publishing
            .publish("jobs", format!("{n}").into())
            .await
            .unwrap();
        assert_eq!(receipt.receivers(), Some(1));
    }
    let length: usize = raw.xlen(&stream_key).await.unwrap();
    assert_eq!(length, 300);
    // Past the retention and the trimming interval (a second), the next publish trims.
    tokio::time::sleep(Duration::from_millis(1_200)).await;
    publishing.publish("jobs", "last".into()).await.unwrap();
    let length: usize = raw.xlen(&stream_key).await.unwrap();
    assert!(length <= 101, "old entries trimmed: {length} left");
}
