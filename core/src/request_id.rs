//! [`RequestId`]: a context's request id, given as text or fresh; a fresh one is kept as its
//! number and written out the first time it is read.
//!
//! Most in-process calls (an MCP tool call, a nested call through an env) never read their
//! id; for them a fresh id costs a counter increment, not a formatted string and its
//! allocation.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

/// A request id: see the [module docs](self).
///
/// A fresh id is its number (see [`RequestId::fresh`]) and the text written from it on the
/// first read; clones made before that read each write the same text from the same number.
#[derive(Clone)]
pub(crate) enum RequestId {
    /// An id given as text (one that came over a transport, say).
    Given(Arc<str>),
    /// A fresh id: its number, and its text once read.
    Fresh {
        number: u64,
        text: OnceLock<Arc<str>>,
    },
}

/// The low bits of a fresh id that count (the rest are the process's random v4 UUID; these
/// hold no version or variant bits).
const COUNTED: u128 = (1 << 62) - 1;

/// How many numbers a thread takes from the process's counter at a time.
const BLOCK: u64 = 1 << 16;

impl RequestId {
    /// A fresh id, in [`new_request_id`](crate::new_request_id)'s form (a v4 UUID).
    ///
    /// Unique, not secret: a process draws one random v4 UUID and counts up in its low 62
    /// bits, each thread taking numbers in blocks from one process-wide counter, so an id
    /// costs a thread-local increment rather than a draw from the random generator. Ids of one
    /// process never meet; two processes' meet only if their random UUIDs agree in the other
    /// 60 random bits. (A secret, such as a key a client must not guess, is
    /// `new_request_id`'s: random every time.)
    pub(crate) fn fresh() -> Self {
        static NEXT_BLOCK: AtomicU64 = AtomicU64::new(0);
        thread_local! {
            /// The thread's next number and the end of its block.
            static NUMBERS: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
        }
        let number = NUMBERS.with(|numbers| {
            let (mut next, mut end) = numbers.get();
            if next == end {
                next = NEXT_BLOCK.fetch_add(BLOCK, Ordering::Relaxed);
                end = next + BLOCK;
            }
            numbers.set((next + 1, end));
            next
        });
        Self::Fresh {
            number,
            text: OnceLock::new(),
        }
    }

    /// A placeholder for a context whose id nothing reads (see
    /// `OperationContext::bounds_only`): no counter taken. Its number, all counted bits set,
    /// is one the counter does not reach, so it names no fresh id's request even if read.
    pub(crate) const fn unread() -> Self {
        Self::Fresh {
            number: u64::MAX,
            text: OnceLock::new(),
        }
    }

    /// The id's text, written on the first read of a fresh id.
    pub(crate) fn as_str(&self) -> &str {
        self.shared()
    }

    /// `read` of the id's text, without keeping it: a fresh id not read yet is written on
    /// the stack for `read` alone.
    pub(crate) fn with_text<R>(&self, read: impl FnOnce(&str) -> R) -> R {
        match self {
            Self::Given(text) => read(text),
            Self::Fresh { number, text } => match text.get() {
                Some(text) => read(text),
                None => {
                    let mut buffer = [0_u8; uuid::fmt::Hyphenated::LENGTH];
                    read(fresh_uuid(*number).encode_lower(&mut buffer))
                }
            },
        }
    }

    /// The id's text as the shared string (written on the first read of a fresh id).
    pub(crate) fn shared(&self) -> &Arc<str> {
        match self {
            Self::Given(text) => text,
            Self::Fresh { number, text } => text.get_or_init(|| {
                let mut buffer = [0_u8; uuid::fmt::Hyphenated::LENGTH];
                Arc::from(&*fresh_uuid(*number).encode_lower(&mut buffer))
            }),
        }
    }
}

/// The UUID of fresh id `number`: the process's random v4 UUID with `number` in its counted
/// bits.
fn fresh_uuid(number: u64) -> uuid::fmt::Hyphenated {
    static BASE: OnceLock<u128> = OnceLock::new();
    let base = *BASE.get_or_init(|| uuid::Uuid::new_v4().as_u128());
    uuid::Uuid::from_u128((base & !COUNTED) | (u128::from(number) & COUNTED)).hyphenated()
}

/// The id's text, written without keeping it (a span's field: read by a subscriber that
/// records it, never formatted when nothing does).
impl std::fmt::Display for RequestId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.with_text(|text| f.write_str(text))
    }
}

impl std::fmt::Debug for RequestId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self.as_str(), f)
    }
}

#[cfg(test)]
mod tests {
    use super::RequestId;
    use std::collections::HashSet;
    use std::sync::Arc;

    fn parsed(id: &str) -> uuid::Uuid {
        let uuid = uuid::Uuid::parse_str(id).expect("a UUID");
        assert_eq!(uuid.get_version_num(), 4, "{id}");
        assert_eq!(uuid.get_variant(), uuid::Variant::RFC4122, "{id}");
        uuid
    }

    #[test]
    fn fresh_ids_are_distinct_v4_uuids_on_every_thread() {
        let mut seen = HashSet::new();
        // More than a block, so a thread takes a second one.
        for _ in 0..(super::BLOCK + 10) {
            assert!(seen.insert(parsed(RequestId::fresh().as_str())));
        }
        let threads: Vec<_> = (0..3)
            .map(|_| {
                std::thread::spawn(|| {
                    (0..1_000)
                        .map(|_| RequestId::fresh().as_str().to_owned())
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        for thread in threads {
            for id in thread.join().expect("thread") {
                assert!(seen.insert(parsed(&id)), "{id} was made twice");
            }
        }
    }

    #[test]
    fn clones_read_before_and_after_the_first_read_agree() {
        let id = RequestId::fresh();
        let early = id.clone();
        let text = id.as_str().to_owned();
        let late = id.clone();
        assert_eq!(early.as_str(), text);
        assert!(
            Arc::ptr_eq(late.shared(), id.shared()),
            "shared once written"
        );
        let unread = RequestId::fresh();
        assert_eq!(
            unread.clone().to_string(),
            unread.as_str(),
            "displayed as it is read"
        );
        let given = RequestId::Given("caller:7".into());
        assert_eq!(
            (given.as_str(), given.to_string()),
            ("caller:7", "caller:7".to_owned())
        );
    }
}
