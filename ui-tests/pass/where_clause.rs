//! A `where` clause on a fn that is not generic is valid Rust, and accepted.
use opkit::prelude::*;

#[operation(namespace = "math")]
async fn add(a: i64, b: i64) -> i64
where
    i64: Copy,
{
    a + b
}

fn main() {
    assert_eq!(add::ID, "math.add");
}
