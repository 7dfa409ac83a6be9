//! Generated code compiles without warnings, with pedantic lints denied too.
#![deny(warnings, missing_docs, unused, unused_qualifications)]
#![deny(clippy::all)]

//! Operations in a crate that denies warnings.

use opkit::prelude::*;

/// A public operation.
#[operation(namespace = "strict")]
pub async fn public(a: i64) -> i64 {
    a
}

/// A private operation, only reachable through the registry.
#[operation(namespace = "strict", subscription)]
fn private(count: u32) -> impl Stream<Item = Result<u32, CallError>> + Send + 'static {
    futures::stream::iter((0..count).map(Ok))
}

/// A crate-visible operation taking the whole input.
#[operation(namespace = "strict", mutation)]
pub(crate) async fn whole(Input(value): Input<Vec<String>>, ctx: &OperationContext) -> usize {
    let _ = ctx;
    value.len()
}

mod nested {
    /// Visible to the parent module only.
    #[opkit::operation(namespace = "strict.nested")]
    pub(super) async fn inner(flag: Option<bool>) -> Option<bool> {
        flag
    }
}

#[deprecated = "operations can be deprecated"]
#[opkit::operation(namespace = "strict")]
async fn old() {}

fn main() {
    let _ = nested::inner::ID;
}
