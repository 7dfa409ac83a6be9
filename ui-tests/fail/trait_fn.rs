use opkit::prelude::*;

trait Calculator {
    #[operation(namespace = "math")]
    async fn add(a: i64, b: i64) -> i64 {
        a + b
    }
}

fn main() {}
