//! Doc comments on parameters describe the input fields.
use opkit::prelude::*;

/// Moves a point.
#[operation(namespace = "geo")]
async fn shift(
    /// How far right.
    dx: f64,
    /// How far up.
    dy: f64,
) -> (f64, f64) {
    (dx, dy)
}

fn main() {
    let schema = shift::spec().input_schema;
    assert_eq!(schema["properties"]["dx"]["description"], "How far right.");
    assert_eq!(schema["properties"]["dy"]["description"], "How far up.");
}
