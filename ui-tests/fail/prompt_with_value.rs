use opkit::prelude::*;

#[operation(namespace = "notes", mcp(prompt = "summarize"))]
async fn summarize() -> String {
    String::new()
}

fn main() {}
