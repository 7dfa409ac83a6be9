//! Redelivery for idempotent group subscriptions
//! ([`subscribe_group_idempotent`](opkit::protocol::PubSub::subscribe_group_idempotent)): the
//! entries a member read stay in the group's pending-entries list while it may still be
//! running them, and the entries of a member whose lease expired are claimed by a live one.
//!
//! Invariants, kept by the code below and by the scripts:
//! - An entry is pending (in the PEL) for the consumer that last read or claimed it, from the
//!   moment Redis hands it out until that consumer acknowledges it, which it does on its next
//!   round after this process published the call's final reply (`call.responded`,
//!   `call.error` or `call.completed` for the entry's `requestId`, see [`Answers`]), or once
//!   the entry has been held for the retention ([`Held`]: past it the entry is dropped unread
//!   by any reader anyway).
//! - Only the entries of a consumer whose member lease is absent or expired are claimed, and
//!   the claim is one script (atomic on the stream's shard): two live members never claim the
//!   same entry, and a live member (renewing every third of its lease) never loses its own.
//! - A consumer whose pending entries were all claimed is deleted and its lease removed.

use super::entries::{self, Entry};
use super::topics::TopicKeys;
use crate::seeded::Seeded;
use ::redis as redis_crate;
use opkit::protocol::wire::{self, EventKind};
use parking_lot::Mutex;
use redis_crate::{RedisError, Script, Value};
use std::borrow::Cow;
use std::collections::{HashSet, VecDeque};
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
) -> Result<Vec<Entry>, RedisError> {
    let reply: Value = CLAIM_SCRIPT
        .key(&keys.stream)
        .key(&keys.members)
        .arg(group)
        .arg(consumer)
        .arg(CLAIM_BATCH)
        .invoke_async(conn)
        .await?;
    entries::entry_list(reply)
}

/// The entries a redelivering member read and has not acknowledged yet, oldest first, with
/// the request id each carries (when it is a call request).
pub(super) struct Held {
    reader: u64,
    entries: VecDeque<(String, Option<String>, Instant)>,
    hold: Duration,
}

impl Held {
    /// Entries of `reader`, each held at most `retention` unanswered.
    pub(super) fn new(retention: Duration, reader: u64) -> Self {
        Self::holding(reader, retention)
    }

    fn holding(reader: u64, hold: Duration) -> Self {
        Self {
            reader,
            entries: VecDeque::new(),
            hold,
        }
    }

    /// Remembers an entry handed to the subscriber (read or claimed just now); a call request
    /// is registered in `answers`, to be acknowledged as soon as this process answers it.
    pub(super) fn push(&mut self, answers: &Answers, id: String, payload: &[u8]) {
        let request_id = held_request(payload).map(|(request_id, subscription)| {
            let request_id = request_id.into_owned();
            answers.expect(self.reader, &request_id, subscription, id.clone());
            request_id
        });
        self.entries.push_back((id, request_id, Instant::now()));
    }

    /// The entries to acknowledge now: those this process answered since the last call, and
    /// those held for the whole retention (requests never answered: aborted, or not call
    /// requests). The caller acknowledges them (see [`acknowledge`]) and reports success
    /// with [`acknowledged`](Self::acknowledged).
    ///
    /// An answered entry stays in `entries` until its `XACK` succeeded, so one whose `XACK`
    /// failed is acknowledged again when it ages out (after the retention), unless a live
    /// member claims it first because this member's lease expired (a query then runs again,
    /// which is allowed). Entries aged out are dropped here: `entries` holds the calls in
    /// flight and at most one retention of failed acknowledgements, not every call read.
    pub(super) fn due(&mut self, answers: &Answers) -> Due {
        let mut ids = answers.take(self.reader);
        let answered = ids.len();
        let due = self
            .entries
            .iter()
            .take_while(|(_, _, at)| at.elapsed() >= self.hold)
            .count();
        for (id, request_id, _) in self.entries.drain(..due) {
            if let Some(request_id) = request_id {
                answers.forget(&request_id);
            }
            ids.push(id);
        }
        Due { ids, answered }
    }

    /// Forgets the answered entries of `due`, whose `XACK` succeeded.
    pub(super) fn acknowledged(&mut self, due: &Due) {
        let answered = &due.ids[..due.answered];
        if answered.is_empty() {
            return;
        }
        // Entry ids Redis chose, hashed with foldhash (SipHash cost twice as much per call).
        let answered: HashSet<&str, foldhash::fast::RandomState> =
            answered.iter().map(String::as_str).collect();
        self.entries
            .retain(|(id, _, _)| !answered.contains(id.as_str()));
    }
}

/// The request id and `subscription` flag of a held entry, when it is a `call.requested`.
///
/// Read from the event's first bytes ([`wire::peek_head`]) when nothing further on can set the
/// flag: no escape anywhere and no `"subscription"` in the bytes (then no key of the event is
/// `subscription`, however it is written); else by [`wire::peek`]. The two agree on every
/// request `peek` accepts. One `peek` refuses (a key written twice, invalid JSON further on)
/// may be held under the id its head names: its handler refuses it too, so it is answered
/// with `call.error` or not at all, and its entry is acknowledged then or when it ages out,
/// as any entry.
fn held_request(payload: &[u8]) -> Option<(Cow<'_, str>, bool)> {
    /// The key's bytes, searched for with a searcher built once.
    static SUBSCRIPTION_KEY: LazyLock<memchr::memmem::Finder<'static>> =
        LazyLock::new(|| memchr::memmem::Finder::new(br#""subscription""#));
    if let Some((EventKind::Requested, request_id)) = wire::peek_head(payload)
        && memchr::memchr(b'\\', payload).is_none()
        && SUBSCRIPTION_KEY.find(payload).is_none()
    {
        return Some((Cow::Borrowed(request_id), false));
    }
    let peeked = wire::peek(payload).filter(|peeked| peeked.kind == EventKind::Requested)?;
    Some((peeked.request_id, peeked.subscription))
}

/// The entry ids [`Held::due`] found to acknowledge: the answered ones first.
pub(super) struct Due {
    pub(super) ids: Vec<String>,
    /// How many of `ids` (from the start) were answered; the rest aged out.
    answered: usize,
}

/// Acknowledges `ids` (one `XACK`; nothing to send when empty).
pub(super) async fn acknowledge(
    conn: &mut super::Conn,
    keys: &TopicKeys,
    group: &str,
    ids: &[String],
) -> Result<(), RedisError> {
    if ids.is_empty() {
        return Ok(());
    }
    let mut acknowledge = redis_crate::cmd("XACK");
    acknowledge.arg(&keys.stream).arg(group).arg(ids);
    conn.query_at(|| keys.slot, acknowledge).await
}

/// Which held requests this process answered: the publish path notes replies, each reader
/// takes the entry ids of its own answered requests and acknowledges them on its next round.
///
/// Invariant: a request id is in `expected` from its delivery until it is answered (moved to
/// `answered`) or its entry is acknowledged by age (forgotten); both maps are behind one
/// mutex, never held across an await.
#[derive(Default)]
pub(super) struct Answers {
    book: Mutex<Book>,
}

#[derive(Default)]
struct Book {
    /// Request id → who holds its entry, until the call ends.
    expected: Seeded<String, Expected>,
    /// Reader → entry ids answered and not yet acknowledged.
    answered: Seeded<u64, Vec<String>>,
}

/// A held request a published reply ends: the reader holding its entry, and its id.
pub(super) struct Ending {
    pub(super) reader: u64,
    request_id: String,
}

/// A held request: the reader holding its entry, the entry, and whether the request is a
/// subscription (which its first `call.responded` does not end).
struct Expected {
    reader: u64,
    entry: String,
    subscription: bool,
}

impl Answers {
    fn expect(&self, reader: u64, request_id: &str, subscription: bool, entry: String) {
        self.book.lock().expected.insert(
            request_id.to_owned(),
            Expected {
                reader,
                entry,
                subscription,
            },
        );
    }

    fn forget(&self, request_id: &str) {
        self.book.lock().expected.remove(request_id);
    }

    fn take(&self, reader: u64) -> Vec<String> {
        self.book
            .lock()
            .answered
            .remove(&reader)
            .unwrap_or_default()
    }

    /// Notes a published payload: the reply that ends a held request's call (see
    /// [`EventKind::ends_call`]) marks it answered.
    #[cfg(test)]
    fn note_published(&self, topic: &str, payload: &[u8]) {
        if topic.starts_with(opkit::protocol::topics::FALLBACK_REPLY_TOPIC)
            && let Some(ending) = self.ending(payload)
        {
            self.answered(&ending);
        }
    }

    /// The held request whose call the reply `payload` ends (see [`EventKind::ends_call`]),
    /// and the reader holding it; `None` when it ends none (or nothing is held: the reply is
    /// not read then).
    pub(super) fn ending(&self, payload: &[u8]) -> Option<Ending> {
        if self.book.lock().expected.is_empty() {
            return None;
        }
        // A reply this process publishes: its head names its call (see `wire::peek_head`).
        let (kind, request_id) = wire::peek_kind_and_id(payload)?;
        let book = self.book.lock();
        let held = book.expected.get(&*request_id)?;
        kind.ends_call(held.subscription).then(|| Ending {
            reader: held.reader,
            request_id: request_id.into_owned(),
        })
    }

    /// The reply that ends `ending`'s call is published (or on its way, ahead of the
    /// acknowledgement in the same write): its entry is acknowledged on its reader's next
    /// round. Nothing when the request is no longer held.
    pub(super) fn answered(&self, ending: &Ending) {
        let mut book = self.book.lock();
        if let Some(held) = book.expected.remove(&ending.request_id) {
            book.answered
                .entry(held.reader)
                .or_default()
                .push(held.entry);
        }
    }

    /// Forgets a reader that left (its consumer and pending entries are deleted with it).
    pub(super) fn drop_reader(&self, reader: u64) {
        let mut book = self.book.lock();
        book.answered.remove(&reader);
        book.expected.retain(|_, held| held.reader != reader);
    }
}

#[cfg(test)]
mod tests {
    use super::{Answers, Held};
    use std::time::Duration;

    fn request(n: u32) -> Vec<u8> {
        format!(r#"{{"type":"call.requested","requestId":"c0ffee:{n}","operationId":"q.read","input":{{}}}}"#)
            .into_bytes()
    }

    fn answer(answers: &Answers, n: u32) {
        let reply =
            format!(r#"{{"type":"call.responded","requestId":"c0ffee:{n}","output":{{}}}}"#);
        answers.note_published("opkit.reply.c0ffee", reply.as_bytes());
    }

    /// An answered entry is forgotten once its `XACK` succeeded; one whose `XACK` failed is
    /// held until it ages out, then acknowledged again.
    #[test]
    fn held_entries_are_forgotten_once_acknowledged() {
        let answers = Answers::default();
        let mut held = Held::holding(1, Duration::from_secs(3600));
        for n in 0..3 {
            held.push(&answers, format!("{n}-0"), &request(n));
        }
        answer(&answers, 0);
        answer(&answers, 2);
        let due = held.due(&answers);
        assert_eq!(due.ids, ["0-0", "2-0"]);
        held.acknowledged(&due);
        assert_eq!(held.entries.len(), 1);
        assert_eq!(held.entries[0].0, "1-0");

        // A failed acknowledgement keeps the entry; it comes due again when it ages out.
        let hold = Duration::from_millis(20);
        let mut held = Held::holding(2, hold);
        held.push(&answers, "5-0".to_owned(), &request(5));
        answer(&answers, 5);
        assert_eq!(held.due(&answers).ids, ["5-0"]);
        assert_eq!(held.entries.len(), 1, "kept: no acknowledgement reported");
        std::thread::sleep(hold);
        let aged = held.due(&answers);
        assert_eq!(aged.ids, ["5-0"], "acknowledged again once aged out");
        assert!(held.entries.is_empty());
    }

    /// A call is answered by its one `call.responded`; a subscription only by its end.
    #[test]
    fn a_subscription_is_answered_by_its_end_not_its_items() {
        let answers = Answers::default();
        let mut held = Held::holding(1, Duration::from_secs(3600));
        held.push(&answers, "1-0".to_owned(), &request(1));
        let subscription = br#"{"type":"call.requested","requestId":"c0ffee:2","operationId":"q.watch","input":{"deep":[1,2,{"x":3}]},"subscription":true}"#;
        held.push(&answers, "2-0".to_owned(), subscription);
        held.push(&answers, "3-0".to_owned(), b"not json");
        // The flag written with an escape, and a request whose id is not its second key.
        let escaped = br#"{"type":"call.requested","requestId":"c0ffee:4","operationId":"q.watch","input":{},"\u0073ubscription":true}"#;
        held.push(&answers, "4-0".to_owned(), escaped);
        let reordered = br#"{"subscription":true,"type":"call.requested","operationId":"q.watch","input":{},"requestId":"c0ffee:5"}"#;
        held.push(&answers, "5-0".to_owned(), reordered);
        for n in [1, 2, 4, 5] {
            let reply =
                format!(r#"{{"type":"call.responded","requestId":"c0ffee:{n}","output":{{}}}}"#);
            answers.note_published("opkit.reply.c0ffee", reply.as_bytes());
        }
        assert_eq!(
            answers.take(1),
            ["1-0"],
            "an item does not end the subscription"
        );
        for n in [2, 4, 5] {
            let end = format!(r#"{{"type":"call.completed","requestId":"c0ffee:{n}"}}"#);
            answers.note_published("opkit.reply.c0ffee", end.as_bytes());
        }
        assert_eq!(answers.take(1), ["2-0", "4-0", "5-0"]);
    }

    #[test]
    fn an_answered_request_is_handed_to_its_reader_once() {
        let answers = Answers::default();
        answers.expect(3, "c0ffee:1", false, "1-0".to_owned());
        answers.expect(4, "c0ffee:2", false, "2-0".to_owned());
        let reply = br#"{"type":"call.responded","requestId":"c0ffee:1","output":{}}"#;
        // Only final replies on reply topics count.
        answers.note_published("opkit.abort.q.read", reply);
        assert!(answers.take(3).is_empty());
        answers.note_published("opkit.reply.c0ffee", reply);
        answers.note_published("opkit.reply.c0ffee", reply);
        assert_eq!(answers.take(3), ["1-0"]);
        assert!(answers.take(3).is_empty());
        answers.drop_reader(4);
        let other = br#"{"type":"call.responded","requestId":"c0ffee:2","output":{}}"#;
        answers.note_published("opkit.reply.c0ffee", other);
        assert!(answers.take(4).is_empty());
    }
}
