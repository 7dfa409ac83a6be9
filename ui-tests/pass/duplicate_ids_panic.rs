//! Two linked operations with one id make `from_inventory()` panic, naming the id and both
//! definitions.
use opkit::prelude::*;

#[operation(namespace = "dup")]
async fn same() -> u8 {
    1
}

mod other {
    #[opkit::operation(namespace = "dup", name = "same")]
    async fn another() -> u8 {
        2
    }
}

fn main() {
    std::panic::set_hook(Box::new(|_| {}));
    let panic = std::panic::catch_unwind(OperationRegistry::from_inventory).unwrap_err();
    let _ = std::panic::take_hook();
    let message = panic.downcast_ref::<String>().unwrap();
    assert!(message.contains("`dup.same` is registered twice"), "{message}");
    assert!(message.contains("duplicate_ids_panic.rs:5"), "{message}");
    assert!(message.contains("duplicate_ids_panic.rs:11"), "{message}");
}
