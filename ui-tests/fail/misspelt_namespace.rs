use opkit::prelude::*;

#[operation(namspace = "math")]
async fn add(a: i64, b: i64) -> i64 {
    a + b
}

fn main() {}
