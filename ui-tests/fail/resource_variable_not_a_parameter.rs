use opkit::prelude::*;

#[operation(namespace = "notes", mcp(resource = "notes://{id}"))]
async fn read(note: i64) -> i64 {
    note
}

fn main() {}
