use opkit::prelude::*;
use std::rc::Rc;

#[operation(namespace = "demo", subscription)]
fn ticks(count: u32) -> impl Stream<Item = u32> {
    let step = Rc::new(1);
    futures::stream::iter(0..count).map(move |n| n * *step)
}

fn main() {}
