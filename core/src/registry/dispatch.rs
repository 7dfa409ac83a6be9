//! Calling the registered operations: [`OperationRegistry::execute`], `subscribe` and
//! `validate_input`, and the registry as the [`EnvBackend`] of local nested calls.

use super::operation::Operation;
use super::output::DataForm;
use super::unary::{self, Enveloped, Execution};
use super::{EnvelopeStream, OperationRegistry, RegistryInner, TracedStream, subscription};
use crate::context::{EnvBackend, OperationContext};
use crate::env::OperationEnv;
use crate::envelope::ResponseEnvelope;
use crate::error::{CallError, ErrorCode};
use crate::trace::{CallSpan, SpanKind};
use futures::future::{BoxFuture, Either};
use futures::{FutureExt, StreamExt};
use serde_json::Value;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use tracing::Instrument;

impl OperationRegistry {
    /// Runs a query or mutation: look up, validate the input, run, finish in the pipeline.
    ///
    /// Validation first refuses an input nested deeper than
    /// [`MAX_INPUT_DEPTH`](crate::limits::MAX_INPUT_DEPTH) (`VALIDATION_ERROR`), so no
    /// recursive code sees it. No access check: this is the trusted in-process path. The
    /// lookup, the input check and the handler's start happen in this call; the returned
    /// future (`'static`: it borrows nothing, so it can be spawned) runs the handler and
    /// finishes its result.
    pub fn execute(
        &self,
        id: &str,
        input: Value,
        ctx: &OperationContext,
    ) -> impl Future<Output = Result<ResponseEnvelope, CallError>> + Send + 'static + use<> {
        self.inner.execute(id, input, ctx)
    }

    /// Starts a subscription: the same checks as `execute` up front, then one envelope per
    /// item. Dropping the stream drops the handler's stream.
    pub async fn subscribe(
        &self,
        id: &str,
        input: Value,
        ctx: &OperationContext,
    ) -> Result<EnvelopeStream, CallError> {
        self.inner.subscribe(id, input, ctx).await
    }

    /// Validates `input` against the input schema of `id` (every violation is reported).
    pub fn validate_input(&self, id: &str, input: &Value) -> Result<(), CallError> {
        let operation = self
            .inner
            .find(id)
            .ok_or_else(|| CallError::operation_not_found(id))?;
        crate::limits::check_input(input)?;
        operation.check_input(input)
    }
}

impl RegistryInner {
    pub(super) fn find(&self, id: &str) -> Option<Arc<Operation>> {
        super::snapshot::find(self, id)
    }

    fn find_kind(&self, id: &str, stream: bool) -> Result<Arc<Operation>, CallError> {
        let operation = self
            .find(id)
            .ok_or_else(|| CallError::operation_not_found(id))?;
        if operation.spec.kind.is_stream() != stream {
            let hint = if stream {
                "call it with execute"
            } else {
                "call it with subscribe"
            };
            return Err(CallError::new(
                ErrorCode::ValidationError,
                format!("`{id}` is a {}: {hint}", operation.spec.kind),
            ));
        }
        Ok(operation)
    }

    /// The context the handler sees: the caller's, with this registry as env when it has
    /// none, and this registry's state over the context's.
    pub(super) fn handler_context(&self, mut ctx: OperationContext) -> OperationContext {
        if !ctx.has_env()
            && let Some(this) = self.this.upgrade()
        {
            ctx = ctx.with_env(this);
        }
        if self.has_states.load(Ordering::Acquire) {
            ctx = ctx.with_registry_states(&self.states.load());
        }
        ctx
    }

    /// The context `operation`'s handler gets: [`handler_context`](Self::handler_context), or
    /// the caller's own when the handler reads nothing from it but the call's bounds; with
    /// the operation's own timeout, when it has one.
    ///
    /// A call through middleware always gets the full context (`whole`): a middleware may
    /// read the registry's state, or add to it.
    pub(super) fn context_for(
        &self,
        operation: &Operation,
        ctx: OperationContext,
        whole: bool,
    ) -> OperationContext {
        let ctx = if whole || operation.reads_context {
            self.handler_context(ctx)
        } else {
            ctx
        };
        match operation.spec.timeout {
            Some(timeout) => ctx.with_timeout(timeout),
            None => ctx,
        }
    }

    /// [`OperationRegistry::execute`] with the caller's context borrowed (cloned once, when
    /// the call starts) or given up (a nested call's is owned already: not cloned again).
    /// Its future is named ([`Executed`]): it holds nothing of the caller's context's type.
    fn execute(&self, id: &str, input: Value, ctx: impl Caller) -> Executed {
        if !CallSpan::wanted() {
            // Nothing listens: the plain path, with no span to build.
            return Either::Left(self.execute_plain(id, input, ctx));
        }
        let mut span = CallSpan::start(SpanKind::Internal, "execute", id, ctx.get());
        if !span.is_active() {
            // Nothing records this span: the plain path, with nothing to enter or record.
            return Either::Left(self.execute_plain(id, input, ctx));
        }
        let ctx = span.apply(ctx.owned());
        let running = {
            let _entered = span.span().enter();
            self.execute_plain(id, input, ctx)
        };
        let instrument = span.span().clone();
        // Boxed, so the plain path's future (the common one) does not grow to this one's size.
        Either::Right(Box::pin(async move {
            let result = running.instrument(instrument).await;
            span.finish_with(&result);
            result
        }))
    }

    /// The call `execute` runs, finished as its envelope: an `#[operation]` fn's handler is
    /// asked for its data as a `Value` ([`DataForm::Value`]), the form the envelope holds.
    fn execute_plain(&self, id: &str, input: Value, ctx: impl Caller) -> Enveloped {
        let started = crate::limits::admit_input(input).and_then(|input| {
            let operation = self.find_kind(id, false)?;
            if let Some(chain) = self.chain_for(&operation) {
                let ctx = self.context_for(&operation, ctx.owned(), true);
                let running = Self::run_call(operation, input, ctx, Some(chain));
                return Ok(Execution::layered(Box::pin(async move {
                    running.await?.into_reply()
                })));
            }
            operation.check_input(&input)?;
            // A handler that reads nothing of its context but its bounds gets only them.
            let ctx = if operation.reads_context {
                ctx.owned()
            } else {
                ctx.bounds_only()
            };
            let mut ctx = self.context_for(&operation, ctx, false);
            let (handler, bounds) = unary::start(&operation, input, &mut ctx, DataForm::Value)?;
            Ok(Execution::new(operation, handler, bounds))
        });
        started.unwrap_or_else(Execution::refused).envelope()
    }

    /// [`OperationRegistry::subscribe`] with the caller's context borrowed or given up (as
    /// [`execute`](Self::execute)).
    fn subscribe(
        &self,
        id: &str,
        input: Value,
        ctx: impl Caller,
    ) -> BoxFuture<'static, Result<EnvelopeStream, CallError>> {
        if !CallSpan::wanted() {
            return self.subscribe_plain(id, input, ctx);
        }
        let mut span = CallSpan::start(SpanKind::Internal, "subscribe", id, ctx.get());
        if !span.is_active() {
            return self.subscribe_plain(id, input, ctx);
        }
        let ctx = span.apply(ctx.owned());
        let started = {
            let _entered = span.span().enter();
            self.subscribe_plain(id, input, ctx)
        };
        let instrument = span.span().clone();
        Box::pin(async move {
            match started.instrument(instrument).await {
                Ok(items) => Ok(Box::pin(TracedStream::new(items, span)) as EnvelopeStream),
                Err(error) => {
                    span.finish(Err(&error));
                    Err(error)
                }
            }
        })
    }

    fn subscribe_plain(
        &self,
        id: &str,
        input: Value,
        ctx: impl Caller,
    ) -> BoxFuture<'static, Result<EnvelopeStream, CallError>> {
        let started = crate::limits::admit_input(input).and_then(|input| {
            let operation = self.find_kind(id, true)?;
            if let Some(chain) = self.chain_for(&operation) {
                let ctx = self.context_for(&operation, ctx.owned(), true);
                return Ok(Either::Right(Self::run_call(
                    operation,
                    input,
                    ctx,
                    Some(chain),
                )));
            }
            operation.check_input(&input)?;
            let ctx = self.context_for(&operation, ctx.owned(), false);
            Ok(Either::Left(subscription::start(operation, input, ctx)?))
        });
        match started {
            Ok(Either::Left(items)) => futures::future::ready(Ok(Box::pin(
                items.map(|item| item?.into_envelope()),
            ) as EnvelopeStream))
            .boxed(),
            Ok(Either::Right(running)) => Box::pin(async move {
                let items = running.await?.into_stream();
                Ok(Box::pin(items.map(|item| item?.into_envelope())) as EnvelopeStream)
            }),
            Err(error) => futures::future::ready(Err(error)).boxed(),
        }
    }
}

/// The future of [`RegistryInner::execute`]: the plain path's, or a traced call's, boxed.
type Executed = Either<Enveloped, BoxFuture<'static, Result<ResponseEnvelope, CallError>>>;

/// The caller's context as `execute` and `subscribe` take it: borrowed from a caller who
/// keeps it (cloned once, where the handler's context is made) or given up by one who does
/// not (a nested call's, moved on).
trait Caller {
    /// The context, to read.
    fn get(&self) -> &OperationContext;
    /// The context, owned.
    fn owned(self) -> OperationContext;
    /// A context with the caller's deadline and cancellation only (see
    /// [`OperationContext::bounds_only`]); a context given up is moved on whole, at no cost.
    fn bounds_only(self) -> OperationContext;
}

impl Caller for &OperationContext {
    fn get(&self) -> &OperationContext {
        self
    }

    fn owned(self) -> OperationContext {
        self.clone()
    }

    fn bounds_only(self) -> OperationContext {
        OperationContext::bounds_only(self)
    }
}

impl Caller for OperationContext {
    fn get(&self) -> &OperationContext {
        self
    }

    fn owned(self) -> OperationContext {
        self
    }

    fn bounds_only(self) -> OperationContext {
        self
    }
}

impl OperationEnv {
    /// An env over a local registry (the trusted path: no access checks).
    pub fn local(registry: OperationRegistry) -> Self {
        Self::new(Arc::new(registry))
    }
}

impl EnvBackend for RegistryInner {
    fn call(
        &self,
        id: &str,
        input: Value,
        ctx: OperationContext,
    ) -> BoxFuture<'static, Result<ResponseEnvelope, CallError>> {
        self.execute(id, input, ctx).boxed()
    }

    fn subscribe(
        &self,
        id: &str,
        input: Value,
        ctx: OperationContext,
    ) -> BoxFuture<'static, Result<EnvelopeStream, CallError>> {
        RegistryInner::subscribe(self, id, input, ctx)
    }
}

impl EnvBackend for OperationRegistry {
    fn call(
        &self,
        id: &str,
        input: Value,
        ctx: OperationContext,
    ) -> BoxFuture<'static, Result<ResponseEnvelope, CallError>> {
        self.inner.call(id, input, ctx)
    }

    fn subscribe(
        &self,
        id: &str,
        input: Value,
        ctx: OperationContext,
    ) -> BoxFuture<'static, Result<EnvelopeStream, CallError>> {
        EnvBackend::subscribe(&*self.inner, id, input, ctx)
    }
}
