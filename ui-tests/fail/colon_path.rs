use opkit::prelude::*;

#[operation(namespace = "notes", http(method = "GET", path = "/notes/:id"))]
async fn get(id: i64) -> i64 {
    id
}

fn main() {}
