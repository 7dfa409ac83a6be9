use opkit::prelude::*;

#[derive(Debug)]
struct ParseFailure;

#[operation(namespace = "util")]
async fn parse(text: String) -> Result<i64, ParseFailure> {
    text.parse().map_err(|_| ParseFailure)
}

fn main() {}
