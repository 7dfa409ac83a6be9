//! The sharded pub/sub connection of one transport on a Redis Cluster and the routes of its
//! pushes to each subscription by channel (what [`shard`](super::shard) subscribes through).
//!
//! Invariants:
//! - `Shards::conn`'s lock is held across every change of the routes *together with* the
//!   matching `SSUBSCRIBE`/`SUNSUBSCRIBE`, so a channel with a route is subscribed on the
//!   cluster (a renewal racing with a removal may leave a channel without routes subscribed:
//!   its messages are dropped).
//! - The push callback only reads the routes (a short std mutex, never held across an await).

use super::conn::Backend;
use super::options::RedisOptions;
use ::redis as redis_crate;
use bytes::Bytes;
use parking_lot::Mutex;
use redis_crate::cluster_async::ClusterConnection;
use redis_crate::{PushInfo, PushKind, RedisError, Value};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::sync::mpsc;

/// What the sharded connection is made with: the transport's backend and settings.
#[derive(Clone, Copy)]
pub(super) struct Settings<'a> {
    pub(super) backend: &'a Backend,
    pub(super) options: &'a RedisOptions,
}

/// Subscribers by channel name: `(subscription id, sender)`.
type Routes = HashMap<Vec<u8>, Vec<(u64, mpsc::UnboundedSender<Bytes>)>>;

/// The sharded pub/sub connection of one transport and its subscribers.
#[derive(Default)]
pub(super) struct Shards {
    routes: Arc<Mutex<Routes>>,
    /// The connection (made on the first subscription) and its number; its lock serializes
    /// (un)subscribing. A failing renewal replaces only the connection it ran on.
    conn: tokio::sync::Mutex<Option<(u64, ClusterConnection)>>,
    pub(super) next_id: AtomicU64,
    next_conn: AtomicU64,
}

/// Hands a sharded message to the subscribers of its channel.
fn route(routes: &Mutex<Routes>, push: &PushInfo) {
    if push.kind != PushKind::SMessage {
        return;
    }
    let [Value::BulkString(channel), Value::BulkString(payload)] = push.data.as_slice() else {
        tracing::warn!(data = ?push.data, "dropping a sharded message of an unexpected shape");
        return;
    };
    if let Some(subscribers) = routes.lock().get(channel.as_slice()) {
        for (_, sender) in subscribers {
            // A closed sender belongs to a subscription being dropped: its task unroutes it.
            let _ = sender.send(Bytes::copy_from_slice(payload));
        }
    }
}

impl Shards {
    /// The sharded pub/sub connection, made if there is none (the caller holds the lock).
    async fn connection(
        &self,
        inner: Settings<'_>,
        slot: &mut Option<(u64, ClusterConnection)>,
    ) -> Result<(u64, ClusterConnection), RedisError> {
        if let Some(cached) = slot.as_ref() {
            return Ok(cached.clone());
        }
        let client = inner.backend.cluster_resp3().ok_or_else(|| {
            RedisError::from((
                redis_crate::ErrorKind::Client,
                "sharded channels are for a cluster",
            ))
        })?;
        let routes = self.routes.clone();
        let config = redis_crate::cluster::ClusterConfig::new()
            .set_connection_timeout(inner.options.connect_timeout)
            .set_response_timeout(inner.options.command_timeout)
            .set_push_sender(move |push: PushInfo| {
                route(&routes, &push);
                Ok::<(), std::convert::Infallible>(())
            });
        let conn = client.get_async_connection_with_config(config).await?;
        let number = self.next_conn.fetch_add(1, Ordering::Relaxed);
        *slot = Some((number, conn.clone()));
        Ok((number, conn))
    }

    /// Routes `channel` to `sender` and subscribes the channel on the cluster.
    pub(super) async fn add(
        &self,
        inner: Settings<'_>,
        channel: &str,
        id: u64,
        sender: mpsc::UnboundedSender<Bytes>,
    ) -> Result<(), RedisError> {
        let mut slot = self.conn.lock().await;
        let (_, mut conn) = self.connection(inner, &mut slot).await?;
        self.routes
            .lock()
            .entry(channel.as_bytes().to_vec())
            .or_default()
            .push((id, sender));
        if let Err(error) = conn.ssubscribe(channel).await {
            self.unroute(channel, id);
            return Err(error);
        }
        Ok(())
    }

    /// The shared connection and its number, made if there is none.
    pub(super) async fn current(
        &self,
        inner: Settings<'_>,
    ) -> Result<(u64, ClusterConnection), RedisError> {
        let mut slot = self.conn.lock().await;
        self.connection(inner, &mut slot).await
    }

    /// Subscribes a routed channel again on `conn` (see `shard.rs`'s `watch`); the lock is not held, so
    /// a renewal may race with the channel's removal and leave it subscribed without routes:
    /// its messages are then dropped, and nothing else changes.
    pub(super) async fn renew(
        &self,
        mut conn: ClusterConnection,
        channel: &str,
        id: u64,
    ) -> Result<(), RedisError> {
        let routed = self
            .routes
            .lock()
            .get(channel.as_bytes())
            .is_some_and(|subscribers| subscribers.iter().any(|(route, _)| *route == id));
        if routed {
            conn.ssubscribe(channel).await?;
        }
        Ok(())
    }

    /// Drops the shared connection `number` if it is still the current one; the next
    /// (re)subscription makes a fresh one.
    /// `true` when it dropped it.
    pub(super) async fn reset(&self, number: u64) -> bool {
        let mut slot = self.conn.lock().await;
        let current = slot.as_ref().is_some_and(|(current, _)| *current == number);
        if current {
            *slot = None;
        }
        current
    }

    /// Removes a route; `true` when the channel has none left.
    pub(super) fn unroute(&self, channel: &str, id: u64) -> bool {
        let mut routes = self.routes.lock();
        let Some(subscribers) = routes.get_mut(channel.as_bytes()) else {
            return true;
        };
        subscribers.retain(|(route, _)| *route != id);
        if subscribers.is_empty() {
            routes.remove(channel.as_bytes());
            true
        } else {
            false
        }
    }

    /// Unroutes a dropped subscription and, when it was the channel's last, unsubscribes the
    /// channel (best effort: the cluster client forgets it either way).
    pub(super) async fn remove(&self, inner: Settings<'_>, channel: &str, id: u64) {
        let slot = self.conn.lock().await;
        if !self.unroute(channel, id) {
            return;
        }
        let Some((_, mut conn)) = slot.clone() else {
            return;
        };
        match tokio::time::timeout(inner.options.command_timeout, conn.sunsubscribe(channel)).await
        {
            Ok(Ok(())) => {}
            Ok(Err(error)) => {
                tracing::debug!(%error, channel, "could not unsubscribe a sharded channel")
            }
            Err(_) => tracing::debug!(channel, "unsubscribing a sharded channel timed out"),
        }
    }
}
