use futures::stream::BoxStream;
use opkit::prelude::*;

#[operation(namespace = "clock")]
fn ticks(count: u32) -> BoxStream<'static, u32> {
    Box::pin(futures::stream::iter(0..count))
}

fn main() {}
