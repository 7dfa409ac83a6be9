use opkit::prelude::*;

#[operation(namespace = "notes", http(method = "GET", path = "/notes/{id}"))]
async fn get(note_id: i64) -> i64 {
    note_id
}

fn main() {}
