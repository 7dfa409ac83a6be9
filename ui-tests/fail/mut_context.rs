use opkit::prelude::*;

#[operation(namespace = "auth")]
async fn whoami(ctx: &mut OperationContext) -> String {
    ctx.request_id().to_string()
}

fn main() {}
