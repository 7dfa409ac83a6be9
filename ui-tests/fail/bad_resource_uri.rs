use opkit::prelude::*;

#[operation(namespace = "notes", mcp(resource = "notes://{note id}"))]
async fn get(id: String) -> String {
    id
}

fn main() {}
