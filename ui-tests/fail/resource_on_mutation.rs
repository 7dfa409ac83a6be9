use opkit::prelude::*;

#[operation(namespace = "notes", mutation, mcp(resource = "notes://{id}"))]
async fn delete(id: String) -> String {
    id
}

fn main() {}
