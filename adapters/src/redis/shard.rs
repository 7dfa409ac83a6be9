//! Plain subscriptions on a Redis Cluster: sharded pub/sub (`SSUBSCRIBE`), so that a message
//! goes to the one shard that owns its channel's slot instead of every node.
//!
//! One RESP3 cluster connection per [`RedisPubSub`](super::RedisPubSub) carries all its
//! sharded subscriptions (the cluster client connects to the owner of each channel's slot and
//! moves the subscriptions when slots move or a replica is promoted); its pushes are routed
//! here to each subscription by channel.
//! The connection and the routes are [`Shards`](super::shards::Shards)'.

use super::channel::subscription;
use super::errors::transport_error;
use super::shards::Settings;
use super::state::RedisState;
use bytes::Bytes;
use opkit::protocol::{Subscription, TransportError};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use tokio::sync::mpsc;

pub(super) async fn subscribe(
    inner: Arc<RedisState>,
    topic: String,
) -> Result<Subscription, TransportError> {
    let channel = inner.keys(&topic)?.channel;
    let (sender, receiver) = mpsc::unbounded_channel();
    let id = inner.shards.next_id.fetch_add(1, Ordering::Relaxed);
    let bound = inner.options.connect_timeout * 2 + inner.options.command_timeout;
    let added = tokio::time::timeout(
        bound,
        inner
            .shards
            .add(settings(&inner), &channel, id, sender.clone()),
    );
    match added.await {
        Ok(Ok(())) => {}
        Ok(Err(error)) => return Err(transport_error("subscribing", error)),
        Err(_) => {
            inner.shards.unroute(&channel, id);
            return Err(transport_error("subscribing", "timed out"));
        }
    }
    tokio::spawn(watch(inner, channel, id, sender));
    Ok(subscription(receiver))
}

/// Keeps a sharded subscription until it is dropped, then unsubscribes it. Meanwhile it
/// subscribes the channel again every heartbeat (a no-op on the node that has it): when the
/// slot's master died or moved, that command is what makes the cluster client refresh its
/// slot map, and it puts the subscription on the slot's new owner even if the client's own
/// resubscription missed it. A renewal not answered within the ping timeout means the shared
/// connection went silent: it is replaced at once (only if it is still the one that failed,
/// so many subscriptions noticing together replace it once). After failing otherwise for a
/// whole lease the shared connection is replaced as well (each subscription then subscribes
/// on the new one at its next heartbeat).
async fn watch(
    inner: Arc<RedisState>,
    channel: String,
    id: u64,
    sender: mpsc::UnboundedSender<Bytes>,
) {
    let heartbeat = inner.options.heartbeat();
    let mut failing_since: Option<tokio::time::Instant> = None;
    loop {
        tokio::select! {
            () = sender.closed() => break,
            () = tokio::time::sleep(heartbeat) => {}
        }
        // The number of the connection the renewal runs on, once it has one.
        let mut used = None;
        let renewed = tokio::time::timeout(inner.options.pong_timeout, async {
            let (number, conn) = inner.shards.current(settings(&inner)).await?;
            used = Some(number);
            inner.shards.renew(conn, &channel, id).await
        });
        let (error, silent) = match renewed.await {
            Ok(Ok(())) => {
                failing_since = None;
                continue;
            }
            Ok(Err(error)) => (error.to_string(), false),
            Err(_) => ("timed out".to_owned(), true),
        };
        tracing::debug!(%error, channel, "could not renew a sharded subscription");
        let since = *failing_since.get_or_insert_with(tokio::time::Instant::now);
        if let Some(number) = used
            && (silent || since.elapsed() >= inner.options.lease)
        {
            if inner.shards.reset(number).await {
                tracing::warn!(%error, channel, "the sharded pub/sub connection failed: replaced it");
            }
            failing_since = None;
        }
    }
    inner.shards.remove(settings(&inner), &channel, id).await;
}

/// What the sharded connection of `inner` is made with.
fn settings(inner: &RedisState) -> Settings<'_> {
    Settings {
        backend: &inner.backend,
        options: &inner.options,
    }
}
