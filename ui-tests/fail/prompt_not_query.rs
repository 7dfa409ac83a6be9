use opkit::prelude::*;

#[operation(namespace = "notes", mutation, mcp(prompt))]
async fn summarize() -> String {
    String::new()
}

fn main() {}
