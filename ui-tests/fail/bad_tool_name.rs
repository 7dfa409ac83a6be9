use opkit::prelude::*;

#[operation(namespace = "math", mcp(tool_name = "add numbers"))]
async fn add(a: i64, b: i64) -> i64 {
    a + b
}

fn main() {}
