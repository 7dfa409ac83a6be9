use opkit::prelude::*;

#[operation(namespace = "jobs", mutation, task = "after_input")]
async fn deploy(target: String) -> String {
    format!("deployed {target}")
}

fn main() {}
