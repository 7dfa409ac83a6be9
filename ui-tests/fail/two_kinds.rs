use opkit::prelude::*;

#[operation(namespace = "clock", mutation, subscription)]
fn ticks(count: u32) -> impl Stream<Item = u32> + Send + 'static {
    futures::stream::iter(0..count)
}

fn main() {}
