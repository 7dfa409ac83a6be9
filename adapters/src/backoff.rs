//! [`Backoff`]: the pause between reconnection attempts of the Redis and WebSocket
//! transports, doubling from a minimum up to a maximum and back to the minimum after a
//! success (set with `RedisOptions::with_backoff` and `SpokeOptions::with_backoff`).

use std::time::Duration;

/// Pauses that double from `min` up to `max`; [`reset`](Self::reset) after a success. The
/// transports' options hold one at its start, and each reconnecting task takes a clone.
#[derive(Debug, Clone)]
pub(crate) struct Backoff {
    next: Duration,
    min: Duration,
    max: Duration,
}

impl Backoff {
    /// Starts at `min` (a `max` below it counts as `min`).
    pub(crate) fn new(min: Duration, max: Duration) -> Self {
        Self {
            next: min,
            min,
            max: max.max(min),
        }
    }

    /// The pause to take now; the next one is twice as long, up to the maximum.
    pub(crate) fn step(&mut self) -> Duration {
        let pause = self.next;
        self.next = (self.next * 2).min(self.max);
        pause
    }

    /// Back to the minimum, after an attempt that succeeded.
    pub(crate) fn reset(&mut self) {
        self.next = self.min;
    }
}

#[cfg(test)]
mod tests {
    use super::Backoff;
    use std::time::Duration;

    #[test]
    fn pauses_double_up_to_the_maximum_and_reset() {
        let ms = Duration::from_millis;
        let mut backoff = Backoff::new(ms(50), ms(300));
        let pauses: Vec<_> = (0..5).map(|_| backoff.step()).collect();
        assert_eq!(pauses, [ms(50), ms(100), ms(200), ms(300), ms(300)]);
        backoff.reset();
        assert_eq!(backoff.step(), ms(50));
        assert_eq!(Backoff::new(ms(50), ms(10)).step(), ms(50));
    }
}
