//! `MemoryPubSub`: the in-process transport, for tests, examples and single-process programs.

use super::pubsub::{PubSub, Receipt, Subscription, TransportError};
use bytes::Bytes;
use futures::future::{self, BoxFuture};
use futures::{FutureExt, Stream};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::fmt;
use std::pin::Pin;
use std::sync::{Arc, Weak};
use std::task::{Context, Poll};
use tokio::sync::mpsc;

/// An in-process [`PubSub`]: topics live in a map, each subscriber has an unbounded queue.
///
/// - `publish` never waits: it hands the payload (a cheap [`Bytes`] clone) to every plain
///   subscriber of the topic and to one member of each group (round robin), and returns a
///   [`Receipt`] with the exact number of receivers.
/// - Messages published by one task on one topic arrive in order.
/// - Nothing is stored for later: a message published while a topic has no subscriber is
///   dropped (the receipt says `0`); a message queued for a subscriber that is dropped before
///   reading it is lost with it.
/// - Dropping a [`Subscription`] unsubscribes at once.
///
/// Cloning is cheap; clones share the same topics.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// use futures::StreamExt;
/// use opkit::protocol::{MemoryPubSub, PubSub};
/// let bus = MemoryPubSub::new();
/// let mut a = bus.subscribe_group("jobs", "workers").await.unwrap();
/// let mut b = bus.subscribe_group("jobs", "workers").await.unwrap();
/// let mut audit = bus.subscribe("jobs").await.unwrap();
/// for job in ["one", "two"] {
///     let receipt = bus.publish("jobs", job.into()).await.unwrap();
///     assert_eq!(receipt.receivers(), Some(2)); // the audit subscriber + one worker
/// }
/// assert_eq!(a.next().await.unwrap(), "one");
/// assert_eq!(b.next().await.unwrap(), "two");
/// assert_eq!(audit.next().await.unwrap(), "one");
/// drop((a, b, audit));
/// assert_eq!(bus.subscriber_count("jobs"), 0);
/// # });
/// ```
#[derive(Clone, Default)]
pub struct MemoryPubSub {
    inner: Arc<MemoryBus>,
}

#[derive(Default)]
struct MemoryBus {
    state: Mutex<State>,
}

/// Topics and groups by name, hashed with a fast hash: every publish looks its topic up.
type ByName<T> = HashMap<String, T, foldhash::fast::RandomState>;

#[derive(Default)]
struct State {
    topics: ByName<Topic>,
    next_id: u64,
}

#[derive(Default)]
struct Topic {
    subscribers: Vec<Member>,
    groups: ByName<Group>,
}

struct Member {
    id: u64,
    sender: mpsc::UnboundedSender<Bytes>,
}

#[derive(Default)]
struct Group {
    members: Vec<Member>,
    next: usize,
}

impl Topic {
    fn is_empty(&self) -> bool {
        self.subscribers.is_empty() && self.groups.is_empty()
    }
}

impl MemoryBus {
    fn publish(&self, topic_name: &str, payload: &Bytes) -> Receipt {
        let mut state = self.state.lock();
        let Some(topic) = state.topics.get_mut(topic_name) else {
            return Receipt::delivered(0);
        };
        let mut receivers = 0;
        topic.subscribers.retain(|member| {
            let sent = member.sender.send(payload.clone()).is_ok();
            receivers += usize::from(sent);
            sent
        });
        for group in topic.groups.values_mut() {
            while !group.members.is_empty() {
                let index = group.next % group.members.len();
                if group.members[index].sender.send(payload.clone()).is_ok() {
                    group.next = index + 1;
                    receivers += 1;
                    break;
                }
                // A member whose subscription is gone: drop it and try the next one.
                group.members.remove(index);
            }
        }
        topic.groups.retain(|_, group| !group.members.is_empty());
        if topic.is_empty() {
            state.topics.remove(topic_name);
        }
        Receipt::delivered(receivers)
    }

    fn add(self: &Arc<Self>, topic: &str, group: Option<&str>) -> Subscription {
        let (sender, receiver) = mpsc::unbounded_channel();
        let mut state = self.state.lock();
        state.next_id += 1;
        let id = state.next_id;
        let entry = state.topics.entry(topic.to_owned()).or_default();
        let member = Member { id, sender };
        match group {
            Some(group) => entry
                .groups
                .entry(group.to_owned())
                .or_default()
                .members
                .push(member),
            None => entry.subscribers.push(member),
        }
        Subscription::new(MemoryStream {
            receiver,
            _unsubscribe: Unsubscribe {
                inner: Arc::downgrade(self),
                topic: topic.to_owned(),
                group: group.map(str::to_owned),
                id,
            },
        })
    }

    fn remove(&self, topic_name: &str, group: Option<&str>, id: u64) {
        let mut state = self.state.lock();
        let Some(topic) = state.topics.get_mut(topic_name) else {
            return;
        };
        match group {
            Some(group_name) => {
                if let Some(group) = topic.groups.get_mut(group_name) {
                    group.members.retain(|member| member.id != id);
                    if group.members.is_empty() {
                        topic.groups.remove(group_name);
                    }
                }
            }
            None => topic.subscribers.retain(|member| member.id != id),
        }
        if topic.is_empty() {
            state.topics.remove(topic_name);
        }
    }
}

impl MemoryPubSub {
    /// An empty bus.
    pub fn new() -> Self {
        Self::default()
    }

    /// How many subscriptions `topic` has (plain subscribers plus group members).
    pub fn subscriber_count(&self, topic: &str) -> usize {
        self.inner
            .state
            .lock()
            .topics
            .get(topic)
            .map_or(0, |topic| {
                topic.subscribers.len()
                    + topic
                        .groups
                        .values()
                        .map(|group| group.members.len())
                        .sum::<usize>()
            })
    }

    /// How many topics have at least one subscription.
    pub fn topic_count(&self) -> usize {
        self.inner.state.lock().topics.len()
    }
}

impl fmt::Debug for MemoryPubSub {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryPubSub")
            .field("topics", &self.topic_count())
            .finish()
    }
}

impl PubSub for MemoryPubSub {
    fn publish<'a>(
        &'a self,
        topic: &'a str,
        payload: Bytes,
    ) -> BoxFuture<'a, Result<Receipt, TransportError>> {
        future::ready(Ok(self.inner.publish(topic, &payload))).boxed()
    }

    fn subscribe<'a>(
        &'a self,
        topic: &'a str,
    ) -> BoxFuture<'a, Result<Subscription, TransportError>> {
        future::ready(Ok(self.inner.add(topic, None))).boxed()
    }

    fn subscribe_group<'a>(
        &'a self,
        topic: &'a str,
        group: &'a str,
    ) -> BoxFuture<'a, Result<Subscription, TransportError>> {
        future::ready(Ok(self.inner.add(topic, Some(group)))).boxed()
    }
}

/// A subscriber's queue; dropping it unsubscribes.
struct MemoryStream {
    receiver: mpsc::UnboundedReceiver<Bytes>,
    _unsubscribe: Unsubscribe,
}

impl Stream for MemoryStream {
    type Item = Bytes;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        self.receiver.poll_recv(cx)
    }
}

struct Unsubscribe {
    inner: Weak<MemoryBus>,
    topic: String,
    group: Option<String>,
    id: u64,
}

impl Drop for Unsubscribe {
    fn drop(&mut self) {
        if let Some(inner) = self.inner.upgrade() {
            inner.remove(&self.topic, self.group.as_deref(), self.id);
        }
    }
}
