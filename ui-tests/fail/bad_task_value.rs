use opkit::prelude::*;

#[operation(namespace = "jobs", task = "always")]
async fn run() -> String {
    String::new()
}

fn main() {}
