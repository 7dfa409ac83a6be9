use opkit::prelude::*;

#[operation(namespace = "notes", mutation, prompt)]
async fn summarize() -> String {
    String::new()
}

fn main() {}
