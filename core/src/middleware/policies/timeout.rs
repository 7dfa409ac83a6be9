//! [`Timeout`]: a deadline for the calls a middleware covers.

use crate::error::CallError;
use crate::middleware::{Call, Middleware, Next, Outcome};
use futures::future::BoxFuture;
use std::time::Duration;

/// Gives each call it covers a deadline `timeout` from when it passes (an earlier deadline
/// of the caller's stays): past it the handler is stopped and the caller gets `TIMEOUT`.
///
/// `#[operation(timeout = "5s")]` (or [`OperationSpec::timeout`](crate::OperationSpec::timeout))
/// does the same for one operation without a middleware.
///
/// ```
/// use opkit::OperationRegistry;
/// use opkit::middleware::{Scope, Timeout};
/// use std::time::Duration;
/// let registry = OperationRegistry::new()
///     .with_middleware_for(Scope::namespace("reports"), Timeout::new(Duration::from_secs(30)));
/// # let _ = registry;
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Timeout {
    timeout: Duration,
}

impl Timeout {
    /// A deadline `timeout` from the start of each call.
    pub fn new(timeout: Duration) -> Self {
        Self { timeout }
    }
}

impl Middleware for Timeout {
    fn handle(&self, mut call: Call, next: Next) -> BoxFuture<'static, Result<Outcome, CallError>> {
        let ctx = call.ctx().clone().with_timeout(self.timeout);
        *call.ctx_mut() = ctx;
        next.run(call)
    }
}
