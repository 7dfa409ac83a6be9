use opkit::prelude::*;

#[operation(namespace = "math")]
async fn zero(_: i64) -> i64 {
    0
}

fn main() {}
