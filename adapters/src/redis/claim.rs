//! Redelivery for idempotent group subscriptions
//! ([`subscribe_group_idempotent`](opkit::protocol::PubSub::subscribe_group_idempotent)): the
//! entries a member read stay in the group's pending-entries list while it may still be
//! running them, and the entries of a member whose lease expired are claimed by a live one.
//!
//! Invariants, kept by the code below and by the scripts:
//! - An entry is pending (in the PEL) for the consumer that last read or claimed it, from the
//!   moment Redis hands it out until that consumer acknowledges it, which it does once the
//!   entry has been held for the retention ([`Held`]): past it the entry is dropped unread by
//!   any reader anyway.
//! - Only the entries of a consumer whose member lease is absent or expired are claimed, and
//!   the claim is one script (atomic on the stream's shard): two live members never claim the
//!   same entry, and a live member (renewing every third of its lease) never loses its own.
//! - A consumer whose pending entries were all claimed is deleted and its lease removed.

use super::{Inner, TopicKeys, redis_crate};
use redis_crate::streams::{StreamClaimReply, StreamId};
use redis_crate::{RedisError, Script};
use std::collections::VecDeque;
use std::sync::LazyLock;
use std::time::Duration;
use tokio::time::Instant;

/// How many entries of dead consumers one claim takes at most.
const CLAIM_BATCH: usize = 256;

/// Claims, for `ARGV[2]`, the pending entries of the group's consumers whose lease in the
/// members set is absent or expired; deletes those it drained. Returns the claimed entries
/// (the `XCLAIM` reply shape; entries trimmed meanwhile are left out by `XCLAIM`).
///
/// KEYS: stream, members. ARGV: group, consumer, batch.
static CLAIM_SCRIPT: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ok, summary = pcall(redis.call, 'XPENDING', KEYS[1], ARGV[1])
if not ok or not summary[4] then return {} end
local batch = tonumber(ARGV[3])
local claimed = {}
for _, owner in ipairs(summary[4]) do
  local name = owner[1]
  if name ~= ARGV[2] and #claimed < batch then
    local member = name .. ':' .. ARGV[1]
    local expiry = redis.call('ZSCORE', KEYS[2], member)
    if not expiry or tonumber(expiry) <= now then
      local room = batch - #claimed
      local pending = redis.call('XPENDING', KEYS[1], ARGV[1], '-', '+', room, name)
      local ids = {}
      for _, entry in ipairs(pending) do ids[#ids + 1] = entry[1] end
      if #ids > 0 then
        local entries = redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0, unpack(ids))
        for _, entry in ipairs(entries) do claimed[#claimed + 1] = entry end
      end
      if #ids < room then
        redis.call('XGROUP', 'DELCONSUMER', KEYS[1], ARGV[1], name)
        redis.call('ZREM', KEYS[2], member)
      end
    end
  end
end
return claimed
",
    )
});

/// Claims the entries of the group's dead consumers for `consumer`.
pub(super) async fn claim(
    conn: &mut super::Conn,
    keys: &TopicKeys,
    group: &str,
    consumer: &str,
) -> Result<Vec<StreamId>, RedisError> {
    let reply: StreamClaimReply = CLAIM_SCRIPT
        .key(&keys.stream)
        .key(&keys.members)
        .arg(group)
        .arg(consumer)
        .arg(CLAIM_BATCH)
        .invoke_async(conn)
        .await?;
    Ok(reply.ids)
}

/// The entries a redelivering member read and has not acknowledged yet, oldest first.
pub(super) struct Held {
    entries: VecDeque<(String, Instant)>,
    hold: Duration,
}

impl Held {
    pub(super) fn new(inner: &Inner) -> Self {
        Self {
            entries: VecDeque::new(),
            hold: inner.options.retention,
        }
    }

    /// Remembers an entry handed to the subscriber (read or claimed just now).
    pub(super) fn push(&mut self, id: String) {
        self.entries.push_back((id, Instant::now()));
    }

    /// Acknowledges the entries held for the whole retention (one `XACK`); keeps them when it
    /// fails (they are acknowledged on a later round).
    pub(super) async fn acknowledge_old(
        &mut self,
        conn: &mut super::Conn,
        keys: &TopicKeys,
        group: &str,
    ) -> Result<(), RedisError> {
        let due = self
            .entries
            .iter()
            .take_while(|(_, at)| at.elapsed() >= self.hold)
            .count();
        if due == 0 {
            return Ok(());
        }
        let ids: Vec<&str> = self
            .entries
            .iter()
            .take(due)
            .map(|(id, _)| id.as_str())
            .collect();
        redis_crate::cmd("XACK")
            .arg(&keys.stream)
            .arg(group)
            .arg(&ids)
            .query_async::<()>(conn)
            .await?;
        self.entries.drain(..due);
        Ok(())
    }
}
