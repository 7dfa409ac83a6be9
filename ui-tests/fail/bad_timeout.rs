use opkit::prelude::*;

#[operation(namespace = "reports", timeout = "5 parsecs")]
async fn build() -> u32 {
    1
}

#[operation(namespace = "reports", timeout = "0s")]
async fn instant() -> u32 {
    1
}

#[operation(namespace = "reports", layer = "")]
async fn unnamed() -> u32 {
    1
}

fn main() {}
