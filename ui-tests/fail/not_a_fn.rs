use opkit::prelude::*;

#[operation(namespace = "math")]
struct Add {
    a: i64,
    b: i64,
}

fn main() {}
