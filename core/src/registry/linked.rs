//! The `#[operation]`s linked into the program, collected before `main`.
//!
//! Each expansion holds one `static` in the platform's constructor section (`.init_array` on
//! ELF, `__mod_init_func` on Apple platforms, `.CRT$XCU` on Windows, as C++ static
//! constructors use): a pointer to a fn of `__private` made for that operation, which the
//! loader runs before `main` (or when a shared library is loaded) and which adds the
//! operation's [`OperationRegistration`] to one process-wide list ([`join`]). One `static`
//! per operation is all the compiler checks per expansion for it; the code that joins the
//! list is generic, compiled in opkit.
//!
//! The list is a `Mutex<Vec<_>>`: constructors run one at a time before `main`, but a
//! library loaded later runs its own while other threads may read the list. Readers take a
//! snapshot ([`registrations`]), so no lock is held while an operation registers.

use super::{OperationRegistry, RegistryError};
use std::any::TypeId;
use std::sync::{Mutex, PoisonError};

// Targets without a constructor section the expansion knows: their operations would never
// be found, so they do not build (rather than finding nothing at run time).
#[cfg(not(any(windows, target_vendor = "apple", all(unix, not(target_os = "aix")))))]
compile_error!(
    "opkit collects #[operation]s through the platform's static constructors, which this \
     target does not have: Unix (but AIX), Apple platforms and Windows are supported"
);

/// One `#[operation]` linked into the program.
///
/// The spec and handler are built on demand, once per registry.
#[derive(Clone, Copy)]
pub struct OperationRegistration {
    /// Registers the operation (`OperationRegistry::register_typed`).
    pub register: fn(&OperationRegistry) -> Result<(), RegistryError>,
    /// The `TypeId` of the `#[operation]` fn item, for `OperationRegistry::register_operation`.
    pub fn_type_id: fn() -> TypeId,
}

/// Every operation whose constructor has run, in the order they ran.
static LINKED: Mutex<Vec<OperationRegistration>> = Mutex::new(Vec::new());

/// Adds a registration to the list: what an operation's constructor does (see
/// `__private::constructor`), before `main`. It cannot fail but by running out of memory,
/// which aborts, as a panic in a constructor would.
pub fn join(registration: OperationRegistration) {
    // A poisoned lock only means a reader panicked while copying the list: it is whole.
    LINKED
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(registration);
}

/// Every registration linked into the program (a snapshot of the list).
pub fn registrations() -> impl Iterator<Item = OperationRegistration> {
    let linked = LINKED
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    linked.into_iter()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a library loaded while the program runs does: its constructors join the list
    /// then, and the next snapshot has the new entry, once.
    #[test]
    fn a_registration_joined_later_is_in_the_next_snapshot() {
        struct Marker;
        let marker = || TypeId::of::<Marker>();
        let before: Vec<_> = registrations().collect();
        assert!(!before.iter().any(|entry| (entry.fn_type_id)() == marker()));
        // Registers nothing: other tests of this binary that read the list are unaffected.
        join(OperationRegistration {
            register: |_| Ok(()),
            fn_type_id: marker,
        });
        let after: Vec<_> = registrations().collect();
        assert_eq!(after.len(), before.len() + 1);
        let joined = after
            .iter()
            .filter(|entry| (entry.fn_type_id)() == marker());
        assert_eq!(joined.count(), 1);
    }
}
