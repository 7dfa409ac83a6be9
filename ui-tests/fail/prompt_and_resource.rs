use opkit::prelude::*;

#[operation(namespace = "notes", mcp(resource = "notes://all", prompt))]
async fn all() -> String {
    String::new()
}

fn main() {}
