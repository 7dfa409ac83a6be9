use opkit::prelude::*;

#[operation(namespace = "users", mutation, access(scope = ["users:write"]))]
async fn rename(id: u64, name: String) -> String {
    format!("{id}: {name}")
}

fn main() {}
