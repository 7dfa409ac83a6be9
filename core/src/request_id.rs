//! [`RequestId`]: a context's request id, given as text or fresh; a fresh one is kept as its
//! number and written out the first time it is read.
//!
//! Most in-process calls (an MCP tool call, a nested call through an env) never read their
//! id; for them a fresh id costs a counter increment, not a formatted string and its
//! allocation.

use std::sync::{Arc, OnceLock};

/// A request id: see the [module docs](self).
///
/// Invariant: `text` is set, or `bits` holds the fresh id it stands for (a v4 UUID's 128
/// bits, as two halves so the id keeps the context's 8-byte alignment). Clones made before
/// the first read each write the same text from the same bits.
#[derive(Clone)]
pub(crate) struct RequestId {
    bits: (u64, u64),
    text: OnceLock<Arc<str>>,
}

impl RequestId {
    /// A fresh id, in [`new_request_id`](crate::new_request_id)'s form (a v4 UUID).
    ///
    /// Unique, not secret: each thread starts from a random v4 UUID and counts up in its low
    /// 62 bits (which hold no version or variant bits), so an id costs an increment rather
    /// than a draw from the random generator. Two threads' ids meet only if their random
    /// starts agree in the other 60 random bits. (A secret, such as a key a client must not
    /// guess, is `new_request_id`'s: random every time.)
    pub(crate) fn fresh() -> Self {
        const COUNTED: u128 = (1 << 62) - 1;
        thread_local! {
            static NEXT: std::cell::Cell<u128> =
                std::cell::Cell::new(uuid::Uuid::new_v4().as_u128());
        }
        let id = NEXT.with(|next| {
            let id = next.get();
            let counted = (id & COUNTED).wrapping_add(1) & COUNTED;
            next.set((id & !COUNTED) | counted);
            id
        });
        Self {
            bits: ((id >> 64) as u64, id as u64),
            text: OnceLock::new(),
        }
    }

    /// The id `text`, as given.
    pub(crate) fn given(text: Arc<str>) -> Self {
        Self {
            bits: (0, 0),
            text: OnceLock::from(text),
        }
    }

    /// The id's text, written on the first read of a fresh id.
    pub(crate) fn as_str(&self) -> &str {
        self.shared()
    }

    /// The id's text as the shared string (written on the first read of a fresh id).
    pub(crate) fn shared(&self) -> &Arc<str> {
        self.text.get_or_init(|| {
            let mut text = [0_u8; uuid::fmt::Hyphenated::LENGTH];
            Arc::from(
                &*uuid::Uuid::from_u128(self.bits())
                    .hyphenated()
                    .encode_lower(&mut text),
            )
        })
    }

    /// A fresh id's 128 bits.
    fn bits(&self) -> u128 {
        (u128::from(self.bits.0) << 64) | u128::from(self.bits.1)
    }
}

/// The id's text, written without keeping it (a span's field: read by a subscriber that
/// records it, never formatted when nothing does).
impl std::fmt::Display for RequestId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.text.get() {
            Some(text) => f.write_str(text),
            None => {
                let mut text = [0_u8; uuid::fmt::Hyphenated::LENGTH];
                f.write_str(
                    uuid::Uuid::from_u128(self.bits())
                        .hyphenated()
                        .encode_lower(&mut text),
                )
            }
        }
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
        for _ in 0..1_000 {
            assert!(seen.insert(parsed(RequestId::fresh().as_str())));
        }
        let other: Vec<_> = std::thread::spawn(|| {
            (0..1_000)
                .map(|_| RequestId::fresh().as_str().to_owned())
                .collect()
        })
        .join()
        .expect("thread");
        for id in other {
            assert!(seen.insert(parsed(&id)), "{id} was made twice");
        }
    }

    #[test]
    fn clones_read_before_and_after_the_first_read_agree() {
        let id = RequestId::fresh();
        let early = id.clone();
        let text = id.as_str().to_owned();
        let late = id.clone();
        assert_eq!(early.as_str(), text);
        assert_eq!(RequestId::fresh().to_string().len(), text.len());
        let unread = RequestId::fresh();
        assert_eq!(
            unread.clone().to_string(),
            unread.as_str(),
            "displayed as it is read"
        );
        assert!(
            Arc::ptr_eq(late.shared(), id.shared()),
            "shared once written"
        );
        assert_eq!(RequestId::given("caller:7".into()).as_str(), "caller:7");
    }
}
