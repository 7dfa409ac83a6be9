//! `OperationContext`: what a handler knows about the call it serves, and the [`EnvBackend`]
//! its nested calls go to.

use crate::access::Identity;
use crate::bounds::{Bounds, Deadline};
use crate::edge::{Edge, Session};
use crate::envelope::ResponseEnvelope;
use crate::error::CallError;
use crate::report::{LogLevel, LogRecord, Progress, Reporter};
use crate::request_id::RequestId;
use crate::state::StateMap;
use crate::trace_context::TraceContext;
use asking::ElicitorSlot;
use futures::Stream;
use futures::future::BoxFuture;
use serde_json::Value;
use std::fmt;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

mod asking;

/// A subscription's results: one envelope (or error) per item of the handler's stream.
pub type EnvelopeStream =
    Pin<Box<dyn Stream<Item = Result<ResponseEnvelope, CallError>> + Send + 'static>>;

/// Where an env sends its calls: a local registry, or the call protocol.
///
/// Implemented by [`OperationRegistry`](crate::OperationRegistry) (trusted, in-process) and by the call protocol's
/// pending-request map (remote). A backend is also [`Any`](std::any::Any), so code above the
/// context in the crate's layering that knows a backend's type can find it: a typed call made
/// with a context on a registry finds the registry's middleware that way.
pub trait EnvBackend: std::any::Any + Send + Sync + 'static {
    /// Runs a query or mutation.
    fn call(
        &self,
        id: &str,
        input: Value,
        ctx: OperationContext,
    ) -> BoxFuture<'static, Result<ResponseEnvelope, CallError>>;

    /// Starts a subscription.
    fn subscribe(
        &self,
        id: &str,
        input: Value,
        ctx: OperationContext,
    ) -> BoxFuture<'static, Result<EnvelopeStream, CallError>>;
}

/// What a handler knows about the call it serves: ids, the caller, the deadline, a
/// cancellation signal, and an [`OperationEnv`](crate::OperationEnv) for nested calls.
///
/// `OperationContext::default()` is a valid context for trusted in-process calls: a fresh
/// request id, no identity, no deadline. Cloning is cheap.
///
/// ```
/// use opkit::{Identity, OperationContext};
/// use std::time::Duration;
/// let ctx = OperationContext::new()
///     .with_identity(Identity::new("ann").with_scopes(["users:write"]))
///     .with_timeout(Duration::from_secs(5));
/// assert_eq!(ctx.identity().unwrap().id, "ann");
/// assert!(ctx.deadline().is_some());
/// ```
#[derive(Clone)]
pub struct OperationContext {
    // Kept within 128 bytes, which the compiler moves inline rather than by a call to
    // `memcpy` (a context is moved into every handler future and several times before):
    // the test below pins it.
    request_id: RequestId,
    parent_request_id: Option<Arc<str>>,
    identity: Option<Arc<Identity>>,
    deadline: Option<Deadline>,
    cancellation: Option<CancellationToken>,
    env: Option<Arc<dyn EnvBackend>>,
    states: Option<Arc<StateMap>>,
    reporter: Option<Arc<dyn Reporter>>,
    /// The call's trace context and the edge it came through, behind one `Arc`: most
    /// in-process calls have neither, and inline they would make every move of a context
    /// (each handler future holds one) larger.
    extras: Option<Arc<Extras>>,
}

/// The parts of a context most calls do not have.
#[derive(Debug, Clone, Default)]
struct Extras {
    /// The W3C trace context of the call.
    trace: Option<TraceContext>,
    /// The edge the call came through and what it knows (see [`crate::edge`]); `None` for a
    /// call made in process.
    edge: Option<Edge>,
    /// How the edge asks the caller's user a question (see [`crate::elicit`]).
    elicitor: Option<ElicitorSlot>,
}

impl Extras {
    /// The extras of a context whose only extra is `edge`, when it is one of opkit's own
    /// edges with no facts and no session (what an edge sets for a call whose handler reads
    /// nothing of its context): one `Arc` per thread and edge, shared by every such call, so
    /// that serving one allocates none. A context that changes its extras later copies them
    /// first (`extras_mut`), which costs what making them here would have.
    ///
    /// Per thread, not per process: the count of references a call adds and drops is then
    /// one the thread serving it keeps to itself, not one every core contends for.
    fn of_bare_edge(edge: &Edge) -> Option<Arc<Self>> {
        const NAMES: [&str; 3] = [Edge::HTTP, Edge::MCP, Edge::CALL_PROTOCOL];
        thread_local! {
            static BARE: [Arc<Extras>; 3] = NAMES.map(|name| {
                Arc::new(Extras {
                    edge: Some(Edge::new(name)),
                    ..Extras::default()
                })
            });
        }
        if !edge.is_bare() {
            return None;
        }
        let slot = NAMES.iter().position(|name| *name == edge.name())?;
        BARE.try_with(|bare| bare[slot].clone()).ok()
    }
}

impl Default for OperationContext {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for OperationContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OperationContext")
            .field("request_id", &self.request_id)
            .field("parent_request_id", &self.parent_request_id)
            .field("identity", &self.identity)
            .field("deadline", &self.deadline)
            .field("cancelled", &self.is_cancelled())
            .field("has_env", &self.env.is_some())
            .field("states", &self.states)
            .field("has_reporter", &self.reporter.is_some())
            .field("trace", &self.trace())
            .field("edge", &self.edge())
            .finish()
    }
}

/// A fresh random request id.
pub fn new_request_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

impl OperationContext {
    /// A context with a fresh request id and nothing else.
    pub fn new() -> Self {
        Self::with_id(RequestId::fresh())
    }

    /// A context for an existing request (one that arrived over a transport, say): the given
    /// id and nothing else; no fresh id is generated.
    ///
    /// ```
    /// use opkit::OperationContext;
    /// let ctx = OperationContext::for_request("caller:7");
    /// assert_eq!(ctx.request_id(), "caller:7");
    /// ```
    pub fn for_request(request_id: impl Into<Arc<str>>) -> Self {
        Self::with_id(RequestId::Given(request_id.into()))
    }

    /// A context with this request id and nothing else.
    fn with_id(request_id: RequestId) -> Self {
        Self {
            request_id,
            parent_request_id: None,
            identity: None,
            deadline: None,
            cancellation: None,
            env: None,
            states: None,
            reporter: None,
            extras: None,
        }
    }

    /// A context holding only this one's deadline and cancellation: what the registry gives a
    /// handler that reads nothing of its context but its bounds, instead of a copy of the
    /// whole. Its request id is a placeholder, which nothing reads.
    pub(crate) fn bounds_only(&self) -> Self {
        Self {
            deadline: self.deadline,
            cancellation: self.cancellation.clone(),
            ..Self::placeholder()
        }
    }

    /// The context, taken out: `self` is left a [`placeholder`](Self::placeholder).
    pub(crate) fn take(&mut self) -> Self {
        std::mem::replace(self, Self::placeholder())
    }

    /// A context holding nothing, with a request id nothing reads (no counter taken).
    fn placeholder() -> Self {
        Self::with_id(RequestId::unread())
    }

    /// Gives the context a fresh request id, in [`new`](Self::new)'s form: for a context made
    /// once and cloned for each request of a connection (cloning shares what it holds, where
    /// building it again would allocate).
    ///
    /// ```
    /// use opkit::OperationContext;
    /// use opkit::edge::Edge;
    /// let base = OperationContext::new().with_edge(Edge::new(Edge::MCP));
    /// let ctx = base.clone().with_fresh_request_id();
    /// assert_ne!(ctx.request_id(), base.request_id());
    /// assert_eq!(ctx.edge().map(Edge::name), Some("mcp_server"));
    /// ```
    #[must_use]
    #[inline]
    pub fn with_fresh_request_id(mut self) -> Self {
        self.request_id = RequestId::fresh();
        self
    }

    /// Sets the request id.
    #[must_use]
    pub fn with_request_id(mut self, request_id: impl Into<Arc<str>>) -> Self {
        self.request_id = RequestId::Given(request_id.into());
        self
    }

    /// Sets the id of the request this one was made from.
    #[must_use]
    pub fn with_parent_request_id(mut self, parent: impl Into<Arc<str>>) -> Self {
        self.parent_request_id = Some(parent.into());
        self
    }

    /// Sets the caller's identity.
    #[must_use]
    pub fn with_identity(mut self, identity: Identity) -> Self {
        self.identity = Some(Arc::new(identity));
        self
    }

    /// Sets or clears the caller's identity.
    #[must_use]
    #[inline]
    pub fn with_identity_opt(mut self, identity: Option<Identity>) -> Self {
        self.identity = identity.map(Arc::new);
        self
    }

    /// Sets the deadline (keeping an earlier one if already set).
    #[must_use]
    #[inline]
    pub fn with_deadline(mut self, deadline: Deadline) -> Self {
        self.deadline = Some(self.deadline.map_or(deadline, |own| own.min(deadline)));
        self
    }

    /// Sets the deadline `timeout` from now (keeping an earlier one if already set).
    #[must_use]
    #[inline]
    pub fn with_timeout(self, timeout: Duration) -> Self {
        self.with_deadline(Deadline::after(timeout))
    }

    /// Attaches a cancellation token; cancelling it aborts the call.
    #[must_use]
    #[inline]
    pub fn with_cancellation(mut self, token: CancellationToken) -> Self {
        self.cancellation = Some(token);
        self
    }

    /// Attaches the env nested calls go through.
    #[must_use]
    pub fn with_env(mut self, env: Arc<dyn EnvBackend>) -> Self {
        self.env = Some(env);
        self
    }

    /// Attaches the [`Reporter`] that [`progress`](Self::progress) and [`log`](Self::log)
    /// report to (a server that can forward them does this; see [`crate::report`]).
    #[must_use]
    pub fn with_reporter(mut self, reporter: Arc<dyn Reporter>) -> Self {
        self.reporter = Some(reporter);
        self
    }

    /// `true` when someone listens to [`progress`](Self::progress) and [`log`](Self::log).
    pub fn has_reporter(&self) -> bool {
        self.reporter.is_some()
    }

    /// Reports how far the call has come (`progress` out of `total`, when known), for
    /// long queries and mutations. The MCP server sends it to the caller as
    /// `notifications/progress` when the request asked for progress; without a listener
    /// it does nothing. `progress` should increase with every report of one call.
    pub fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        if let Some(reporter) = &self.reporter {
            let mut report = Progress::new(progress, total);
            report.message = message.map(str::to_owned);
            reporter.progress(report);
        }
    }

    /// Sends a log record to the caller (the MCP server sends it as `notifications/message`,
    /// honouring the client's `logging/setLevel`); without a listener it does nothing.
    pub fn log(&self, level: LogLevel, data: impl Into<serde_json::Value>) {
        if let Some(reporter) = &self.reporter {
            reporter.log(LogRecord::new(level, data));
        }
    }

    /// Sends a full [`LogRecord`] (with a logger name, say); see [`log`](Self::log).
    pub fn log_record(&self, record: LogRecord) {
        if let Some(reporter) = &self.reporter {
            reporter.log(record);
        }
    }

    /// Sets the W3C trace context of the call (see [`crate::trace`]): what a server read
    /// from the caller, or the span the call runs in.
    #[must_use]
    pub fn with_trace(mut self, trace: TraceContext) -> Self {
        self.extras_mut().trace = Some(trace);
        self
    }

    /// Sets or clears the trace context.
    #[must_use]
    #[inline]
    pub fn with_trace_opt(mut self, trace: Option<TraceContext>) -> Self {
        match trace {
            Some(trace) => self.with_trace(trace),
            None => {
                // Extras shared with other contexts are copied only when there is a trace
                // to clear.
                if let Some(extras) = &mut self.extras
                    && extras.trace.is_some()
                {
                    Arc::make_mut(extras).trace = None;
                }
                self
            }
        }
    }

    /// The extras, made when the context has none (and copied when they are shared).
    fn extras_mut(&mut self) -> &mut Extras {
        Arc::make_mut(self.extras.get_or_insert_with(Arc::default))
    }

    /// The trace context of the call, when it has one: nested calls inherit it, and the
    /// call protocol, the OpenAPI import and the MCP import send it on (see
    /// [`crate::trace`]).
    pub fn trace(&self) -> Option<&TraceContext> {
        self.extras.as_deref()?.trace.as_ref()
    }

    /// Sets the edge the call came through (see [`crate::edge`]): what an HTTP, MCP or
    /// call-protocol server, or the application's own edge, knows about the call.
    #[must_use]
    #[inline]
    pub fn with_edge(mut self, edge: Edge) -> Self {
        if self.extras.is_none()
            && let Some(shared) = Extras::of_bare_edge(&edge)
        {
            self.extras = Some(shared);
            return self;
        }
        self.extras_mut().edge = Some(edge);
        self
    }

    /// The edge the call came through, when it came from outside the process. Nested calls
    /// keep their caller's.
    ///
    /// ```
    /// use opkit::OperationContext;
    /// use opkit::edge::Edge;
    /// let ctx = OperationContext::new().with_edge(Edge::new(Edge::HTTP));
    /// assert_eq!(ctx.edge().map(Edge::name), Some("http_server"));
    /// assert_eq!(ctx.child().edge().map(Edge::name), Some("http_server"));
    /// ```
    pub fn edge(&self) -> Option<&Edge> {
        self.extras.as_deref()?.edge.as_ref()
    }

    /// Scopes the call to `session` (an MCP server does it for each MCP session; a
    /// middleware does it for a key of its choosing with [`Sessions`](crate::edge::Sessions)).
    /// A call with no edge gets one named `"local"`.
    #[must_use]
    pub fn with_session(mut self, session: Arc<Session>) -> Self {
        let extras = self.extras_mut();
        let edge = extras.edge.take().unwrap_or_else(|| Edge::new("local"));
        extras.edge = Some(edge.with_session(session));
        self
    }

    /// The session the call belongs to, when it has one (see [`Session`]).
    pub fn session(&self) -> Option<&Arc<Session>> {
        self.edge().and_then(Edge::session)
    }

    /// This request's id.
    pub fn request_id(&self) -> &str {
        self.request_id.as_str()
    }

    /// `read` of the request id's text, without keeping it in the context: a fresh id that
    /// nothing has read yet is written on the stack for `read` alone (no allocation), where
    /// [`request_id`](Self::request_id) writes it once into the context. For an edge that
    /// sends the id once (a response header, say) and reads it no more.
    ///
    /// ```
    /// use opkit::OperationContext;
    /// let ctx = OperationContext::for_request("caller:7");
    /// assert_eq!(ctx.with_request_id_text(str::len), 8);
    /// let fresh = OperationContext::new();
    /// let sent = fresh.with_request_id_text(str::to_owned);
    /// assert_eq!(sent, fresh.request_id());
    /// ```
    pub fn with_request_id_text<R>(&self, read: impl FnOnce(&str) -> R) -> R {
        self.request_id.with_text(read)
    }

    /// The request id as a value that writes its text only when displayed (a fresh id's is
    /// not written out until read): for a span field that nothing may record.
    pub(crate) fn request_id_display(&self) -> &impl std::fmt::Display {
        &self.request_id
    }

    /// The id of the request this one was made from, for nested calls.
    pub fn parent_request_id(&self) -> Option<&str> {
        self.parent_request_id.as_deref()
    }

    /// The caller's identity, when known.
    pub fn identity(&self) -> Option<&Identity> {
        self.identity.as_deref()
    }

    /// The deadline, when the call has one.
    pub fn deadline(&self) -> Option<Deadline> {
        self.deadline
    }

    /// The cancellation token, when the call can be cancelled.
    pub fn cancellation(&self) -> Option<&CancellationToken> {
        self.cancellation.as_ref()
    }

    /// The deadline and cancellation signal of this call, to race work against them (see
    /// [`Bounds`]).
    pub fn bounds(&self) -> Bounds {
        Bounds::new(self.deadline, self.cancellation.clone())
    }

    /// [`bounds`](Self::bounds), the cancellation moved out of the context into them rather
    /// than shared: for a handler that reads nothing from its context (sharing a token costs
    /// a lock to clone and another to drop). The context keeps its deadline.
    pub(crate) fn take_bounds(&mut self) -> Bounds {
        Bounds::new(self.deadline, self.cancellation.take())
    }

    /// `true` once the call was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.cancellation
            .as_ref()
            .is_some_and(CancellationToken::is_cancelled)
    }

    /// Completes when the call is cancelled; never, when it cannot be.
    pub async fn cancelled(&self) {
        match &self.cancellation {
            Some(token) => token.cancelled().await,
            None => std::future::pending().await,
        }
    }

    pub(crate) fn env_backend(&self) -> Option<&Arc<dyn EnvBackend>> {
        self.env.as_ref()
    }

    pub(crate) fn has_env(&self) -> bool {
        self.env.is_some()
    }

    /// The context of a call made from this one (without the reporter: the nested call's
    /// progress is not the caller's). It keeps the trace context: the span the nested call
    /// opens becomes a child of this call's.
    pub fn child(&self) -> Self {
        Self {
            request_id: RequestId::fresh(),
            parent_request_id: Some(self.request_id.shared().clone()),
            identity: self.identity.clone(),
            deadline: self.deadline,
            cancellation: self
                .cancellation
                .as_ref()
                .map(CancellationToken::child_token),
            env: self.env.clone(),
            states: self.states.clone(),
            reporter: None,
            extras: self.extras.clone(),
        }
    }

    /// Adds an application state value of type `T` (replacing one of the same type) for the
    /// calls made with this context: typed calls (`add::call(&ctx, ..)`) read their
    /// [`State<T>`](crate::State) parameters from here, and a registry falls back to these
    /// values for the types it was not given (see [`crate::state`]).
    ///
    /// ```
    /// use opkit::OperationContext;
    /// let ctx = OperationContext::new().with_state(42_u32);
    /// assert_eq!(ctx.state::<u32>().unwrap(), &42);
    /// ```
    #[must_use]
    pub fn with_state<T: Send + Sync + 'static>(mut self, value: T) -> Self {
        let mut states = self.states.as_deref().cloned().unwrap_or_default();
        states.insert(value);
        self.states = Some(Arc::new(states));
        self
    }

    /// The application state of type `T` this call sees (the running registry's, see
    /// [`crate::state`]); an `EXECUTION_ERROR` naming the type when none was provided.
    ///
    /// What a dynamic handler uses where an `#[operation]` fn takes a
    /// [`State<T>`](crate::State) parameter:
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use opkit::{Handler, OperationContext, OperationKind, OperationRegistry, OperationSpec};
    /// use serde_json::json;
    ///
    /// struct Prefix(&'static str);
    ///
    /// let registry = OperationRegistry::new().with_state(Prefix("id-"));
    /// registry.register(
    ///     OperationSpec::new("ids", "make", OperationKind::Query).requires_state::<Prefix>(),
    ///     Handler::unary(|_input, ctx| async move {
    ///         let prefix = ctx.state::<Prefix>()?;
    ///         Ok(json!(format!("{}7", prefix.0)))
    ///     }),
    /// ).unwrap();
    /// let envelope = registry.execute("ids.make", json!({}), &OperationContext::new()).await.unwrap();
    /// assert_eq!(envelope.data, "id-7");
    /// # });
    /// ```
    pub fn state<T: Send + Sync + 'static>(&self) -> Result<&T, CallError> {
        self.state_opt::<T>()
            .ok_or_else(|| crate::state::missing_state(None, std::any::type_name::<T>()))
    }

    /// The application state of type `T`, when one was provided.
    pub fn state_opt<T: Send + Sync + 'static>(&self) -> Option<&T> {
        self.states.as_deref().and_then(StateMap::get::<T>)
    }

    /// This context with a registry's state over its own (see [`crate::state`]).
    pub(crate) fn with_registry_states(mut self, registry: &Arc<StateMap>) -> Self {
        self.states = Some(match self.states.take() {
            None => registry.clone(),
            Some(own) if Arc::ptr_eq(&own, registry) || own.is_empty() => registry.clone(),
            Some(own) => Arc::new(StateMap::layered(registry, &own)),
        });
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace_context::TraceContext;

    #[test]
    fn a_context_fits_in_128_bytes() {
        assert!(std::mem::size_of::<super::OperationContext>() <= 128);
    }

    fn extras(ctx: &OperationContext) -> &Arc<Extras> {
        ctx.extras.as_ref().expect("extras")
    }

    #[test]
    fn contexts_on_a_bare_edge_of_opkit_share_their_extras_until_one_changes_them() {
        let one = OperationContext::new().with_edge(Edge::new(Edge::HTTP));
        let two = OperationContext::new().with_edge(Edge::new(Edge::HTTP));
        assert!(Arc::ptr_eq(extras(&one), extras(&two)));
        let mcp = OperationContext::new().with_edge(Edge::new(Edge::MCP));
        assert!(!Arc::ptr_eq(extras(&one), extras(&mcp)));
        assert_eq!(mcp.edge().map(Edge::name), Some(Edge::MCP));

        // A change copies them: the other context keeps its own.
        let trace = TraceContext::parse(
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            None,
        )
        .expect("a traceparent");
        let traced = two.with_trace(trace.clone());
        assert_eq!(traced.trace(), Some(&trace));
        assert_eq!(traced.edge().map(Edge::name), Some(Edge::HTTP));
        assert!(!Arc::ptr_eq(extras(&one), extras(&traced)));
        assert_eq!(one.trace(), None);

        // A context that had extras keeps them, with the edge set in place.
        let first_traced = OperationContext::new()
            .with_trace(trace.clone())
            .with_edge(Edge::new(Edge::CALL_PROTOCOL));
        assert_eq!(first_traced.trace(), Some(&trace));
        assert_eq!(
            first_traced.edge().map(Edge::name),
            Some(Edge::CALL_PROTOCOL)
        );
    }

    #[test]
    fn an_edge_with_a_fact_or_of_the_applications_own_is_not_shared() {
        let with_fact =
            |n: u32| OperationContext::new().with_edge(Edge::new(Edge::HTTP).with_fact(n));
        let (one, two) = (with_fact(1), with_fact(2));
        assert!(!Arc::ptr_eq(extras(&one), extras(&two)));
        assert_eq!(two.edge().and_then(Edge::fact::<u32>), Some(&2));
        let own = |_| OperationContext::new().with_edge(Edge::new("unix"));
        let (one, two) = (own(1), own(2));
        assert!(!Arc::ptr_eq(extras(&one), extras(&two)));
        assert_eq!(one.edge().map(Edge::name), Some("unix"));
    }
}
