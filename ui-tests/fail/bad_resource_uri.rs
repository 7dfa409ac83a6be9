use opkit::prelude::*;

#[operation(namespace = "notes", resource = "notes://{note id}")]
async fn get(id: String) -> String {
    id
}

fn main() {}
