use opkit::prelude::*;

#[operation(namespace = "users", mutation = true)]
async fn rename(name: String) -> String {
    name
}

fn main() {}
