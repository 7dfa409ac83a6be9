//! Per-thread copies of the tool names each [`NamesCache`](super::names::NamesCache) keeps,
//! so that a tool call finds its operation without the cache's lock: a read lock taken and
//! given back is two atomic read-modify-writes (each a full barrier on x86) on a line every
//! thread serving the server shares.
//!
//! A thread keeps, for each of the last [`SLOTS`] caches it read through, the names it read
//! and the registry revision they were kept under, and uses them while the registry's
//! revision is still that one. That is the cache's own rule (names kept under revision `r`
//! were built from operations read after `r` was, so they are never older than their key),
//! applied to a copy: the copy is the cache's names at `r`, or names built later than `r`
//! (then the registry is past `r` already and the copy is never used).
//!
//! What it costs: a thread holds the names of up to [`SLOTS`] caches until it reads through
//! others or exits, so names a cache replaced (the registry changed) are dropped later, on a
//! thread that still holds them. Caches are told apart by a number given at creation, never
//! by address, so a new cache where a dropped one was never finds the old one's names.

use super::names::ToolNames;
use std::cell::RefCell;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// How many caches' names one thread keeps.
const SLOTS: usize = 4;

/// One cache's names, as a thread keeps them.
struct Kept {
    cache: u64,
    revision: u64,
    names: Arc<ToolNames>,
}

/// The names a thread keeps, and the slot the next new cache takes (round robin).
struct Slots {
    kept: [Option<Kept>; SLOTS],
    next: usize,
}

thread_local! {
    static KEPT: RefCell<Slots> = const {
        RefCell::new(Slots { kept: [None, None, None, None], next: 0 })
    };
}

/// A number no other cache of this process has.
pub(super) fn cache_number() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// `read` of the names this thread keeps for `cache` at `revision`; `None` when it keeps
/// none (or this thread is being torn down).
///
/// `read` runs under a shared borrow of the thread's slots: it may read through a cache
/// again (its own reads are shared too), and a [`keep`] it causes is skipped.
pub(super) fn read<R>(cache: u64, revision: u64, read: impl Fn(&ToolNames) -> R) -> Option<R> {
    KEPT.try_with(|slots| {
        let slots = slots.try_borrow().ok()?;
        slots
            .kept
            .iter()
            .flatten()
            .find(|kept| kept.cache == cache && kept.revision == revision)
            .map(|kept| read(&kept.names))
    })
    .ok()
    .flatten()
}

/// Keeps `names` on this thread as `cache`'s at `revision`, in the slot `cache` had or the
/// next one round robin. Skipped while the slots are being read.
pub(super) fn keep(cache: u64, revision: u64, names: Arc<ToolNames>) {
    let replaced = KEPT.try_with(|slots| {
        let mut slots = slots.try_borrow_mut().ok()?;
        let at = match slots
            .kept
            .iter()
            .position(|kept| kept.as_ref().is_some_and(|kept| kept.cache == cache))
        {
            Some(at) => at,
            None => {
                let at = slots.next;
                slots.next = (at + 1) % SLOTS;
                at
            }
        };
        slots.kept[at].replace(Kept {
            cache,
            revision,
            names,
        })
    });
    // Dropped after the borrow ends: the names hold operations, whose drop may run a
    // handler's captures, which may read through a cache again.
    drop(replaced);
}
