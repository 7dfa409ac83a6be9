//! The alarms of the header-read timeout, kept by one watchdog thread of the process rather
//! than by tokio's timer.
//!
//! A runtime with any timer pending parks its idle workers with a timeout (an `epoll_wait`
//! that arms a kernel timer each time a worker goes to sleep), where a runtime with none
//! parks them untimed. Measured on the tiny HTTP bench, one alarm per connection in tokio's
//! timer cost every request served on the runtime ~0.2–0.3 µs of CPU, though each alarm
//! moves about once per timeout. Here the alarms wait in a book that one thread of the
//! process keeps: it sleeps until the first alarm is due, rings it (a flag, then the waker of
//! the task that set it) and sleeps again; with no alarm set it sleeps until one is.
//!
//! Invariants, kept under the book's lock: an alarm is in the book under the key its
//! [`Alarm`] holds, or it has rung (the thread took it out), or it was never set; the thread
//! waits on the condition variable, bounded by the first key's instant, and every [`Alarm::set`]
//! that makes a new first key notifies it.

use futures::task::AtomicWaker;
use parking_lot::{Condvar, Mutex};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::task::Waker;
use std::time::Instant;

/// When an alarm rings, and which alarm (two may ring at one instant).
type Key = (Instant, u64);

/// What the thread and an alarm's owner share.
#[derive(Default)]
struct Shared {
    rang: AtomicBool,
    waker: AtomicWaker,
}

/// The alarms set, by when they ring.
#[derive(Default)]
struct Book {
    alarms: BTreeMap<Key, Arc<Shared>>,
    next_id: u64,
    /// The thread runs (it is started by the first alarm set).
    watching: bool,
}

struct Watchdog {
    book: Mutex<Book>,
    changed: Condvar,
}

fn watchdog() -> &'static Watchdog {
    static WATCHDOG: OnceLock<Watchdog> = OnceLock::new();
    WATCHDOG.get_or_init(|| Watchdog {
        book: Mutex::new(Book::default()),
        changed: Condvar::new(),
    })
}

/// One alarm: set to ring at an instant, it wakes the task that set it then.
#[derive(Default)]
pub(super) struct Alarm {
    shared: Arc<Shared>,
    /// Its key in the book since it was last set (gone from the book once it rang).
    key: Option<Key>,
}

impl Alarm {
    /// Sets the alarm to ring at `at` (at once if `at` has passed), waking `waker` then;
    /// replaces the instant it was set to before, rung or not.
    pub(super) fn set(&mut self, at: Instant, waker: &Waker) {
        self.shared.waker.register(waker);
        let watchdog = watchdog();
        let mut book = watchdog.book.lock();
        if let Some(old) = self.key.take() {
            book.alarms.remove(&old);
        }
        // Under the lock, once the old key is out of the book: the thread, which rings only
        // under the lock, can no longer ring it after this (a flag cleared before would be
        // set again by a ring of the old instant, and read as a ring of the new one).
        self.shared.rang.store(false, Ordering::Relaxed);
        let key = (at, book.next_id);
        book.next_id += 1;
        book.alarms.insert(key, self.shared.clone());
        self.key = Some(key);
        if !book.watching {
            book.watching = start_watching();
        }
        if book
            .alarms
            .first_key_value()
            .is_some_and(|(first, _)| *first == key)
        {
            watchdog.changed.notify_one();
        }
    }

    /// When the alarm was last set to ring (`None`: never set).
    pub(super) fn rings_at(&self) -> Option<Instant> {
        self.key.map(|(at, _)| at)
    }

    /// Whether it rang since it was last set.
    pub(super) fn rang(&self) -> bool {
        self.shared.rang.load(Ordering::Acquire)
    }
}

impl Drop for Alarm {
    fn drop(&mut self) {
        if let Some(key) = self.key.take() {
            watchdog().book.lock().alarms.remove(&key);
        }
    }
}

/// Starts the thread that rings the alarms; `false` when it could not be started (it is
/// tried again at the next alarm set; until then alarms do not ring).
fn start_watching() -> bool {
    let started = std::thread::Builder::new()
        .name("opkit-head-alarms".to_owned())
        .spawn(|| watch(watchdog()));
    if let Err(error) = &started {
        tracing::error!(%error, "the thread of the HTTP header-read timeout could not be started");
    }
    started.is_ok()
}

/// The thread: rings every alarm that is due, then sleeps until the next one is (or until
/// one is set).
fn watch(watchdog: &Watchdog) {
    let mut book = watchdog.book.lock();
    loop {
        let now = Instant::now();
        while let Some(due) = book
            .alarms
            .first_entry()
            .filter(|first| first.key().0 <= now)
        {
            let shared = due.remove();
            shared.rang.store(true, Ordering::Release);
            shared.waker.wake();
        }
        match book.alarms.first_key_value().map(|((at, _), _)| *at) {
            Some(at) => {
                watchdog.changed.wait_until(&mut book, at);
            }
            None => watchdog.changed.wait(&mut book),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::time::Duration;

    /// Counts the wakes of its waker.
    struct Count(AtomicUsize);

    impl std::task::Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn counting() -> (Waker, Arc<Count>) {
        let count = Arc::new(Count(AtomicUsize::new(0)));
        (Waker::from(count.clone()), count)
    }

    fn woken(count: &Count) -> usize {
        count.0.load(Ordering::SeqCst)
    }

    /// Waits (up to 5 s) for `what`.
    fn eventually(what: impl Fn() -> bool) -> bool {
        let until = Instant::now() + Duration::from_secs(5);
        while Instant::now() < until {
            if what() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        what()
    }

    fn in_ms(ms: u64) -> Instant {
        Instant::now() + Duration::from_millis(ms)
    }

    #[test]
    fn an_alarm_rings_at_its_instant_not_before_and_wakes_its_task_once() {
        let (waker, count) = counting();
        let mut alarm = Alarm::default();
        let at = in_ms(50);
        alarm.set(at, &waker);
        assert_eq!(alarm.rings_at(), Some(at));
        assert!(eventually(|| alarm.rang()), "rang");
        assert!(Instant::now() >= at, "not before its instant");
        assert!(eventually(|| woken(&count) == 1));
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(woken(&count), 1, "once");
    }

    // Instants are far enough apart (a second) that a test thread descheduled for a while
    // does not see an alarm ring "early" that it set moments before.

    #[test]
    fn an_alarm_set_again_rings_at_its_new_instant_only() {
        let (waker, count) = counting();
        let mut alarm = Alarm::default();
        alarm.set(in_ms(30), &waker);
        let second = in_ms(1_000);
        alarm.set(second, &waker);
        std::thread::sleep(Duration::from_millis(80));
        assert!(!alarm.rang(), "not at the instant it was set to first");
        assert_eq!(woken(&count), 0);
        assert!(eventually(|| alarm.rang()));
        assert!(Instant::now() >= second);
        // Rung, then set again: the flag is cleared, and it rings again.
        alarm.set(in_ms(1_000), &waker);
        assert!(!alarm.rang(), "set again, not rung yet");
        assert!(eventually(|| alarm.rang() && woken(&count) == 2));
    }

    #[test]
    fn an_earlier_alarm_set_after_a_later_one_rings_first() {
        let (late_waker, late_count) = counting();
        let (early_waker, _) = counting();
        let mut late = Alarm::default();
        late.set(in_ms(3_000), &late_waker);
        let mut early = Alarm::default();
        early.set(in_ms(20), &early_waker);
        assert!(eventually(|| early.rang()), "the thread woke for it");
        assert!(!late.rang());
        assert_eq!(woken(&late_count), 0);
    }

    #[test]
    fn a_dropped_alarm_never_rings() {
        let (waker, count) = counting();
        let mut alarm = Alarm::default();
        alarm.set(in_ms(1_000), &waker);
        drop(alarm);
        let (witness_waker, _) = counting();
        let mut witness = Alarm::default();
        witness.set(in_ms(1_200), &witness_waker);
        assert!(eventually(|| witness.rang()));
        assert_eq!(woken(&count), 0, "its task is not woken");
    }

    #[test]
    fn an_alarm_set_in_the_past_rings_at_once() {
        let (waker, count) = counting();
        let mut alarm = Alarm::default();
        let past = Instant::now().checked_sub(Duration::from_millis(5));
        alarm.set(past.unwrap_or_else(Instant::now), &waker);
        assert!(eventually(|| alarm.rang() && woken(&count) == 1));
    }
}
