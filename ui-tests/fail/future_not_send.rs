use opkit::prelude::*;
use std::rc::Rc;

#[operation(namespace = "demo")]
async fn count(n: u32) -> u32 {
    let shared = Rc::new(n);
    std::future::ready(()).await;
    *shared
}

fn main() {}
