//! The raw Redis baseline of opkit's call protocol over `RedisPubSub` (issue 36): a request
//! and its reply through a stream and a consumer group, written with redis-rs alone.
//!
//! The primitive opkit uses for competing consumers, without opkit's leases, live-member
//! check, redelivery bookkeeping or envelopes:
//!
//! - the caller `XADD`s `{id, reply, input}` to the stream (`MAXLEN ~ 100000`, so it stays
//!   bounded) and waits on its own reply channel (one `SUBSCRIBE`d connection per caller);
//! - a worker in the consumer group loops on `XREADGROUP GROUP <group> worker COUNT 16
//!   BLOCK 1000 STREAMS <stream> >` on a connection of its own, and for each batch sends, in
//!   one pipeline, a `PUBLISH` of `<id> {"sum":..}` to each entry's reply channel and one
//!   `XACK` of the batch;
//! - the caller hands each reply to the call waiting for its id, so any number of calls can
//!   be in flight.

use crate::{AddIn, Sum};
use futures::StreamExt;
use redis::AsyncCommands;
use redis::streams::{StreamId, StreamMaxlen, StreamReadOptions, StreamReadReply};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// The consumer group of the workers.
const GROUP: &str = "workers";

/// Reply channels of this process's callers are told apart by this counter.
static CALLERS: AtomicU64 = AtomicU64::new(0);

/// Creates `stream` with its consumer group (if not there yet) and spawns a worker reading
/// it. The worker runs until its connection fails or the task is aborted.
pub async fn spawn_worker(url: &str, stream: &str) -> JoinHandle<()> {
    let client = redis::Client::open(url).expect("client");
    // A blocking read may outlast the client's default response timeout: none on this one.
    let config = redis::AsyncConnectionConfig::new().set_response_timeout(None);
    let mut reads = client
        .get_multiplexed_async_connection_with_config(&config)
        .await
        .expect("connection");
    let mut writes = client
        .get_multiplexed_async_connection()
        .await
        .expect("connection");
    // `BUSYGROUP` when the group is there already: fine.
    let _: redis::RedisResult<()> = writes.xgroup_create_mkstream(stream, GROUP, "$").await;
    let stream = stream.to_owned();
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
            let mut batch = redis::pipe();
            for entry in &entries {
                if let Some((channel, reply)) = answer(entry) {
                    batch.publish(channel, reply).ignore();
                }
            }
            let ids: Vec<&str> = entries.iter().map(|entry| entry.id.as_str()).collect();
            batch.xack(&stream, GROUP, &ids).ignore();
            if batch.query_async::<()>(&mut writes).await.is_err() {
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
pub struct StreamCaller {
    commands: redis::aio::MultiplexedConnection,
    stream: String,
    channel: String,
    waiting: Waiting,
    next_id: AtomicU64,
    reader: JoinHandle<()>,
}

impl StreamCaller {
    /// Connects, subscribes to a reply channel of its own and spawns the task that hands
    /// each reply to its call.
    pub async fn connect(url: &str, stream: &str) -> Self {
        let client = redis::Client::open(url).expect("client");
        let channel = format!(
            "{stream}:reply:{}:{}",
            std::process::id(),
            CALLERS.fetch_add(1, Ordering::Relaxed)
        );
        let mut replies = client.get_async_pubsub().await.expect("pubsub");
        replies.subscribe(&channel).await.expect("subscribe");
        let waiting = Waiting::default();
        let reader = {
            let waiting = waiting.clone();
            tokio::spawn(async move {
                let mut replies = replies.into_on_message();
                while let Some(message) = replies.next().await {
                    let payload = message.get_payload_bytes();
                    let Some(id) = reply_id(payload) else {
                        continue;
                    };
                    if let Some(call) = waiting.lock().expect("waiting").remove(&id) {
                        let _ = call.send(payload.to_vec());
                    }
                }
            })
        };
        let commands = client
            .get_multiplexed_async_connection()
            .await
            .expect("connection");
        Self {
            commands,
            stream: stream.to_owned(),
            channel,
            waiting,
            next_id: AtomicU64::new(1),
            reader,
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

impl Drop for StreamCaller {
    fn drop(&mut self) {
        self.reader.abort();
    }
}
