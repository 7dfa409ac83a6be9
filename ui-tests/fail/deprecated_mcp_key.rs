#![deny(deprecated)]

use opkit::prelude::*;

#[operation(namespace = "notes", resource = "notes://{id}")]
async fn read(id: i64) -> i64 {
    id
}

fn main() {}
