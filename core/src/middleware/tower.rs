//! tower layers as middleware (feature `tower`): [`tower_layer`].

use super::{Call, Middleware, Next, Outcome};
use crate::error::CallError;
use futures::future::BoxFuture;
use std::task::{Context, Poll};
use tower::{BoxError, Layer, Service, ServiceExt};

/// What a tower layer's service receives: the call and the rest of the chain.
#[derive(Debug)]
pub struct TowerRequest {
    /// The call, as a [`Middleware`] sees it.
    pub call: Call,
    next: Next,
}

/// The service a tower layer wraps: runs the request's call through the rest of the chain.
#[derive(Debug, Clone, Copy, Default)]
pub struct TowerNext;

impl Service<TowerRequest> for TowerNext {
    type Response = Outcome;
    type Error = BoxError;
    type Future = BoxFuture<'static, Result<Outcome, BoxError>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: TowerRequest) -> Self::Future {
        let running = request.next.run(request.call);
        Box::pin(async move { running.await.map_err(BoxError::from) })
    }
}

/// A tower layer used as a middleware (see [`tower_layer`]).
#[derive(Debug, Clone)]
pub struct TowerMiddleware<S> {
    service: S,
}

/// Makes a middleware of a tower [`Layer`]: the layer wraps [`TowerNext`] once, and every
/// call is served by a clone of that service (so a `ConcurrencyLimitLayer`'s semaphore or a
/// `RateLimitLayer`'s budget is shared by all the calls it covers), after it is ready.
///
/// Errors are mapped to `CallError`s: a `CallError` stays itself, tower's `Elapsed` becomes
/// `TIMEOUT`, `Overloaded` becomes `UNAVAILABLE`, anything else `EXECUTION_ERROR`.
///
/// ```
/// use opkit::OperationRegistry;
/// use opkit::middleware::{Scope, tower_layer};
/// use std::time::Duration;
///
/// let registry = OperationRegistry::new()
///     .with_middleware_for(
///         Scope::operation("reports.build"),
///         tower_layer(tower::limit::ConcurrencyLimitLayer::new(2)),
///     )
///     .with_middleware(tower_layer(tower::timeout::TimeoutLayer::new(Duration::from_secs(10))));
/// # let _ = registry;
/// ```
pub fn tower_layer<L>(layer: L) -> TowerMiddleware<L::Service>
where
    L: Layer<TowerNext>,
{
    TowerMiddleware {
        service: layer.layer(TowerNext),
    }
}

/// A tower error as a `CallError`.
fn call_error(id: &str, error: BoxError) -> CallError {
    let error = match error.downcast::<CallError>() {
        Ok(error) => return *error,
        Err(error) => error,
    };
    if error.is::<tower::timeout::error::Elapsed>() {
        return CallError::timeout(format!("`{id}` did not finish before the layer's timeout"));
    }
    if error.is::<tower::load_shed::error::Overloaded>() {
        return CallError::unavailable(format!("`{id}` is overloaded; try again shortly"));
    }
    CallError::execution(format!("a tower layer refused `{id}`: {error}"))
}

impl<S> Middleware for TowerMiddleware<S>
where
    S: Service<TowerRequest, Response = Outcome> + Clone + Send + Sync + 'static,
    S::Error: Into<BoxError>,
    S::Future: Send + 'static,
{
    fn handle(&self, call: Call, next: Next) -> BoxFuture<'static, Result<Outcome, CallError>> {
        let service = self.service.clone();
        Box::pin(async move {
            let id = call.id().to_owned();
            let ready = service
                .ready_oneshot()
                .await
                .map_err(|error| call_error(&id, error.into()))?;
            let mut ready = ready;
            ready
                .call(TowerRequest { call, next })
                .await
                .map_err(|error| call_error(&id, error.into()))
        })
    }
}
