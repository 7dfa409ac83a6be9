use opkit::prelude::*;

#[derive(serde::Serialize)]
struct Point {
    x: f64,
    y: f64,
}

#[operation(namespace = "geo")]
async fn origin() -> Result<Point, CallError> {
    Ok(Point { x: 0.0, y: 0.0 })
}

fn main() {}
