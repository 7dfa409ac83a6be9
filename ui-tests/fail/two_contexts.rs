use opkit::prelude::*;

#[operation(namespace = "auth")]
async fn whoami(ctx: &OperationContext, again: &OperationContext) -> String {
    format!("{} {}", ctx.request_id(), again.request_id())
}

fn main() {}
