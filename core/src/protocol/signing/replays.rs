//! The signed requests a [`CallHandler`](crate::protocol::CallHandler) has taken, remembered
//! until their signatures expire, so that a genuine `call.requested` published again (by
//! anyone who can write to the bus) is dropped instead of run a second time.
//!
//! # Invariants
//!
//! - A request id is remembered from the moment its signature verifies until its `exp`
//!   (plus the verifier's leeway) has passed: within that time the same id is refused,
//!   whether the first request is still running or finished long ago. After it, the
//!   signature no longer verifies, so forgetting the id opens nothing.
//! - At most `capacity` ids are held. Expired ids are dropped first; when every held id is
//!   still live the new request is refused (fail closed) rather than an old id forgotten,
//!   since forgetting a live id would let its request be replayed.
//! - Ids enter only after their signature verified, so only holders of a signing key can
//!   fill the memory.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::sync::Arc;

/// How many signed request ids a handler remembers unless told otherwise.
pub const DEFAULT_REPLAY_CAPACITY: usize = 262_144;

/// Why a signed request was not taken.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// The id was taken before, within its signature's life.
    Replayed,
    /// `capacity` live ids are held already.
    Full(usize),
}

/// The memory (see the module docs).
#[derive(Debug)]
pub(crate) struct Replays {
    capacity: usize,
    /// Live ids and when each may be forgotten (Unix seconds).
    live: HashMap<Arc<str>, u64, foldhash::fast::RandomState>,
    /// The same ids, soonest-forgotten first.
    expiries: BinaryHeap<Reverse<(u64, Arc<str>)>>,
}

impl Replays {
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            capacity,
            live: HashMap::default(),
            expiries: BinaryHeap::new(),
        }
    }

    /// Takes `request_id`, whose signature lives until `forget_at` (Unix seconds), at `now`.
    pub(crate) fn take(
        &mut self,
        request_id: &Arc<str>,
        forget_at: u64,
        now: u64,
    ) -> Result<(), Refusal> {
        self.forget_expired(now);
        if self.live.contains_key(request_id) {
            return Err(Refusal::Replayed);
        }
        if self.live.len() >= self.capacity {
            return Err(Refusal::Full(self.capacity));
        }
        self.live.insert(request_id.clone(), forget_at);
        self.expiries.push(Reverse((forget_at, request_id.clone())));
        Ok(())
    }

    /// Whether `request_id` was taken as a signed request and is still remembered.
    pub(crate) fn contains(&self, request_id: &str) -> bool {
        self.live.contains_key(request_id)
    }

    fn forget_expired(&mut self, now: u64) {
        while let Some(Reverse((at, _))) = self.expiries.peek() {
            if *at >= now {
                break;
            }
            if let Some(Reverse((_, id))) = self.expiries.pop() {
                self.live.remove(&id);
            }
        }
    }

    /// How many ids are held.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.live.len()
    }
}

#[cfg(test)]
mod tests {
    use super::{Refusal, Replays};
    use std::sync::Arc;

    #[test]
    fn an_id_is_refused_until_its_signature_expires_then_forgotten() {
        let mut replays = Replays::new(8);
        let id: Arc<str> = Arc::from("c:1");
        assert_eq!(replays.take(&id, 100, 10), Ok(()));
        assert_eq!(replays.take(&id, 100, 50), Err(Refusal::Replayed));
        assert_eq!(replays.take(&id, 100, 100), Err(Refusal::Replayed));
        assert_eq!(replays.take(&id, 200, 101), Ok(()));
        assert_eq!(replays.len(), 1);
    }

    #[test]
    fn when_full_of_live_ids_a_new_one_is_refused_and_none_forgotten() {
        let mut replays = Replays::new(2);
        for n in 0..2 {
            assert_eq!(replays.take(&Arc::from(format!("c:{n}")), 100, 0), Ok(()));
        }
        assert_eq!(
            replays.take(&Arc::from("c:2"), 100, 0),
            Err(Refusal::Full(2))
        );
        assert_eq!(
            replays.take(&Arc::from("c:0"), 100, 0),
            Err(Refusal::Replayed)
        );
        // Once they expire there is room again.
        assert_eq!(replays.take(&Arc::from("c:2"), 300, 101), Ok(()));
        assert_eq!(replays.len(), 1);
    }
}
