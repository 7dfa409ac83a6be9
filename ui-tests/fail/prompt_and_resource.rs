use opkit::prelude::*;

#[operation(namespace = "notes", resource = "notes://all", prompt)]
async fn all() -> String {
    String::new()
}

fn main() {}
