//! How the call protocol's topics map to Redis: the keys and channel of a topic, and which
//! topics take no groups (replies and aborts).

use std::sync::LazyLock;

/// The names a topic maps to.
#[derive(Debug, Clone)]
pub(super) struct TopicKeys {
    pub(super) channel: String,
    pub(super) stream: String,
    pub(super) members: String,
    /// Exists while a group member's lease runs (see `scripts.rs`).
    pub(super) live: String,
    /// The hash slot of them all on a cluster (they share the topic's hash tag).
    pub(super) slot: super::conn::Slot,
}

/// The prefix of the protocol's request topics.
pub(super) static REQUEST_PREFIX: LazyLock<String> =
    LazyLock::new(|| opkit::protocol::topics::request_topic(""));

/// The prefix of the protocol's abort topics.
static ABORT_PREFIX: LazyLock<String> = LazyLock::new(|| opkit::protocol::topics::abort_topic(""));

/// The prefix of the protocol's reply topics (`opkit.reply` itself is one too).
static REPLY_PREFIX: LazyLock<String> = LazyLock::new(|| opkit::protocol::topics::reply_topic(""));

/// Whether `topic` is one of the call protocol's reply topics.
pub(super) fn is_reply_topic(topic: &str) -> bool {
    topic == opkit::protocol::topics::FALLBACK_REPLY_TOPIC
        || topic.starts_with(REPLY_PREFIX.as_str())
}

/// Whether `topic` is one of the call protocol's reply or abort topics: every participant
/// subscribes to those alone (a caller to its replies, every replica to the aborts), so they
/// take no groups, and a message on one is a plain `PUBLISH`.
pub(super) fn has_no_groups(topic: &str) -> bool {
    is_reply_topic(topic) || topic.starts_with(ABORT_PREFIX.as_str())
}
