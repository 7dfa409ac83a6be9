use opkit::prelude::*;

#[operation(namespace = "util")]
async fn anything() -> impl serde::Serialize {
    42
}

fn main() {}
