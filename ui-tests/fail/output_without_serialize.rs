use opkit::prelude::*;

#[derive(schemars::JsonSchema)]
struct Point {
    x: f64,
    y: f64,
}

#[operation(namespace = "geo")]
async fn origin() -> Point {
    Point { x: 0.0, y: 0.0 }
}

fn main() {}
