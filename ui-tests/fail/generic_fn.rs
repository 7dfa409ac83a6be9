use opkit::prelude::*;

#[operation(namespace = "util")]
async fn echo<T: serde::Serialize>(value: T) -> T {
    value
}

fn main() {}
