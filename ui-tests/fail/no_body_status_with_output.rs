use opkit::prelude::*;

#[operation(namespace = "notes", mutation, http(method = "DELETE", path = "/notes/{id}", status = 204))]
async fn delete(id: i64) -> String {
    format!("deleted {id}")
}

fn main() {}
