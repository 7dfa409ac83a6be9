//! Per-thread snapshots of registries' operation tables, so that a lookup costs no atomic
//! read-modify-write.
//!
//! The shared table is an `ArcSwap`: loading it takes a slot and gives it back, two atomic
//! read-modify-writes (each a full barrier on x86), and the lookup then clones the operation's
//! `Arc`. A thread here keeps the table it last loaded for each of the last [`SLOTS`]
//! registries it looked up in, under the registry's count of `writes` read *before* that
//! load, and reuses it while the count is unchanged: one plain load.
//!
//! Why a kept table is never stale. The count is odd while a table is being stored: a writer
//! (under the registry's writer lock) adds one, stores the new table, adds one again
//! ([`store`]). A lookup that reads an odd count reads the shared table and keeps nothing. A
//! table loaded after reading an even count `w` is at least as new as the write that made
//! `w`, and is used only while the count is still `w`. And reads stay in order: a thread that
//! has seen a new table in the shared slot (through `contains`, say) has seen the odd count
//! stored before it (the store releases it), so its next lookup does not use a table kept
//! from before.
//!
//! What it costs: a thread holds the tables of the last [`SLOTS`] registries it looked up in
//! until it looks up in others or exits, so an operation removed from a registry, or a dropped
//! registry's table, is dropped later on a thread that still holds it (each thread holds at
//! most [`SLOTS`] tables). Registries are told apart by a number given at creation, never by
//! address, so a new registry where a dropped one was never finds its table.

use super::operation::Operation;
use super::{OperationMap, RegistryInner};
use std::cell::RefCell;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// The registries whose tables one thread keeps.
const SLOTS: usize = 4;

/// One kept table: whose, loaded after reading which count of writes.
struct Kept {
    registry: u64,
    writes: u64,
    table: Arc<OperationMap>,
}

/// The tables a thread keeps, and the slot the next new registry takes (round robin).
struct Tables {
    slots: [Option<Kept>; SLOTS],
    next: usize,
}

thread_local! {
    static KEPT: RefCell<Tables> = const {
        RefCell::new(Tables { slots: [None, None, None, None], next: 0 })
    };
}

/// Stores `table` as `registry`'s operations; the caller holds the registry's writer lock.
/// The count of writes is odd while the table is stored (see the module docs).
pub(super) fn store(registry: &RegistryInner, table: OperationMap) {
    // Odd: made visible, to whoever loads the new table, by the table's store (a release).
    registry.writes.fetch_add(1, Ordering::Relaxed);
    registry.operations.store(Arc::new(table));
    registry.writes.fetch_add(1, Ordering::Release);
}

/// A number no other registry of this process has, for [`find`]'s key.
pub(super) fn registry_number() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// The operation `id` of `registry`, found in the table this thread keeps for it when no
/// table was stored since (see the module docs).
#[inline]
pub(super) fn find(registry: &RegistryInner, id: &str) -> Option<Arc<Operation>> {
    let now = registry.writes.load(Ordering::Acquire);
    if now % 2 == 1 {
        // A table is being stored: read the shared one, keep nothing.
        return shared(registry, id);
    }
    let kept = KEPT.try_with(|kept| {
        let mut kept = kept.borrow_mut();
        let at = match kept.slots.iter().position(|slot| {
            slot.as_ref()
                .is_some_and(|slot| slot.registry == registry.number)
        }) {
            Some(at) => at,
            None => {
                let at = kept.next;
                kept.next = (at + 1) % SLOTS;
                at
            }
        };
        let slot = &mut kept.slots[at];
        match slot {
            Some(held) if held.registry == registry.number && held.writes == now => {
                (held.table.get(id).cloned(), None)
            }
            _ => {
                let table = registry.operations.load_full();
                let found = table.get(id).cloned();
                let replaced = slot.replace(Kept {
                    registry: registry.number,
                    writes: now,
                    table,
                });
                (found, replaced)
            }
        }
    });
    match kept {
        // The table replaced is dropped here, after the borrow ends: dropping it may drop
        // operations, and a handler's captures may look an operation up as they go.
        Ok((found, replaced)) => {
            drop(replaced);
            found
        }
        // A thread being torn down keeps nothing: it reads the shared table.
        Err(_) => shared(registry, id),
    }
}

/// The operation `id` in `registry`'s shared table, keeping nothing.
fn shared(registry: &RegistryInner, id: &str) -> Option<Arc<Operation>> {
    registry.operations.load().get(id).cloned()
}

#[cfg(test)]
mod tests {
    use crate::{CallError, Handler, OperationContext, OperationKind, OperationRegistry};
    use crate::{ErrorCode, OperationSpec};
    use futures::executor::block_on;
    use serde_json::{Value, json};

    /// A registry with `name` answering `answer`.
    fn answering(registry: &OperationRegistry, name: &str, answer: i64) {
        let spec = OperationSpec::new("t", name, OperationKind::Query);
        let handler = Handler::unary(move |_input, _ctx| async move { Ok(json!(answer)) });
        registry.replace(spec, handler).expect("registered");
    }

    fn call(registry: &OperationRegistry, id: &str) -> Result<Value, CallError> {
        let ctx = OperationContext::default();
        block_on(registry.execute(id, json!({}), &ctx)).map(|envelope| envelope.data)
    }

    /// A lookup after a change made on another thread sees the change, though this thread
    /// kept the table from before it: an added, a replaced and a removed operation.
    #[test]
    fn a_change_on_another_thread_is_seen_at_once() {
        let registry = OperationRegistry::new();
        answering(&registry, "a", 1);
        assert_eq!(call(&registry, "t.a").unwrap(), json!(1));
        for (step, change) in [
            (
                "added",
                Box::new(|r: &OperationRegistry| answering(r, "b", 2))
                    as Box<dyn Fn(&OperationRegistry) + Send + Sync>,
            ),
            ("replaced", Box::new(|r| answering(r, "a", 3))),
            (
                "removed",
                Box::new(|r| {
                    r.unregister("t.b");
                }),
            ),
        ] {
            std::thread::scope(|scope| {
                scope.spawn(|| change(&registry));
            });
            let (a, b) = (call(&registry, "t.a"), call(&registry, "t.b"));
            match step {
                "added" => assert_eq!((a.unwrap(), b.unwrap()), (json!(1), json!(2))),
                "replaced" => assert_eq!((a.unwrap(), b.unwrap()), (json!(3), json!(2))),
                _ => {
                    assert_eq!(a.unwrap(), json!(3));
                    assert_eq!(b.unwrap_err().code, ErrorCode::OperationNotFound);
                }
            }
        }
    }

    /// More registries than a thread keeps tables for, called in turn: each answers with its
    /// own operations, and a registry made after others were dropped (perhaps where one of
    /// them was) finds none of theirs.
    #[test]
    fn each_registry_finds_its_own_operations() {
        let registries: Vec<OperationRegistry> = (0..super::SLOTS as i64 * 2 + 1)
            .map(|n| {
                let registry = OperationRegistry::new();
                answering(&registry, "x", n);
                registry
            })
            .collect();
        for _ in 0..3 {
            for (n, registry) in registries.iter().enumerate() {
                assert_eq!(call(registry, "t.x").unwrap(), json!(n));
            }
        }
        drop(registries);
        // After as many writes as the dropped ones had: only the registry's number tells them apart.
        for _ in 0..super::SLOTS * 2 {
            let fresh = OperationRegistry::new();
            answering(&fresh, "y", -1);
            let error = call(&fresh, "t.x").unwrap_err();
            assert_eq!(error.code, ErrorCode::OperationNotFound);
            assert_eq!(call(&fresh, "t.y").unwrap(), json!(-1));
        }
    }

    /// Looks `t.b` up in its registry when dropped.
    struct LooksUpWhenDropped(OperationRegistry);

    impl Drop for LooksUpWhenDropped {
        fn drop(&mut self) {
            assert_eq!(call(&self.0, "t.b").unwrap(), json!(2));
        }
    }

    /// A kept table replaced by a newer one is dropped with no borrow held: an operation it
    /// was the last to hold may look operations up as it is dropped.
    #[test]
    fn a_replaced_table_may_drop_an_operation_that_looks_up() {
        let registry = OperationRegistry::new();
        answering(&registry, "b", 2);
        let looks_up = LooksUpWhenDropped(registry.clone());
        let spec = OperationSpec::new("t", "a", OperationKind::Query);
        let handler = Handler::unary(move |_input, _ctx| {
            let _held = &looks_up;
            async move { Ok(json!(1)) }
        });
        registry.register(spec, handler).expect("registered");
        assert_eq!(call(&registry, "t.a").unwrap(), json!(1));
        // The old `t.a` now lives only in this thread's kept table; the next lookup replaces
        // that table and drops it, which looks `t.b` up.
        answering(&registry, "a", 3);
        assert_eq!(call(&registry, "t.a").unwrap(), json!(3));
    }

    /// While another thread adds operations, every operation the shared table holds when a
    /// lookup starts is found by it: a kept table never hides a registration that returned.
    #[test]
    fn a_registration_that_returned_is_never_hidden() {
        let registry = OperationRegistry::new();
        answering(&registry, "seed", 0);
        let total = 300;
        std::thread::scope(|scope| {
            scope.spawn(|| {
                for n in 0..total {
                    answering(&registry, &format!("op{n}"), n);
                }
            });
            let mut seen = 0;
            // Bounded: each round either finds the next operation or waits for the writer,
            // which registers `total` of them and stops.
            for _ in 0..100_000 {
                if seen == total {
                    break;
                }
                let id = format!("t.op{seen}");
                if registry.contains(&id) {
                    assert_eq!(call(&registry, &id).unwrap(), json!(seen), "{id}");
                    seen += 1;
                } else {
                    // Keeps a table from before the registration being waited for.
                    assert_eq!(call(&registry, "t.seed").unwrap(), json!(0));
                    std::thread::yield_now();
                }
            }
            assert_eq!(seen, total, "the writer's registrations were all seen");
        });
    }
}
