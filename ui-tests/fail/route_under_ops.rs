use opkit::prelude::*;

#[operation(namespace = "notes", http(method = "GET", path = "/ops/notes"))]
async fn list() -> Vec<String> {
    Vec::new()
}

fn main() {}
