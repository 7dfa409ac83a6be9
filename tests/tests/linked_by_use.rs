//! The linker caveat's remedy: naming a crate that only holds operations, with nothing but
//! `use the_crate as _;`, is enough for `from_inventory()` to find its operations.

use opkit::OperationRegistry;
use opkit_tests as _;

#[test]
fn a_use_links_the_crate() {
    let registry = OperationRegistry::from_inventory();
    assert!(registry.contains("shared.greet"), "{registry:?}");
    assert!(registry.contains("shared.count"), "{registry:?}");
}
