use opkit::prelude::*;

#[operation(namespace = "jobs", mcp(task = "always"))]
async fn run() -> String {
    String::new()
}

fn main() {}
