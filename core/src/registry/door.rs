//! The front door: [`OperationRegistry::serve`], the one entry through which every edge
//! (the HTTP server, the MCP server, the call protocol's `CallHandler`, or a server the
//! application writes) serves a call that came from outside the process.

use super::layered::Served;
use super::operation::{HeldOperation, Operation};
use super::{OperationRegistry, RegistryInner, TracedStream};
use crate::context::OperationContext;
use crate::edge::Edge;
use crate::error::CallError;
use crate::middleware::Outcome;
use crate::spec::OperationSpec;
use crate::trace::CallSpan;
use serde_json::Value;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

/// An operation an edge looked up once ([`OperationRegistry::lookup`]) to read its spec
/// (the methods a route answers, how a query string maps onto the input) and then serve the
/// call with ([`OperationRegistry::serve_found`]), without a second lookup by id.
///
/// It is the operation as registered when it was looked up: an operation replaced or
/// unregistered meanwhile is still served as it was by a call already holding it.
#[derive(Clone)]
pub struct FoundOperation {
    operation: Arc<Operation>,
}

impl FoundOperation {
    /// The operation's id.
    pub fn id(&self) -> &str {
        &self.operation.id
    }

    /// The operation's spec.
    pub fn spec(&self) -> &Arc<OperationSpec> {
        &self.operation.spec
    }
}

impl fmt::Debug for FoundOperation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("FoundOperation").field(&self.id()).finish()
    }
}

impl OperationRegistry {
    /// Serves a call from outside the process: what an edge calls once it has mapped its
    /// wire to an operation id, an input and a context.
    ///
    /// The context carries what the edge established about the caller: the
    /// [`identity`](OperationContext::with_identity), the request id (and parent), the
    /// deadline, the cancellation signal, the trace context, and the
    /// [`edge`](OperationContext::with_edge) with its facts. In order, `serve`
    ///
    /// 1. opens the call's server span (its `opkit.path` is the edge's name),
    /// 2. looks the operation up, once (`OPERATION_NOT_FOUND`),
    /// 3. checks its access rule against the identity (`ACCESS_DENIED`; an edge answers
    ///    "unauthenticated" itself when there is no identity),
    /// 4. builds the handler's context (the registry's env and state, the operation's own
    ///    timeout),
    /// 5. runs the application's [middleware](crate::middleware), then validates the input
    ///    and dispatches on the operation's kind,
    ///
    /// and returns the [`Outcome`]: one reply for a query or mutation, a stream of replies
    /// for a subscription (the span ends with the stream). The edge maps it back to its wire.
    ///
    /// A server of the application's own (a Unix socket, gRPC) serves calls the same way:
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use opkit::edge::Edge;
    /// use opkit::middleware::Outcome;
    /// use opkit::prelude::*;
    /// use serde_json::json;
    ///
    /// #[operation(namespace = "math", access(scopes = ["math:use"]))]
    /// async fn add(a: i64, b: i64) -> i64 {
    ///     a + b
    /// }
    ///
    /// /// What the application's edge knows about its peer.
    /// struct PeerUid(u32);
    ///
    /// let registry = OperationRegistry::new();
    /// registry.register_operation(add).unwrap();
    ///
    /// // The edge's whole job: its wire to (id, input, context), and the outcome back.
    /// async fn serve_line(registry: &OperationRegistry, line: &str, uid: u32) -> String {
    ///     let request: serde_json::Value = match serde_json::from_str(line) {
    ///         Ok(request) => request,
    ///         Err(error) => return format!("bad request: {error}"),
    ///     };
    ///     let id = request["op"].as_str().unwrap_or_default();
    ///     let ctx = OperationContext::new()
    ///         .with_identity(Identity::new(uid.to_string()).with_scopes(["math:use"]))
    ///         .with_edge(Edge::new("unix").with_fact(PeerUid(uid)));
    ///     match registry.serve(id, request["input"].clone(), ctx).await {
    ///         Ok(Outcome::Unary(reply)) => match reply.into_envelope() {
    ///             Ok(envelope) => serde_json::to_string(&envelope).unwrap_or_default(),
    ///             Err(error) => serde_json::to_string(&error).unwrap_or_default(),
    ///         },
    ///         Ok(Outcome::Stream(_)) => "subscriptions are not served here".to_owned(),
    ///         Err(error) => serde_json::to_string(&error).unwrap_or_default(),
    ///     }
    /// }
    ///
    /// let answer = serve_line(&registry, r#"{"op": "math.add", "input": {"a": 2, "b": 3}}"#, 1000).await;
    /// assert!(answer.starts_with(r#"{"data":5,"#));
    /// let refused = serve_line(&registry, r#"{"op": "math.sub", "input": {}}"#, 1000).await;
    /// assert!(refused.contains("OPERATION_NOT_FOUND"));
    /// # });
    /// ```
    pub fn serve(
        &self,
        id: &str,
        input: Value,
        ctx: OperationContext,
    ) -> impl Future<Output = Result<Outcome, CallError>> + Send + Unpin + 'static + use<> {
        self.serve_operation(self.inner.find(id).ok_or(id), input, ctx)
    }

    /// The operation `id` as registered now, for an edge that reads its spec before it serves
    /// the call ([`serve_found`](Self::serve_found)); `None` when there is none.
    pub fn lookup(&self, id: &str) -> Option<FoundOperation> {
        self.inner
            .find(id)
            .map(|operation| FoundOperation { operation })
    }

    /// `true` when a call of `found` served now may read more of its context than its
    /// deadline and cancellation: its handler takes the context or application state (an
    /// `#[operation]` fn that takes neither does not; a hand-written handler always may), or
    /// the application's middleware covers it (a middleware may read anything).
    ///
    /// An edge may leave out of the context what only such a call can use (a reporter for
    /// progress and logs, an elicitor, a handle on its client) when this is `false`; the MCP
    /// server does, so a tool that cannot report costs no reporter.
    ///
    /// ```
    /// use opkit::prelude::*;
    ///
    /// #[operation(namespace = "math")]
    /// async fn add(a: i64, b: i64) -> i64 {
    ///     a + b
    /// }
    ///
    /// #[operation(namespace = "math")]
    /// async fn noisy(ctx: &OperationContext, n: i64) -> i64 {
    ///     ctx.progress(1.0, None, None);
    ///     n
    /// }
    ///
    /// let registry = OperationRegistry::new();
    /// registry.register_operation(add).unwrap();
    /// registry.register_operation(noisy).unwrap();
    /// assert!(!registry.reads_context(&registry.lookup("math.add").unwrap()));
    /// assert!(registry.reads_context(&registry.lookup("math.noisy").unwrap()));
    /// let layered = registry.with_middleware(opkit::middleware::from_fn(|call, next: opkit::middleware::Next| next.run(call)));
    /// assert!(layered.reads_context(&layered.lookup("math.add").unwrap()));
    /// ```
    pub fn reads_context(&self, found: &FoundOperation) -> bool {
        found.operation.reads_context || self.inner.chain_for(&found.operation).is_some()
    }

    /// [`serve`](Self::serve) for an operation the edge looked up already
    /// ([`lookup`](Self::lookup)): the same steps but the lookup.
    ///
    /// `found` moves into the call; an edge that keeps it for the call's length lends it
    /// instead ([`serve_found_ref`](Self::serve_found_ref)).
    ///
    /// Both return an `Unpin` future: an edge can make it first and await it by `&mut` inside
    /// its own future, which then holds it once (captured, then awaited by value, it would
    /// take two slots there).
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use opkit::middleware::Outcome;
    /// use opkit::prelude::*;
    /// use serde_json::json;
    ///
    /// #[operation(namespace = "math")]
    /// async fn add(a: i64, b: i64) -> i64 {
    ///     a + b
    /// }
    ///
    /// let registry = OperationRegistry::new();
    /// registry.register_operation(add).unwrap();
    /// let found = registry.lookup("math.add").expect("registered");
    /// assert_eq!(found.spec().kind, OperationKind::Query);
    /// let mut serving = registry.serve_found(found, json!({"a": 2, "b": 3}), OperationContext::new());
    /// let outcome = (&mut serving).await;
    /// let Ok(Outcome::Unary(reply)) = outcome else { panic!("a query answers once") };
    /// assert_eq!(reply.into_envelope().unwrap().data, json!(5));
    /// # });
    /// ```
    pub fn serve_found(
        &self,
        found: FoundOperation,
        input: Value,
        ctx: OperationContext,
    ) -> impl Future<Output = Result<Outcome, CallError>> + Send + Unpin + 'static + use<> {
        self.serve_operation(Ok(found.operation), input, ctx)
    }

    /// [`serve_found`](Self::serve_found) with `found` lent for the call's length rather
    /// than moved into it: for an edge that holds the operation anyway (a table of the
    /// operations it serves), so a call takes and drops no reference count of it.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use opkit::middleware::Outcome;
    /// use opkit::prelude::*;
    /// use serde_json::json;
    ///
    /// #[operation(namespace = "math")]
    /// async fn add(a: i64, b: i64) -> i64 {
    ///     a + b
    /// }
    ///
    /// let registry = OperationRegistry::new();
    /// registry.register_operation(add).unwrap();
    /// let found = registry.lookup("math.add").expect("registered");
    /// for (a, sum) in [(1, 4), (2, 5)] {
    ///     let outcome = registry
    ///         .serve_found_ref(&found, json!({"a": a, "b": 3}), OperationContext::new())
    ///         .await;
    ///     let Ok(Outcome::Unary(reply)) = outcome else { panic!("a query answers once") };
    ///     assert_eq!(reply.into_envelope().unwrap().data, json!(sum));
    /// }
    /// # });
    /// ```
    pub fn serve_found_ref<'a>(
        &self,
        found: &'a FoundOperation,
        input: Value,
        ctx: OperationContext,
    ) -> impl Future<Output = Result<Outcome, CallError>> + Send + Unpin + use<'a> {
        self.serve_operation(Ok(&found.operation), input, ctx)
    }

    /// The steps of [`serve`](Self::serve) after the lookup (`Err` with the id that names no
    /// operation).
    fn serve_operation<O: HeldOperation>(
        &self,
        operation: Result<O, &str>,
        input: Value,
        ctx: OperationContext,
    ) -> Serving<O> {
        let path = ctx.edge().map_or("serve", Edge::name);
        let id = match &operation {
            Ok(operation) => &*operation.get().id,
            Err(id) => id,
        };
        let chain = operation
            .as_ref()
            .ok()
            .and_then(|operation| self.inner.chain_for(operation.get()));
        // A handler that reads nothing from its context (and no middleware) cannot pass a
        // trace on: a span nothing records starts none for it.
        let passes_on = chain.is_some()
            || operation
                .as_ref()
                .ok()
                .is_none_or(|op| op.get().reads_context);
        let span = CallSpan::start_served(path, id, &ctx, passes_on);
        let ctx = span.apply(ctx);
        let running = operation
            .map_err(CallError::operation_not_found)
            .and_then(|operation| {
                span.record_kind(operation.get().spec.kind);
                operation.get().spec.access.check(ctx.identity())?;
                let input = crate::limits::admit_input(input)?;
                let ctx = self
                    .inner
                    .context_for(operation.get(), ctx, chain.is_some());
                Ok(RegistryInner::run_call(operation, input, ctx, chain))
            })
            .unwrap_or_else(|error| Served::Ready(Some(Err(error))));
        Serving {
            running,
            span: Some(span),
        }
    }
}

/// The front door's future: the call, running (or its error, ready), polled inside its span
/// when that is active, then the span finished with its outcome, a stream's span handed to
/// the stream.
///
/// `Unpin` (the call's own future is boxed inside), so that an edge can make it before its
/// own future and poll it in place there: held once, not captured and then moved into a
/// second slot to be awaited. The span is entered here rather than by wrapping the call in
/// `tracing`'s `Instrumented`, so a call nothing records is polled through no wrapper.
struct Serving<O> {
    running: Served<O>,
    /// `None` once the call finished.
    span: Option<CallSpan>,
}

impl<O: HeldOperation> Future for Serving<O> {
    type Output = Result<Outcome, CallError>;

    // Inlined always, as the polls under it are (`Served`, `Execution`): a call's result (a
    // 72-byte `Result<Outcome, CallError>`) passes up through each, and as functions of their
    // own each copies it into its caller's slot, wide loads right after the narrower stores
    // that wrote it, which wait for them (`perf annotate`: the hottest instructions of the
    // front door's poll). Inlined into the edge's future, the copies fold: `profile mcp-pair`
    // read the in-process tool call at 1.25–1.29× rmcp + check's where it read 1.28–1.32×
    // (five runs of each build, alternated).
    #[inline(always)]
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        let result = {
            let _entered = this
                .span
                .as_ref()
                .filter(|span| span.is_active())
                .map(|span| span.span().enter());
            ready!(Pin::new(&mut this.running).poll(cx))
        };
        let mut span = this
            .span
            .take()
            .expect("the front door's future was polled after it finished");
        Poll::Ready(match result {
            Ok(Outcome::Stream(items)) => {
                Ok(Outcome::Stream(Box::pin(TracedStream::new(items, span))))
            }
            Ok(unary) => {
                span.finish(Ok(()));
                Ok(unary)
            }
            Err(error) => {
                span.finish(Err(&error));
                Err(error)
            }
        })
    }
}

impl<O> Drop for Serving<O> {
    /// A call dropped before it finished (its caller went away) is dropped inside its span,
    /// as the work of a call is.
    fn drop(&mut self) {
        if let Some(span) = self.span.as_ref().filter(|span| span.is_active()) {
            let _entered = span.span().enter();
            self.running = Served::Ready(None);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Handler;
    use crate::spec::OperationKind;
    use serde_json::json;
    use std::task::Poll;

    /// A registry with one operation whose handler is pending once before it answers.
    fn registry() -> (OperationRegistry, FoundOperation) {
        let registry = OperationRegistry::new();
        let handler = Handler::unary(|input, _ctx| async move {
            tokio::task::yield_now().await;
            Ok(input)
        });
        let spec = OperationSpec::new("api", "slow", OperationKind::Query);
        registry.register(spec, handler).unwrap();
        let found = registry.lookup("api.slow").unwrap();
        (registry, found)
    }

    #[tokio::test]
    async fn a_lent_operation_is_served_without_taking_a_reference_to_it() {
        let (registry, found) = registry();
        let held = Arc::strong_count(&found.operation);
        let mut lent = registry.serve_found_ref(&found, json!({"n": 1}), OperationContext::new());
        assert!(matches!(futures::poll!(&mut lent), Poll::Pending));
        assert_eq!(Arc::strong_count(&found.operation), held);
        let Ok(Outcome::Unary(reply)) = lent.await else {
            panic!("a query answers once")
        };
        assert_eq!(reply.into_envelope().unwrap().data, json!({"n": 1}));

        // Moved in, the call holds its own reference while it runs.
        let mut moved = registry.serve_found(found.clone(), json!({}), OperationContext::new());
        assert!(matches!(futures::poll!(&mut moved), Poll::Pending));
        assert_eq!(Arc::strong_count(&found.operation), held + 1);
        assert!(moved.await.is_ok());
        assert_eq!(Arc::strong_count(&found.operation), held);
    }

    #[tokio::test]
    async fn a_lent_operation_behind_middleware_is_shared_with_the_chain() {
        let (registry, found) = registry();
        let layered = registry.with_middleware(crate::middleware::from_fn(
            |call, next: crate::middleware::Next| next.run(call),
        ));
        let found = layered.lookup(found.id()).unwrap();
        let held = Arc::strong_count(&found.operation);
        let mut lent = layered.serve_found_ref(&found, json!({"n": 2}), OperationContext::new());
        assert!(matches!(futures::poll!(&mut lent), Poll::Pending));
        // The chain's end owns the operation: it may outlive the caller's loan.
        assert_eq!(Arc::strong_count(&found.operation), held + 1);
        let Ok(Outcome::Unary(reply)) = lent.await else {
            panic!("a query answers once")
        };
        assert_eq!(reply.into_envelope().unwrap().data, json!({"n": 2}));
        assert_eq!(Arc::strong_count(&found.operation), held);
    }
}
