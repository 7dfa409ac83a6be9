//! Routes served by a tower service that holds what the route serves behind one `Arc`
//! ([`Routed`]), instead of an axum handler.
//!
//! axum clones a route's boxed service for every request, and a handler's route then clones
//! its handler and its state again for the call: a handler holding an id, with the server's
//! state as an `Arc`, took and dropped five reference counts per request, each an atomic add
//! and subtract. A [`Routed`] service's one clone per request is of one reference count, and
//! the request's future owns it.

use axum::extract::Request;
use axum::response::Response;
use futures::FutureExt;
use futures::future::BoxFuture;
use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use std::task::{Context, Poll};

/// What one route serves: its server state and what it knows of its operation.
pub(crate) trait RouteTarget: Send + Sync + 'static {
    /// The response to `request`, the future owning the target's reference.
    fn serve(self: Arc<Self>, request: Request) -> impl Future<Output = Response> + Send + 'static;
}

/// The service of a route serving `T` (see the module docs).
pub(crate) struct Routed<T>(Arc<T>);

impl<T: RouteTarget> Routed<T> {
    pub(crate) fn new(target: T) -> Self {
        Self(Arc::new(target))
    }
}

impl<T> Clone for Routed<T> {
    fn clone(&self) -> Self {
        Self(self.0.clone())
    }
}

impl<T: RouteTarget> tower_service::Service<Request> for Routed<T> {
    type Response = Response;
    type Error = Infallible;
    type Future = BoxFuture<'static, Result<Response, Infallible>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request) -> Self::Future {
        self.0.clone().serve(request).map(Ok).boxed()
    }
}
