//! Cross-crate integration tests of opkit.
//!
//! This library defines a few `#[operation]`s in a crate of its own, so the tests can check
//! that `OperationRegistry::from_inventory()` finds operations defined in another crate of the
//! workspace. A test binary links this crate by naming it (`use opkit_tests as _;`).

use opkit::prelude::*;
use serde::{Deserialize, Serialize};

/// A greeting.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Greeting {
    /// The text.
    pub text: String,
}

/// Greets someone, from another crate.
#[operation(namespace = "shared")]
pub async fn greet(name: String) -> Greeting {
    Greeting {
        text: format!("Hello, {name}!"),
    }
}

/// Counts from zero, from another crate.
#[operation(namespace = "shared", subscription)]
pub fn count(to: u32) -> impl Stream<Item = u32> + Send + 'static {
    futures::stream::iter(0..to)
}
