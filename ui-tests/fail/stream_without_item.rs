use opkit::prelude::*;

#[operation(namespace = "clock", subscription)]
fn ticks(count: u32) -> impl Stream + Send + 'static {
    futures::stream::iter(0..count)
}

fn main() {}
