use opkit::prelude::*;

#[operation(namespace = "notes", mcp(tool_nme = "get_note"))]
async fn get(id: i64) -> i64 {
    id
}

#[operation(namespace = "notes", mpc(prompt))]
async fn summarize() -> String {
    String::new()
}

#[operation(namespace = "notes", http(method = "GET", pth = "/notes"))]
async fn list() -> Vec<String> {
    Vec::new()
}

fn main() {}
