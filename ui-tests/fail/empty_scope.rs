use opkit::prelude::*;

#[operation(namespace = "users", mutation, access(scopes = [""]))]
async fn rename(name: String) -> String {
    name
}

fn main() {}
