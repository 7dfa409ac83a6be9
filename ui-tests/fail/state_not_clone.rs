use opkit::prelude::*;

struct Pool;

#[operation(namespace = "notes")]
async fn count(State(_pool): State<Pool>) -> i64 {
    0
}

fn main() {}
