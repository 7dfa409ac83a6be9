//! Calls through the application's middleware: the registry's end of a chain (validate the
//! input, start the handler, finish in the pipeline) and the chain an operation's calls pass
//! through; [`Served`], the future of a call the front door serves, which runs that end in
//! place (no box) when no middleware covers the operation.

use super::operation::{HeldOperation, Operation};
use super::output::DataForm;
use super::unary::{self, Execution};
use super::{RegistryInner, subscription};
use crate::context::OperationContext;
use crate::error::CallError;
use crate::middleware::{Call, CallInput, Chain, Endpoint, Layers, Next, Outcome};
use crate::spec::OperationSpec;
use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::Value;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll};

/// The end of a JSON call's chain: the operation's handler.
struct RegistryEnd {
    operation: Arc<Operation>,
}

impl Endpoint for RegistryEnd {
    fn run(
        self: Box<Self>,
        input: CallInput,
        ctx: OperationContext,
    ) -> BoxFuture<'static, Result<Outcome, CallError>> {
        let input = match input {
            CallInput::Json(input) => input,
            CallInput::Typed {
                json: Some(json), ..
            } => json,
            CallInput::Typed { value, json: None } => match value.to_json() {
                Ok(input) => input,
                Err(error) => return futures::future::ready(Err(error)).boxed(),
            },
        };
        Box::pin(end(self.operation, input, ctx))
    }
}

/// The future of a call the front door serves: the operation's handler run in place
/// ([`Execution`], no box of its own), a chain of middleware ending in it (boxed), or an
/// outcome ready at once (a refused input, a subscription's started stream). It holds its
/// operation as `O` ([`HeldOperation`]).
pub(super) enum Served<O = Arc<Operation>> {
    Unary(Execution<O>),
    Chained(BoxFuture<'static, Result<Outcome, CallError>>),
    /// `None` once returned.
    Ready(Option<Result<Outcome, CallError>>),
}

impl<O: HeldOperation> Future for Served<O> {
    type Output = Result<Outcome, CallError>;

    // Inlined always: see `Serving::poll` (door.rs).
    #[inline(always)]
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // Every variant is `Unpin` (the execution's handler future is boxed).
        match &mut *self {
            Served::Unary(execution) => Pin::new(execution)
                .poll(cx)
                .map(|result| result.map(Outcome::Unary)),
            Served::Chained(running) => running.as_mut().poll(cx),
            Served::Ready(outcome) => Poll::Ready(
                outcome
                    .take()
                    .expect("a served call was polled after it completed"),
            ),
        }
    }
}

/// The registry's end of a call: validate the input, then start the handler (a unary
/// call's [`Execution`]) or the subscription's stream.
fn end<O: HeldOperation>(operation: O, input: Value, mut ctx: OperationContext) -> Served<O> {
    if let Err(error) = operation.get().check_input(&input) {
        return Served::Ready(Some(Err(error)));
    }
    if operation.get().spec.kind.is_stream() {
        let started = subscription::start(operation.shared(), input, ctx).map(Outcome::Stream);
        return Served::Ready(Some(started));
    }
    match unary::start(operation.get(), input, &mut ctx, DataForm::Typed) {
        Ok((handler, bounds)) => Served::Unary(Execution::new(operation, handler, bounds)),
        Err(error) => Served::Ready(Some(Err(error))),
    }
}

impl RegistryInner {
    /// The chain the calls of `operation` pass through; `None` when no middleware covers it
    /// (one atomic load when the registry has none).
    pub(super) fn chain_for(&self, operation: &Operation) -> Option<Chain> {
        if !self.has_layers.load(Ordering::Acquire) {
            return None;
        }
        self.layers.load().chain_for(&operation.id, &operation.spec)
    }

    /// Runs a call of `operation` with `ctx` (the handler's context) through `chain`, when
    /// there is one, and the operation's handler.
    pub(super) fn run_call<O: HeldOperation>(
        operation: O,
        input: Value,
        ctx: OperationContext,
        chain: Option<Chain>,
    ) -> Served<O> {
        match chain {
            Some(chain) => {
                let operation = operation.shared();
                let call = Call::new(
                    operation.id.clone(),
                    operation.spec.clone(),
                    ctx,
                    CallInput::Json(input),
                    Box::new(RegistryEnd { operation }),
                );
                Served::Chained(Next::start(chain).run(call))
            }
            None => end(operation, input, ctx),
        }
    }

    /// The middleware and the spec of `id` (when it is registered), for a typed call made
    /// with a context on this registry; `None` without middleware.
    fn layers_for(&self, id: &str) -> Option<(Arc<Layers>, Option<Arc<OperationSpec>>)> {
        if !self.has_layers.load(Ordering::Acquire) {
            return None;
        }
        Some((
            self.layers.load_full(),
            self.find(id).map(|operation| operation.spec.clone()),
        ))
    }
}

/// The middleware a typed call made with a context on `backend` passes through, and the spec
/// of `id` there: `backend`'s when it is a registry with middleware (found by its type: only a
/// registry runs calls through middleware), `None` otherwise.
pub(crate) fn layers_of(
    backend: &dyn crate::context::EnvBackend,
    id: &str,
) -> Option<(Arc<Layers>, Option<Arc<OperationSpec>>)> {
    let backend: &dyn std::any::Any = backend;
    match backend.downcast_ref::<RegistryInner>() {
        Some(inner) => inner.layers_for(id),
        None => backend
            .downcast_ref::<super::OperationRegistry>()?
            .inner
            .layers_for(id),
    }
}
