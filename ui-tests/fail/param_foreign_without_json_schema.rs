use opkit::prelude::*;

#[operation(namespace = "users")]
async fn find(id: uuid::Uuid) -> String {
    id.to_string()
}

fn main() {}
