use opkit::prelude::*;

#[operation(namespace = "greet")]
async fn hello(ctx: &OperationContext) -> &str {
    let _ = ctx;
    "hello"
}

fn main() {}
