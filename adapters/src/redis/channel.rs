//! The background task behind each of [`RedisPubSub`](super::RedisPubSub)'s plain
//! subscriptions on a server (see [`shard`](super::shard) for a cluster's, and `group` for
//! group subscriptions): one pub/sub connection each, reconnecting with backoff until the
//! subscription is dropped.

use super::errors::transport_error;
use super::state::RedisState;
use ::redis as redis_crate;
use bytes::Bytes;
use futures::StreamExt;
use opkit::protocol::{Subscription, TransportError};
use redis_crate::aio::{PubSubSink, PubSubStream};
use redis_crate::{RedisError, Value};
use std::sync::Arc;
use tokio::sync::mpsc;

pub(super) fn subscription(mut receiver: mpsc::UnboundedReceiver<Bytes>) -> Subscription {
    Subscription::new(futures::stream::poll_fn(move |cx| receiver.poll_recv(cx)))
}

/// A pub/sub connection subscribed to `channel`, split into the sink its checks are sent on
/// and the stream of its messages (bounded by the connect and command timeouts).
async fn open_channel(
    inner: &RedisState,
    channel: &str,
) -> Result<(PubSubSink, PubSubStream), TransportError> {
    let bound = inner.options.connect_timeout * 2 + inner.options.command_timeout;
    let open = async {
        let client = inner.backend.single_client().ok_or_else(|| {
            RedisError::from((
                redis_crate::ErrorKind::Client,
                "plain channels are for a single server",
            ))
        })?;
        let mut pubsub = client.get_async_pubsub().await?;
        pubsub.subscribe(channel).await?;
        Ok::<_, RedisError>(pubsub.split())
    };
    match tokio::time::timeout(bound, open).await {
        Ok(Ok(halves)) => Ok(halves),
        Ok(Err(error)) => Err(transport_error("subscribing", error)),
        Err(_) => Err(transport_error("subscribing", "timed out")),
    }
}

pub(super) async fn subscribe(
    inner: Arc<RedisState>,
    topic: String,
) -> Result<Subscription, TransportError> {
    let channel = inner.keys(&topic)?.channel;
    let connection = open_channel(&inner, &channel).await?;
    let (sender, receiver) = mpsc::unbounded_channel();
    tokio::spawn(forward_channel(inner, channel, connection, sender));
    Ok(subscription(receiver))
}

/// After the ping interval, a `PING` on a pub/sub connection; `Err` when it is not answered
/// within the ping timeout.
async fn check_channel(inner: Arc<RedisState>, mut sink: PubSubSink) -> Result<(), String> {
    tokio::time::sleep(inner.options.ping_interval).await;
    match tokio::time::timeout(inner.options.pong_timeout, sink.ping::<Value>()).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(error)) => Err(error.to_string()),
        Err(_) => Err("no answer to PING in time".to_owned()),
    }
}

/// Forwards a channel's messages until the subscription is dropped. The connection is checked
/// every ping interval (a `PING` answered within the ping timeout), so one that went silent
/// is noticed as surely as one that closed; either is re-opened and subscribed again.
///
/// Invariant: exactly one connection (and one check of it) is held at a time; a lost one is
/// dropped before the next is opened.
async fn forward_channel(
    inner: Arc<RedisState>,
    channel: String,
    connection: (PubSubSink, PubSubStream),
    sender: mpsc::UnboundedSender<Bytes>,
) {
    let mut backoff = inner.options.backoff.clone();
    let mut connection = Some(connection);
    loop {
        if let Some((sink, mut messages)) = connection.take() {
            let mut check = Box::pin(check_channel(inner.clone(), sink.clone()));
            let lost = loop {
                tokio::select! {
                    () = sender.closed() => return,
                    message = messages.next() => match message {
                        Some(message) => {
                            if sender.send(Bytes::copy_from_slice(message.get_payload_bytes())).is_err() {
                                return;
                            }
                        }
                        None => break "the connection closed".to_owned(),
                    },
                    checked = &mut check => match checked {
                        Ok(()) => check = Box::pin(check_channel(inner.clone(), sink.clone())),
                        Err(error) => break error,
                    },
                }
            };
            tracing::warn!(channel, %lost, "lost the redis subscription: reconnecting");
        }
        tokio::select! {
            () = sender.closed() => return,
            () = tokio::time::sleep(backoff.step()) => {}
        }
        match open_channel(&inner, &channel).await {
            Ok(opened) => {
                tracing::info!(channel, "redis subscription restored");
                connection = Some(opened);
                backoff.reset();
            }
            Err(error) => tracing::debug!(%error, channel, "redis is still unreachable"),
        }
    }
}
