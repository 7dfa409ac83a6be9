//! The hub's routing table ([`Router`]): who receives what is published on a topic.
//!
//! A spoke's subscription is a [`Target::Spoke`]: a message for it is framed (`message`, its
//! subscription id) and put straight into the spoke's outgoing queue, which its connection's
//! writer drains; a subscriber in the hub's process ([`HubPubSub`](super::HubPubSub)) is a
//! [`Target::Local`] channel. Plain subscribers of a topic get every message; the members of a
//! group share them round robin, each message to exactly one member, spokes and in-process
//! subscribers alike. A spoke's subscriptions to reply topics are kept apart, by connection:
//! the hub delivers a reply to its caller's connection only ([`Router::reply`]), and no
//! publish on the topic itself reaches them.
//!
//! Invariant (kept under the one lock of [`Router`], a leaf but for the `calls` lock that
//! [`Router::publish`]'s `routed` callback may take): a target is listed once, from its
//! subscribe to its unsubscribe; a group is removed with its last member, a topic with its
//! last subscription. Messages are handed over under the lock, so one publisher's messages
//! on one topic reach each target in publish order.

use super::outbound::Outbound;
use crate::seeded::Seeded;
use crate::websocket::frame::{self, Header};
use bytes::Bytes;
use futures::Stream;
use opkit::protocol::Subscription;
use parking_lot::Mutex;
use std::pin::Pin;
use std::sync::{Arc, Weak};
use std::task::{Context, Poll};
use tokio::sync::mpsc;

/// Where one subscription's messages go.
pub(super) enum Target {
    /// A spoke's subscription `sub` on the connection `connection`.
    Spoke {
        connection: u64,
        sub: u64,
        outbound: Outbound,
    },
    /// A subscriber in the hub's process (`id` is the router's own number for it).
    Local {
        id: u64,
        sender: mpsc::UnboundedSender<Bytes>,
    },
}

impl Target {
    /// Hands `payload` over; `false` when the receiver is gone (an in-process subscription
    /// that was dropped). A spoke whose queue overflows is disconnected by its queue, and one
    /// whose connection is ending is dropped from the table when it is gone: both count as
    /// reached (the calls routed there are failed when the spoke is gone).
    fn deliver(&self, payload: &Bytes) -> bool {
        match self {
            Self::Spoke { sub, outbound, .. } => {
                outbound.send(frame::encode(&Header::Message { sub: *sub }, Some(payload)));
                true
            }
            Self::Local { sender, .. } => sender.send(payload.clone()).is_ok(),
        }
    }

    fn is(&self, key: Key) -> bool {
        match (self, key) {
            (
                Self::Spoke {
                    connection, sub, ..
                },
                Key::Spoke(c, s),
            ) => *connection == c && *sub == s,
            (Self::Local { id, .. }, Key::Local(i)) => *id == i,
            _ => false,
        }
    }
}

/// Names one target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Key {
    Spoke(u64, u64),
    Local(u64),
}

#[derive(Default)]
struct Topic {
    subscribers: Vec<Target>,
    groups: Seeded<String, Group>,
}

impl Topic {
    fn is_empty(&self) -> bool {
        self.subscribers.is_empty() && self.groups.is_empty()
    }

    fn remove(&mut self, group: Option<&str>, key: Key) {
        match group {
            Some(name) => {
                if let Some(group) = self.groups.get_mut(name) {
                    group.members.retain(|member| !member.is(key));
                    if group.members.is_empty() {
                        self.groups.remove(name);
                    }
                }
            }
            None => self.subscribers.retain(|target| !target.is(key)),
        }
    }
}

#[derive(Default)]
struct Group {
    members: Vec<Target>,
    next: usize,
}

#[derive(Default)]
struct Table {
    topics: Seeded<String, Topic>,
    /// The reply topics spokes subscribed to: connection → topic → its subscriptions.
    replies: Seeded<u64, Seeded<String, Vec<Target>>>,
    next_local: u64,
}

/// The routing table (see the module docs).
#[derive(Default)]
pub(super) struct Router {
    table: Mutex<Table>,
}

impl Router {
    /// Hands `payload` to every plain subscriber of `topic` and to one member of each of its
    /// groups; returns how many received it (each group counts once). `routed` is called,
    /// under the table's lock, with the connection of each spoke a group handed it to.
    pub(super) fn publish(
        &self,
        topic: &str,
        payload: &Bytes,
        mut routed: impl FnMut(u64),
    ) -> usize {
        let mut table = self.table.lock();
        let Some(entry) = table.topics.get_mut(topic) else {
            return 0;
        };
        let mut receivers = 0;
        entry.subscribers.retain(|target| {
            let reached = target.deliver(payload);
            receivers += usize::from(reached);
            reached
        });
        for group in entry.groups.values_mut() {
            while !group.members.is_empty() {
                let index = group.next % group.members.len();
                let member = &group.members[index];
                if let Target::Spoke { connection, .. } = member {
                    routed(*connection);
                }
                if member.deliver(payload) {
                    group.next = index + 1;
                    receivers += 1;
                    break;
                }
                // An in-process member whose subscription is gone: drop it, try the next.
                group.members.remove(index);
            }
        }
        entry.groups.retain(|_, group| !group.members.is_empty());
        if entry.is_empty() {
            table.topics.remove(topic);
        }
        receivers
    }

    /// Hands a reply on `topic` to the subscriptions of the spoke `connection` to that topic;
    /// returns how many received it.
    pub(super) fn reply(&self, connection: u64, topic: &str, payload: &Bytes) -> usize {
        let table = self.table.lock();
        table
            .replies
            .get(&connection)
            .and_then(|topics| topics.get(topic))
            .map_or(0, |targets| {
                targets
                    .iter()
                    .filter(|target| target.deliver(payload))
                    .count()
            })
    }

    /// Adds the spoke subscription `sub` of `connection` to `topic` (in `group`), or to its
    /// replies on `topic` when `reply` (a reply topic takes no group).
    pub(super) fn add_spoke(
        &self,
        topic: &str,
        group: Option<&str>,
        reply: bool,
        connection: u64,
        sub: u64,
        outbound: Outbound,
    ) {
        let target = Target::Spoke {
            connection,
            sub,
            outbound,
        };
        let mut table = self.table.lock();
        if reply {
            table
                .replies
                .entry(connection)
                .or_default()
                .entry(topic.to_owned())
                .or_default()
                .push(target);
            return;
        }
        add(&mut table, topic, group, target);
    }

    /// Removes the spoke subscription `sub` of `connection` (added with the same `topic`,
    /// `group` and `reply`).
    pub(super) fn remove_spoke(
        &self,
        topic: &str,
        group: Option<&str>,
        reply: bool,
        connection: u64,
        sub: u64,
    ) {
        let key = Key::Spoke(connection, sub);
        let mut table = self.table.lock();
        if reply {
            if let Some(topics) = table.replies.get_mut(&connection) {
                if let Some(targets) = topics.get_mut(topic) {
                    targets.retain(|target| !target.is(key));
                    if targets.is_empty() {
                        topics.remove(topic);
                    }
                }
                if topics.is_empty() {
                    table.replies.remove(&connection);
                }
            }
            return;
        }
        remove(&mut table, topic, group, key);
    }

    /// A subscription for code in the hub's process; dropping it unsubscribes.
    pub(super) fn subscribe_local(
        self: &Arc<Self>,
        topic: &str,
        group: Option<&str>,
    ) -> Subscription {
        let (sender, receiver) = mpsc::unbounded_channel();
        let mut table = self.table.lock();
        table.next_local += 1;
        let id = table.next_local;
        add(&mut table, topic, group, Target::Local { id, sender });
        Subscription::new(LocalStream {
            receiver,
            _unsubscribe: Unsubscribe {
                router: Arc::downgrade(self),
                topic: topic.to_owned(),
                group: group.map(str::to_owned),
                id,
            },
        })
    }

    /// How many subscriptions `topic` has (plain subscribers plus group members; a spoke's
    /// reply subscriptions are not counted).
    pub(super) fn subscriber_count(&self, topic: &str) -> usize {
        self.table.lock().topics.get(topic).map_or(0, |entry| {
            entry.subscribers.len()
                + entry
                    .groups
                    .values()
                    .map(|group| group.members.len())
                    .sum::<usize>()
        })
    }
}

fn add(table: &mut Table, topic: &str, group: Option<&str>, target: Target) {
    let entry = table.topics.entry(topic.to_owned()).or_default();
    match group {
        Some(group) => entry
            .groups
            .entry(group.to_owned())
            .or_default()
            .members
            .push(target),
        None => entry.subscribers.push(target),
    }
}

fn remove(table: &mut Table, topic: &str, group: Option<&str>, key: Key) {
    if let Some(entry) = table.topics.get_mut(topic) {
        entry.remove(group, key);
        if entry.is_empty() {
            table.topics.remove(topic);
        }
    }
}

/// An in-process subscriber's queue; dropping it unsubscribes.
struct LocalStream {
    receiver: mpsc::UnboundedReceiver<Bytes>,
    _unsubscribe: Unsubscribe,
}

impl Stream for LocalStream {
    type Item = Bytes;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        self.receiver.poll_recv(cx)
    }
}

struct Unsubscribe {
    router: Weak<Router>,
    topic: String,
    group: Option<String>,
    id: u64,
}

impl Drop for Unsubscribe {
    fn drop(&mut self) {
        if let Some(router) = self.router.upgrade() {
            let mut table = router.table.lock();
            remove(
                &mut table,
                &self.topic,
                self.group.as_deref(),
                Key::Local(self.id),
            );
        }
    }
}
