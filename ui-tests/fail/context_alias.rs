use opkit::prelude::*;

type Ctx = OperationContext;

#[operation(namespace = "auth")]
async fn whoami(ctx: &Ctx) -> String {
    ctx.request_id().to_string()
}

fn main() {}
