use opkit::prelude::*;

#[operation(namespace = "geo")]
async fn norm((x, y): (f64, f64)) -> f64 {
    (x * x + y * y).sqrt()
}

fn main() {}
