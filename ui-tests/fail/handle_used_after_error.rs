use opkit::prelude::*;

// The attribute's error is the only one: a stub handle keeps `add::ID`, `add::spec()` and
// `register_typed::<add>()` below from adding errors of their own.
#[operation(namespace = "math", mutaion)]
async fn add(a: i64, b: i64) -> i64 {
    a + b
}

fn main() {
    let registry = OperationRegistry::new();
    registry.register_typed::<add>().unwrap();
    let _ = (add::ID, add::spec());
}
