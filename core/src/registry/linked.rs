//! The `#[operation]`s linked into the program: the `inventory` collection the registry reads
//! (the generated code submits to it through `opkit::__private`).

use super::{OperationRegistry, RegistryError};
use std::any::TypeId;

/// One `#[operation]` linked into the program, collected with `inventory`.
///
/// Entries are `const`: the spec and handler are built on demand, once per registry.
pub struct OperationRegistration {
    /// Registers the operation (`OperationRegistry::register_typed`).
    pub register: fn(&OperationRegistry) -> Result<(), RegistryError>,
    /// The `TypeId` of the `#[operation]` fn item, for `OperationRegistry::register_operation`.
    pub fn_type_id: fn() -> TypeId,
}

inventory::collect!(OperationRegistration);

/// Every registration linked into the program.
pub fn registrations() -> impl Iterator<Item = &'static OperationRegistration> {
    inventory::iter::<OperationRegistration>.into_iter()
}
