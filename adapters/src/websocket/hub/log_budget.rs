//! [`LogBudget`]: at most one log line per interval for events an outsider can repeat at will
//! (refused tokens, refused frames), with a count of the ones left out.

use parking_lot::Mutex;
use std::time::Duration;
use tokio::time::Instant;

/// Lets one log line through per interval and counts the rest.
pub(super) struct LogBudget {
    every: Duration,
    /// When the last line was let through (`None`: never), and how many were held back since.
    state: Mutex<(Option<Instant>, u64)>,
}

impl LogBudget {
    /// A budget of one line per `every`.
    pub(super) fn new(every: Duration) -> Self {
        Self {
            every,
            state: Mutex::new((None, 0)),
        }
    }

    /// `Some(n)` when a line may be written now, `n` being how many were held back since the
    /// last one; `None` when this one is held back (and counted).
    pub(super) fn admit(&self) -> Option<u64> {
        let mut state = self.state.lock();
        let now = Instant::now();
        if state
            .0
            .is_some_and(|last| now.duration_since(last) < self.every)
        {
            state.1 += 1;
            return None;
        }
        state.0 = Some(now);
        Some(std::mem::take(&mut state.1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_per_interval_and_the_rest_counted() {
        let budget = LogBudget::new(Duration::from_secs(3600));
        assert_eq!(budget.admit(), Some(0));
        for _ in 0..1000 {
            assert_eq!(budget.admit(), None);
        }
        let open = LogBudget::new(Duration::ZERO);
        assert_eq!(open.admit(), Some(0));
        assert_eq!(open.admit(), Some(0));
    }
}
