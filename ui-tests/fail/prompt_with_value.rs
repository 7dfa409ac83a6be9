use opkit::prelude::*;

#[operation(namespace = "notes", prompt = "summarize")]
async fn summarize() -> String {
    String::new()
}

fn main() {}
