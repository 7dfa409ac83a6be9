use opkit::prelude::*;

#[operation(namespace = "files")]
async fn read(path: String) -> Result<String, Box<dyn std::error::Error>> {
    Ok(std::fs::read_to_string(path)?)
}

fn main() {}
