use opkit::prelude::*;

#[operation(namespace = "jobs", mutation, mcp(task = "after_input"))]
async fn deploy(target: String) -> String {
    format!("deployed {target}")
}

fn main() {}
