use opkit::prelude::*;
use std::time::Duration;

/// A report with its own timeout and two middleware layers.
#[operation(namespace = "reports", timeout = "2m", layer = "expensive", layer = "audited")]
async fn build() -> u32 {
    1
}

fn main() {
    let spec = build::spec();
    assert_eq!(spec.timeout, Some(Duration::from_secs(120)));
    assert_eq!(spec.layers, ["expensive", "audited"]);
}
