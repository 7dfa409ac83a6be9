use opkit::prelude::*;

#[operation(namespace = "clock", subscription)]
async fn now() -> u64 {
    0
}

fn main() {}
