use opkit::prelude::*;

#[operation(namespace = "util")]
async fn shout(text: impl Into<String>) -> String {
    text.into().to_uppercase()
}

fn main() {}
