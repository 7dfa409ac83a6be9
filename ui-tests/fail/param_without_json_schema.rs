use opkit::prelude::*;

#[derive(serde::Deserialize)]
struct Point {
    x: f64,
    y: f64,
}

#[operation(namespace = "geo")]
async fn norm(point: Point) -> f64 {
    (point.x * point.x + point.y * point.y).sqrt()
}

fn main() {}
