//! The raw Redis Cluster baseline of opkit's call protocol over `RedisPubSub` on a cluster
//! (issue 49): [`redis_stream`](crate::redis_stream)'s stream and consumer group, with the
//! replies on sharded pub/sub, written with redis-rs' cluster client alone.
//!
//! The layout opkit uses on a cluster, without its leases, live-member check, redelivery
//! bookkeeping or envelopes: the request stream is one hash slot (`{<name>}:requests`), each
//! caller's reply channel another (`{<name>:reply:<caller>}`), so streams and reply channels
//! spread over the masters as opkit's topics do.
//!
//! - the caller `XADD`s `{id, reply, input}` to the stream (`MAXLEN ~ 100000`) and waits on its
//!   own reply channel (`SSUBSCRIBE`d on a RESP3 cluster connection of its own);
//! - a worker in the consumer group loops on `XREADGROUP GROUP <group> worker COUNT 16
//!   BLOCK 1000 STREAMS <stream> >` on a cluster connection of its own, and for each batch
//!   sends an `SPUBLISH` of `<id> {"sum":..}` to each entry's reply channel and one `XACK` of
//!   the batch, all at once (they go to different masters: no single pipeline holds them);
//! - the caller hands each reply to the call waiting for its id, so any number of calls can
//!   be in flight.

use crate::{AddIn, Sum};
use redis::cluster::ClusterClientBuilder;
use redis::cluster_async::ClusterConnection;
use redis::streams::{StreamId, StreamMaxlen, StreamReadOptions, StreamReadReply};
use redis::{AsyncCommands, PushKind, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// The consumer group of the workers.
const GROUP: &str = "workers";

/// Reply channels of this process's callers are told apart by this counter.
static CALLERS: AtomicU64 = AtomicU64::new(0);

fn stream_key(name: &str) -> String {
    format!("{{{name}}}:requests")
}

/// A cluster connection through `nodes` (`redis://host:port/` URLs).
async fn connect(nodes: &[String], response_timeout: Option<Duration>) -> ClusterConnection {
    let client = ClusterClientBuilder::new(nodes.to_vec())
        .build()
        .expect("cluster client");
    let config = redis::cluster::ClusterConfig::new();
    let config = match response_timeout {
        Some(timeout) => config.set_response_timeout(timeout),
        None => config,
    };
    client
        .get_async_connection_with_config(config)
        .await
        .expect("cluster connection")
}

/// Creates the stream of `name` with its consumer group (if not there yet) and spawns a
/// worker reading it. The worker runs until its connection fails or the task is aborted.
pub async fn spawn_worker(nodes: &[String], name: &str) -> JoinHandle<()> {
    // A blocking read outlasts the default response timeout: a long one on this connection.
    let mut reads = connect(nodes, Some(Duration::from_secs(60))).await;
    let mut writes = connect(nodes, None).await;
    let stream = stream_key(name);
    // `BUSYGROUP` when the group is there already: fine.
    let _: redis::RedisResult<()> = writes.xgroup_create_mkstream(&stream, GROUP, "$").await;
    tokio::spawn(async move {
        let options = StreamReadOptions::default()
            .group(GROUP, "worker")
            .count(16)
            .block(1000);
        loop {
            let read: redis::RedisResult<Option<StreamReadReply>> =
                reads.xread_options(&[&stream], &[">"], &options).await;
            let Ok(read) = read else { return };
            let entries: Vec<&StreamId> = read
                .iter()
                .flat_map(|reply| &reply.keys)
                .flat_map(|key| &key.ids)
                .collect();
            if entries.is_empty() {
                continue;
            }
            let ids: Vec<&str> = entries.iter().map(|entry| entry.id.as_str()).collect();
            let replies =
                entries
                    .iter()
                    .filter_map(|entry| answer(entry))
                    .map(|(channel, reply)| {
                        let mut writes = writes.clone();
                        async move {
                            redis::cmd("SPUBLISH")
                                .arg(channel)
                                .arg(reply)
                                .query_async::<()>(&mut writes)
                                .await
                        }
                    });
            let mut acks = writes.clone();
            let ack = acks.xack::<_, _, _, ()>(&stream, GROUP, &ids);
            let (published, acked) = futures::join!(futures::future::join_all(replies), ack);
            if published.iter().any(Result::is_err) || acked.is_err() {
                return;
            }
        }
    })
}

/// The worker's reply to one entry: its reply channel, and `<id> {"sum":..}`.
fn answer(entry: &StreamId) -> Option<(String, String)> {
    let id: u64 = entry.get("id")?;
    let channel: String = entry.get("reply")?;
    let input: Vec<u8> = entry.get("input")?;
    let input: AddIn = serde_json::from_slice(&input).ok()?;
    let sum = serde_json::to_string(&Sum {
        sum: input.a + input.b,
    })
    .ok()?;
    Some((channel, format!("{id} {sum}")))
}

/// Calls waiting for their reply, by id.
type Waiting = Arc<Mutex<HashMap<u64, oneshot::Sender<Vec<u8>>>>>;

/// A caller of the workers of one stream; `add` may be called from many tasks at once.
pub struct ClusterCaller {
    commands: ClusterConnection,
    stream: String,
    channel: String,
    waiting: Waiting,
    next_id: AtomicU64,
    reader: JoinHandle<()>,
    _replies: ClusterConnection,
}

impl ClusterCaller {
    /// Connects, subscribes to a reply channel of its own and spawns the task that hands
    /// each reply to its call.
    pub async fn connect(nodes: &[String], name: &str) -> Self {
        let channel = format!(
            "{{{name}:reply:{}:{}}}",
            std::process::id(),
            CALLERS.fetch_add(1, Ordering::Relaxed)
        );
        let (pushes, mut received) = tokio::sync::mpsc::unbounded_channel();
        let mut replies = ClusterClientBuilder::new(nodes.to_vec())
            .use_protocol(redis::ProtocolVersion::RESP3)
            .push_sender(pushes)
            .build()
            .expect("cluster client")
            .get_async_connection()
            .await
            .expect("cluster connection");
        replies.ssubscribe(&channel).await.expect("ssubscribe");
        let waiting = Waiting::default();
        let reader = {
            let waiting = waiting.clone();
            tokio::spawn(async move {
                while let Some(push) = received.recv().await {
                    if push.kind != PushKind::SMessage {
                        continue;
                    }
                    let Some(Value::BulkString(payload)) = push.data.into_iter().nth(1) else {
                        continue;
                    };
                    let Some(id) = reply_id(&payload) else {
                        continue;
                    };
                    if let Some(call) = waiting.lock().expect("waiting").remove(&id) {
                        let _ = call.send(payload);
                    }
                }
            })
        };
        Self {
            commands: connect(nodes, None).await,
            stream: stream_key(name),
            channel,
            waiting,
            next_id: AtomicU64::new(1),
            reader,
            _replies: replies,
        }
    }

    /// `a + b`, computed by a worker of the stream.
    pub async fn add(&self, a: i64, b: i64) -> i64 {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (reply, replied) = oneshot::channel();
        self.waiting.lock().expect("waiting").insert(id, reply);
        let input = serde_json::to_vec(&AddIn { a, b }).expect("input");
        let mut commands = self.commands.clone();
        let _: Option<String> = commands
            .xadd_maxlen(
                &self.stream,
                StreamMaxlen::Approx(100_000),
                "*",
                &[
                    ("id", id.to_string().into_bytes()),
                    ("reply", self.channel.clone().into_bytes()),
                    ("input", input),
                ],
            )
            .await
            .expect("XADD");
        let reply = replied.await.expect("a reply");
        let body = &reply[reply
            .iter()
            .position(|&b| b == b' ')
            .expect("`<id> <json>`")
            + 1..];
        serde_json::from_slice::<Sum>(body).expect("sum").sum
    }
}

/// The id of a `<id> <json>` reply.
fn reply_id(payload: &[u8]) -> Option<u64> {
    let end = payload.iter().position(|&b| b == b' ')?;
    std::str::from_utf8(&payload[..end]).ok()?.parse().ok()
}

impl Drop for ClusterCaller {
    fn drop(&mut self) {
        self.reader.abort();
    }
}
