use opkit::prelude::*;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Point {
    x: i64,
    y: i64,
}

#[operation(namespace = "geo")]
async fn distance(Input(a): Input<Point>, Input(b): Input<Point>) -> i64 {
    (a.x - b.x).abs() + (a.y - b.y).abs()
}

fn main() {}
