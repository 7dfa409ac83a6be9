//! [`ConcurrencyLimit`]: at most N calls at once.

use crate::error::CallError;
use crate::middleware::{Call, Middleware, Next, Outcome};
use futures::StreamExt;
use futures::future::BoxFuture;
use std::sync::Arc;
use tokio::sync::Semaphore;

/// Runs at most `max` of the calls it covers at once (one budget shared by all of them: give
/// each expensive operation its own with [`Scope::operation`](crate::middleware::Scope::operation)).
///
/// A call past the cap waits for a place, within its deadline and cancellation (then
/// `TIMEOUT` or `ABORTED`, and the handler never ran); with
/// [`reject_when_full`](Self::reject_when_full) it is refused at once with `UNAVAILABLE`
/// instead. A subscription holds its place until its stream ends or is dropped.
///
/// ```
/// use opkit::OperationRegistry;
/// use opkit::middleware::{ConcurrencyLimit, Scope};
/// let registry = OperationRegistry::new()
///     .with_middleware_for(Scope::operation("reports.build"), ConcurrencyLimit::new(2));
/// # let _ = registry;
/// ```
#[derive(Debug, Clone)]
pub struct ConcurrencyLimit {
    places: Arc<Semaphore>,
    max: usize,
    reject: bool,
}

impl ConcurrencyLimit {
    /// At most `max` calls at once (at least one).
    pub fn new(max: usize) -> Self {
        let max = max.max(1);
        Self {
            places: Arc::new(Semaphore::new(max)),
            max,
            reject: false,
        }
    }

    /// Refuses a call past the cap at once (`UNAVAILABLE`) rather than letting it wait.
    #[must_use]
    pub fn reject_when_full(mut self) -> Self {
        self.reject = true;
        self
    }
}

impl Middleware for ConcurrencyLimit {
    fn handle(&self, call: Call, next: Next) -> BoxFuture<'static, Result<Outcome, CallError>> {
        let (places, max, reject) = (self.places.clone(), self.max, self.reject);
        Box::pin(async move {
            let full = || {
                CallError::unavailable(format!(
                    "`{}` is running its maximum of {max} calls at once; try again shortly",
                    call.id()
                ))
            };
            let place = if reject {
                places.try_acquire_owned().map_err(|_| full())?
            } else {
                let waiting = places.acquire_owned();
                call.ctx()
                    .bounds()
                    .run(waiting)
                    .await
                    .map_err(|stop| stop.error_for(call.id()))?
                    .map_err(|_| full())?
            };
            match next.run(call).await? {
                Outcome::Unary(reply) => Ok(Outcome::Unary(reply)),
                Outcome::Stream(items) => {
                    // The place goes with the stream: released when it ends or is dropped.
                    Ok(Outcome::Stream(Box::pin(items.map(move |item| {
                        let _held = &place;
                        item
                    }))))
                }
            }
        })
    }
}
