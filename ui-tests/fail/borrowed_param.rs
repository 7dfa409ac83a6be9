use opkit::prelude::*;

#[operation(namespace = "util")]
async fn shout(text: &str) -> String {
    text.to_uppercase()
}

fn main() {}
