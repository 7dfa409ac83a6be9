use opkit::prelude::*;

/// Adds two integers.
#[operation(namespace = "math")]
async fn add(a: i64, b: i64) -> i64 {
    a + b
}

struct Sum;

fn main() {
    let registry = OperationRegistry::new();
    // The handle is the type named after the fn; a type of one's own is not one.
    registry.register_typed::<Sum>().unwrap();
    registry.register_typed::<add>().unwrap();
}
