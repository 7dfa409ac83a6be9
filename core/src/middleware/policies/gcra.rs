//! The generic cell rate algorithm (GCRA) behind [`RateLimit`](super::RateLimit), one budget
//! per key.
//!
//! A budget of `burst` calls refilled evenly over `period` is kept as one number per key: the
//! theoretical arrival time (TAT) of its next call, which each passing call pushes forward by
//! the interval `period / burst`. A call passes while the TAT is at most `(burst - 1)`
//! intervals ahead of now; a key whose TAT is in the past has its whole budget, so it is
//! forgotten without changing anything ([`KeyedGcra::forget_full`]).

use parking_lot::Mutex;
use std::collections::HashMap;
use std::num::NonZeroU32;
use std::time::{Duration, Instant};

/// The budgets, by key.
///
/// Invariant (under `tats`' lock, a leaf): a key's TAT only grows while it is kept, and a key
/// is kept only while its TAT is ahead of some past `now`; times are nanoseconds since `start`.
pub(super) struct KeyedGcra {
    /// What one call costs of the budget: `period / burst`, at least 1 ns.
    interval: u64,
    /// How far ahead of now a TAT may be for a call to pass: `(burst - 1)` intervals.
    tolerance: u64,
    start: Instant,
    tats: Mutex<HashMap<String, u64>>,
}

impl KeyedGcra {
    pub(super) fn new(burst: NonZeroU32, period: Duration) -> Self {
        let interval = nanos(period / burst.get()).max(1);
        Self {
            interval,
            tolerance: interval.saturating_mul(u64::from(burst.get() - 1)),
            start: Instant::now(),
            tats: Mutex::default(),
        }
    }

    /// Takes one call from `key`'s budget, or says how long until one is back.
    pub(super) fn check(&self, key: &str) -> Result<(), Duration> {
        self.check_at(key, self.now())
    }

    /// Forgets the keys whose budget is whole again.
    pub(super) fn forget_full(&self) {
        let now = self.now();
        self.tats.lock().retain(|_, tat| *tat > now);
    }

    fn check_at(&self, key: &str, now: u64) -> Result<(), Duration> {
        let mut tats = self.tats.lock();
        let kept = tats.get_mut(key);
        let tat = kept.as_deref().copied().unwrap_or(now).max(now);
        let ahead = tat - now;
        if ahead > self.tolerance {
            return Err(Duration::from_nanos(ahead - self.tolerance));
        }
        let next = tat.saturating_add(self.interval);
        match kept {
            Some(kept) => *kept = next,
            None => {
                tats.insert(key.to_owned(), next);
            }
        }
        Ok(())
    }

    fn now(&self) -> u64 {
        nanos(self.start.elapsed())
    }
}

fn nanos(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::KeyedGcra;
    use std::num::NonZeroU32;
    use std::time::Duration;

    fn limiter(burst: u32, period_ms: u64) -> KeyedGcra {
        KeyedGcra::new(
            NonZeroU32::new(burst).unwrap(),
            Duration::from_millis(period_ms),
        )
    }

    const MS: u64 = 1_000_000;

    #[test]
    fn a_burst_passes_then_calls_come_back_one_interval_apart() {
        // 4 calls per 100 ms: one every 25 ms once the burst is spent.
        let gcra = limiter(4, 100);
        for _ in 0..4 {
            assert_eq!(gcra.check_at("a", 0), Ok(()));
        }
        assert_eq!(gcra.check_at("a", 0), Err(Duration::from_millis(25)));
        assert_eq!(gcra.check_at("a", 10 * MS), Err(Duration::from_millis(15)));
        assert_eq!(gcra.check_at("a", 25 * MS), Ok(()));
        assert!(gcra.check_at("a", 25 * MS).is_err());
        // Refused calls cost nothing: the next one passes on time.
        assert_eq!(gcra.check_at("a", 50 * MS), Ok(()));
    }

    #[test]
    fn keys_have_budgets_of_their_own() {
        let gcra = limiter(1, 1000);
        assert_eq!(gcra.check_at("a", 0), Ok(()));
        assert!(gcra.check_at("a", 0).is_err());
        assert_eq!(gcra.check_at("b", 0), Ok(()));
    }

    #[test]
    fn an_idle_key_refills_to_its_burst_and_no_further() {
        let gcra = limiter(2, 100);
        assert_eq!(gcra.check_at("a", 0), Ok(()));
        assert_eq!(gcra.check_at("a", 0), Ok(()));
        // Long idle: the budget is two again, not more.
        assert_eq!(gcra.check_at("a", 10_000 * MS), Ok(()));
        assert_eq!(gcra.check_at("a", 10_000 * MS), Ok(()));
        assert!(gcra.check_at("a", 10_000 * MS).is_err());
    }

    #[test]
    fn only_keys_with_their_whole_budget_are_forgotten() {
        let gcra = limiter(1, 60_000);
        assert_eq!(gcra.check("spent"), Ok(()));
        gcra.forget_full();
        assert_eq!(gcra.tats.lock().len(), 1, "a spent budget is kept");
        assert!(gcra.check("spent").is_err());
        let quick = limiter(1, 0);
        assert_eq!(quick.check("a"), Ok(()));
        std::thread::sleep(Duration::from_millis(1));
        quick.forget_full();
        assert!(quick.tats.lock().is_empty());
    }

    #[test]
    fn extreme_periods_neither_overflow_nor_divide_by_zero() {
        let slow = KeyedGcra::new(NonZeroU32::MAX, Duration::MAX);
        assert_eq!(slow.check_at("a", u64::MAX - 1), Ok(()));
        let fast = limiter(1, 0);
        assert_eq!(fast.check_at("a", 0), Ok(()));
        assert_eq!(fast.check_at("a", 0), Err(Duration::from_nanos(1)));
    }
}
