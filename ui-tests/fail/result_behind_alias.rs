use opkit::prelude::*;

type Outcome<T> = Result<T, CallError>;

#[operation(namespace = "util")]
async fn parse(text: String) -> Outcome<i64> {
    text.parse().map_err(|_| CallError::execution("not a number"))
}

fn main() {}
