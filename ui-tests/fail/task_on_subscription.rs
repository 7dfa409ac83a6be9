use opkit::prelude::*;

#[operation(namespace = "notes", subscription, mcp(task))]
fn changes() -> impl futures::Stream<Item = u32> + Send + 'static {
    futures::stream::iter([1])
}

fn main() {}
