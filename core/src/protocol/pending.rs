//! `PendingRequestMap`: the caller's side of the call protocol.

use super::pubsub::{PubSub, Subscription, TransportError};
use super::topics;
use super::wire::{CallEvent, CallRequested};
use crate::bounds::{Deadline, Interrupted, Watch};
use crate::context::OperationContext;
use crate::context::{EnvBackend, EnvelopeStream};
use crate::env::OperationEnv;
use crate::envelope::ResponseEnvelope;
use crate::error::{CallError, ErrorCode};
use crate::limits::DEFAULT_MAX_PENDING;
use crate::trace::{CallSpan, SpanKind};
use futures::future::BoxFuture;
use futures::{FutureExt, Stream, StreamExt};
use parking_lot::Mutex;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tokio::time::{Instant, Sleep};
use tracing::Instrument;

/// How long a call may take when its context has no deadline.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// Settings of a [`PendingRequestMap`].
///
/// ```
/// use opkit::protocol::PendingOptions;
/// use std::time::Duration;
/// let options = PendingOptions::default()
///     .with_default_timeout(Duration::from_secs(5))
///     .with_subscription_idle_timeout(None)
///     .with_caller_id("billing-1")
///     .with_max_pending(1_000);
/// assert_eq!(options.default_timeout(), Duration::from_secs(5));
/// assert_eq!(options.max_pending(), 1_000);
/// ```
#[derive(Debug, Clone)]
pub struct PendingOptions {
    default_timeout: Duration,
    subscription_idle_timeout: Option<Duration>,
    caller_id: Option<String>,
    max_pending: usize,
}

impl Default for PendingOptions {
    fn default() -> Self {
        Self {
            default_timeout: DEFAULT_TIMEOUT,
            subscription_idle_timeout: Some(DEFAULT_TIMEOUT),
            caller_id: None,
            max_pending: DEFAULT_MAX_PENDING,
        }
    }
}

impl PendingOptions {
    /// How long a query or mutation may take when its context has no deadline
    /// ([`DEFAULT_TIMEOUT`] unless set). The resulting deadline is also sent on the wire, so
    /// the handler stops at the same time.
    #[must_use]
    pub fn with_default_timeout(mut self, timeout: Duration) -> Self {
        self.default_timeout = timeout;
        self
    }

    /// For subscriptions whose context has no deadline: the longest wait for the next event
    /// before the stream ends with `TIMEOUT` (so a handler that died cannot leave the caller
    /// waiting forever). `None` waits forever; the default is [`DEFAULT_TIMEOUT`].
    #[must_use]
    pub fn with_subscription_idle_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.subscription_idle_timeout = timeout;
        self
    }

    /// The caller id request ids are minted from (a random one unless set).
    ///
    /// # Panics
    ///
    /// When `caller_id` is not 1 to 128 characters of `[A-Za-z0-9_-]`
    /// (see [`topics::is_valid_caller_id`]).
    #[must_use]
    pub fn with_caller_id(mut self, caller_id: impl Into<String>) -> Self {
        let caller_id = caller_id.into();
        assert!(
            topics::is_valid_caller_id(&caller_id),
            "invalid caller id {caller_id:?}: use 1 to {} characters of [A-Za-z0-9_-]",
            topics::MAX_CALLER_ID_LEN
        );
        self.caller_id = Some(caller_id);
        self
    }

    /// How many calls and subscriptions may wait for replies at once ([`DEFAULT_MAX_PENDING`]
    /// unless set). A call or subscription started while that many are pending fails at once
    /// with `TRANSPORT_ERROR` (the request is not published); the pending ones are
    /// unaffected. `0` refuses every call.
    #[must_use]
    pub fn with_max_pending(mut self, max_pending: usize) -> Self {
        self.max_pending = max_pending;
        self
    }

    /// The default timeout of queries and mutations.
    pub fn default_timeout(&self) -> Duration {
        self.default_timeout
    }

    /// The most calls and subscriptions that may wait for replies at once.
    pub fn max_pending(&self) -> usize {
        self.max_pending
    }

    /// The idle timeout of subscriptions without a deadline.
    pub fn subscription_idle_timeout(&self) -> Option<Duration> {
        self.subscription_idle_timeout
    }
}

/// The caller's side of the call protocol: publishes `call.requested`, routes the replies
/// that arrive on this caller's reply topic to the waiting calls and subscriptions.
///
/// Every call ends in exactly one outcome (see the [module docs](super) for the guarantees),
/// and its entry is removed on every path. Cloning is cheap; clones share the map. Implements
/// [`EnvBackend`], so [`OperationEnv::remote`](crate::OperationEnv::remote) offers remote
/// operations through the same interface as a local registry.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use opkit::prelude::*;
/// use opkit::protocol::{CallHandler, MemoryPubSub, PendingRequestMap};
/// use serde_json::json;
/// use std::sync::Arc;
///
/// let registry = OperationRegistry::new();
/// registry.register(
///     OperationSpec::new("math", "double", OperationKind::Query),
///     Handler::unary(|input, _ctx| async move { Ok(json!(input["n"].as_i64().unwrap_or(0) * 2)) }),
/// ).unwrap();
/// let bus = Arc::new(MemoryPubSub::new());
/// let _handler = CallHandler::new(registry, bus.clone()).spawn().await.unwrap();
///
/// let map = PendingRequestMap::connect(bus).await.unwrap();
/// let envelope = map.call("math.double", json!({"n": 21}), &OperationContext::default()).await.unwrap();
/// assert_eq!(envelope.data, json!(42));
/// let missing = map.call("math.nope", json!({}), &OperationContext::default()).await.unwrap_err();
/// assert_eq!(missing.code, ErrorCode::OperationNotFound);
/// assert_eq!(map.pending_count(), 0);
/// # });
/// ```
#[derive(Clone)]
pub struct PendingRequestMap {
    inner: Arc<MapInner>,
}

struct MapInner {
    pubsub: Arc<dyn PubSub>,
    caller_id: String,
    reply_topic: String,
    next_seq: AtomicU64,
    table: Arc<Table>,
    default_timeout: Duration,
    idle_timeout: Option<Duration>,
    runtime: tokio::runtime::Handle,
    listener: tokio::task::AbortHandle,
}

impl Drop for MapInner {
    fn drop(&mut self) {
        self.listener.abort();
        self.table
            .close(CallError::transport("the PendingRequestMap was dropped"));
    }
}

impl fmt::Debug for PendingRequestMap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PendingRequestMap")
            .field("caller_id", &self.inner.caller_id)
            .field("pending", &self.pending_count())
            .finish()
    }
}

impl PendingRequestMap {
    /// Subscribes to a fresh reply topic on `pubsub` and starts routing replies.
    ///
    /// Must run inside a tokio runtime (the reply listener is a task on it).
    pub async fn connect(pubsub: Arc<dyn PubSub>) -> Result<Self, TransportError> {
        Self::connect_with(pubsub, PendingOptions::default()).await
    }

    /// [`connect`](Self::connect) with settings.
    pub async fn connect_with(
        pubsub: Arc<dyn PubSub>,
        options: PendingOptions,
    ) -> Result<Self, TransportError> {
        let caller_id = options.caller_id.unwrap_or_else(topics::new_caller_id);
        let reply_topic = topics::reply_topic(&caller_id);
        let replies = pubsub.subscribe(&reply_topic).await?;
        let table = Arc::new(Table::new(format!("{caller_id}:"), options.max_pending));
        let listener = tokio::spawn(listen(table.clone(), replies)).abort_handle();
        Ok(Self {
            inner: Arc::new(MapInner {
                pubsub,
                caller_id,
                reply_topic,
                next_seq: AtomicU64::new(1),
                table,
                default_timeout: options.default_timeout,
                idle_timeout: options.subscription_idle_timeout,
                runtime: tokio::runtime::Handle::current(),
                listener,
            }),
        })
    }

    /// Calls a query or mutation and waits for its envelope or its error.
    ///
    /// `ctx` is the context of this call: its identity, deadline (or the default timeout) and
    /// parent request id travel on the wire, and cancelling it aborts the call. The protocol
    /// request id is minted here (`<callerId>:<n>`), not taken from `ctx`. Dropping the future
    /// before it resolves publishes `call.aborted`.
    ///
    /// Nothing is published, and the call fails at once, when the input nests deeper than
    /// [`MAX_INPUT_DEPTH`](crate::limits::MAX_INPUT_DEPTH) (`VALIDATION_ERROR`) or when
    /// [`max_pending`](PendingOptions::with_max_pending) requests are already waiting
    /// (`TRANSPORT_ERROR`). The same holds for [`subscribe`](Self::subscribe).
    pub async fn call(
        &self,
        id: &str,
        input: Value,
        ctx: &OperationContext,
    ) -> Result<ResponseEnvelope, CallError> {
        call(self.inner.clone(), id.to_owned(), input, ctx.clone()).await
    }

    /// Starts a subscription: resolves once the request is published (errors of the handler,
    /// including `OPERATION_NOT_FOUND`, `ACCESS_DENIED` and `VALIDATION_ERROR`, arrive as the
    /// stream's one and last item). The stream yields one envelope per `call.responded` and
    /// ends after `call.completed`, after an error item, or with `TIMEOUT` / `ABORTED` items.
    /// Dropping it before it ends publishes `call.aborted`.
    pub async fn subscribe(
        &self,
        id: &str,
        input: Value,
        ctx: &OperationContext,
    ) -> Result<EnvelopeStream, CallError> {
        subscribe(self.inner.clone(), id.to_owned(), input, ctx.clone()).await
    }

    /// The inbound half: delivers `output` to the pending request `request_id` (the reply
    /// listener calls it for every `call.responded`).
    ///
    /// Refuses (with a `VALIDATION_ERROR` naming what is wrong) any `output` that
    /// [`is_response_envelope`](crate::envelope::is_response_envelope) rejects. Returns
    /// `Ok(false)` when no such request is pending here (it finished, timed out, was aborted,
    /// or belongs to another caller): late and duplicate replies are expected and ignored.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use opkit::protocol::{MemoryPubSub, PendingRequestMap};
    /// let map = PendingRequestMap::connect(std::sync::Arc::new(MemoryPubSub::new())).await.unwrap();
    /// let refused = map.respond("x:1", serde_json::json!({"data": 1})).unwrap_err();
    /// assert_eq!(refused.code, opkit::ErrorCode::ValidationError);
    /// assert!(refused.message.contains("must have a `meta` key"));
    /// # });
    /// ```
    pub fn respond(&self, request_id: &str, output: Value) -> Result<bool, CallError> {
        self.inner.table.respond(request_id, output)
    }

    /// How many calls and subscriptions are waiting for replies.
    pub fn pending_count(&self) -> usize {
        self.inner.table.len()
    }

    /// This caller's id: the prefix of every request id it mints.
    pub fn caller_id(&self) -> &str {
        &self.inner.caller_id
    }

    /// The topic this caller receives its replies on (`opkit.reply.<callerId>`).
    pub fn reply_topic(&self) -> &str {
        &self.inner.reply_topic
    }

    /// The timeout of calls whose context has no deadline.
    pub fn default_timeout(&self) -> Duration {
        self.inner.default_timeout
    }
}

impl OperationEnv {
    /// An env over the call protocol: calls go out through `map` and are served by whichever
    /// [`CallHandler`](crate::protocol::CallHandler) serves the operation (access-checked there).
    pub fn remote(map: PendingRequestMap) -> Self {
        Self::new(Arc::new(map))
    }
}

impl EnvBackend for PendingRequestMap {
    fn call(
        &self,
        id: &str,
        input: Value,
        ctx: OperationContext,
    ) -> BoxFuture<'static, Result<ResponseEnvelope, CallError>> {
        call(self.inner.clone(), id.to_owned(), input, ctx).boxed()
    }

    fn subscribe(
        &self,
        id: &str,
        input: Value,
        ctx: OperationContext,
    ) -> BoxFuture<'static, Result<EnvelopeStream, CallError>> {
        subscribe(self.inner.clone(), id.to_owned(), input, ctx).boxed()
    }
}

// ---------------------------------------------------------------------------------------------
// The table of pending requests.

/// What a subscription's stream receives from the listener.
enum StreamEvent {
    Item(ResponseEnvelope),
    /// `None`: `call.completed`; `Some`: `call.error` (or the map closed).
    End(Option<CallError>),
}

enum Entry {
    Call(oneshot::Sender<Result<ResponseEnvelope, CallError>>),
    Stream(mpsc::UnboundedSender<StreamEvent>),
}

impl Entry {
    fn fail(self, error: CallError) {
        // A receiver that is gone was dropped by its call: nothing to tell.
        match self {
            Self::Call(sender) => drop(sender.send(Err(error))),
            Self::Stream(sender) => drop(sender.send(StreamEvent::End(Some(error)))),
        }
    }
}

struct TableState {
    entries: HashMap<u64, Entry, foldhash::fast::RandomState>,
    /// Set once the reply subscription is gone: new calls fail with this error.
    closed: Option<CallError>,
}

struct Table {
    /// `<callerId>:`: request ids of this caller start with it.
    prefix: String,
    /// The most entries the table holds.
    max_entries: usize,
    state: Mutex<TableState>,
}

impl Table {
    fn new(prefix: String, max_entries: usize) -> Self {
        Self {
            prefix,
            max_entries,
            state: Mutex::new(TableState {
                entries: HashMap::default(),
                closed: None,
            }),
        }
    }

    fn seq_of(&self, request_id: &str) -> Option<u64> {
        request_id.strip_prefix(&self.prefix)?.parse().ok()
    }

    fn len(&self) -> usize {
        self.state.lock().entries.len()
    }

    fn insert(&self, seq: u64, entry: Entry) -> Result<(), CallError> {
        let mut state = self.state.lock();
        if let Some(error) = &state.closed {
            return Err(error.clone());
        }
        if state.entries.len() >= self.max_entries {
            return Err(too_many_pending(self.max_entries));
        }
        state.entries.insert(seq, entry);
        Ok(())
    }

    fn remove(&self, seq: u64) -> Option<Entry> {
        self.state.lock().entries.remove(&seq)
    }

    /// Acts on a decoded event of the reply topic.
    fn handle(&self, event: CallEvent) {
        match event {
            CallEvent::Responded(event) => {
                self.deliver(&event.request_id, event.output);
            }
            CallEvent::Completed(event) => {
                self.complete(&event.request_id);
            }
            CallEvent::Error(event) => {
                let request_id = event.request_id.clone();
                self.fail(&request_id, event.into_error());
            }
            other => {
                tracing::debug!(
                    event = other.type_name(),
                    "ignoring an event on a reply topic"
                );
            }
        }
    }

    fn respond(&self, request_id: &str, output: Value) -> Result<bool, CallError> {
        let envelope = ResponseEnvelope::from_value(output).map_err(|error| {
            CallError::new(
                ErrorCode::ValidationError,
                format!(
                    "refused the output for request `{request_id}`: it is not a ResponseEnvelope ({error})"
                ),
            )
            .with_details(json!({"requestId": request_id}))
        })?;
        Ok(self.deliver(request_id, envelope))
    }

    /// Hands a decoded result to the call or subscription waiting for it; `false` when none is.
    fn deliver(&self, request_id: &str, envelope: ResponseEnvelope) -> bool {
        let Some(seq) = self.seq_of(request_id) else {
            return false;
        };
        let mut state = self.state.lock();
        match state.entries.get(&seq) {
            None => false,
            Some(Entry::Stream(sender)) => {
                // An error means the stream is being dropped; its guard removes the entry.
                sender.send(StreamEvent::Item(envelope)).is_ok()
            }
            Some(Entry::Call(_)) => {
                let Some(Entry::Call(sender)) = state.entries.remove(&seq) else {
                    unreachable!("the entry was just seen")
                };
                drop(state);
                sender.send(Ok(envelope)).is_ok()
            }
        }
    }

    /// Ends a pending request with `error`.
    fn fail(&self, request_id: &str, error: CallError) -> bool {
        let entry = self.seq_of(request_id).and_then(|seq| self.remove(seq));
        entry.map(|entry| entry.fail(error)).is_some()
    }

    fn complete(&self, request_id: &str) -> bool {
        let Some(entry) = self.seq_of(request_id).and_then(|seq| self.remove(seq)) else {
            return false;
        };
        match entry {
            Entry::Stream(sender) => drop(sender.send(StreamEvent::End(None))),
            call @ Entry::Call(_) => call.fail(CallError::transport(format!(
                "request `{request_id}` got `call.completed` but it is a query or mutation: the handler sent no result"
            ))),
        }
        true
    }

    /// Fails every pending request and refuses new ones.
    fn close(&self, error: CallError) {
        let entries = {
            let mut state = self.state.lock();
            state.closed.get_or_insert(error.clone());
            std::mem::take(&mut state.entries)
        };
        for entry in entries.into_values() {
            entry.fail(error.clone());
        }
    }

    /// Routes one message of the reply topic.
    fn route(&self, payload: &[u8]) {
        // What the fast path declines takes the slow path, which names what is wrong.
        if let Some(event) = super::fast_decode::decode_fast(payload) {
            self.handle(event);
            return;
        }
        let fields = match serde_json::from_slice(payload) {
            Ok(Value::Object(fields)) => fields,
            Ok(_) => {
                tracing::warn!("ignoring a reply that is not a JSON object");
                return;
            }
            Err(error) => {
                tracing::warn!(%error, "a reply that is not JSON arrived");
                if let Some((_, request_id)) = CallEvent::peek_ids(payload) {
                    let error = CallError::new(
                        ErrorCode::ValidationError,
                        format!(
                            "the reply for request `{request_id}` could not be decoded: {error}"
                        ),
                    );
                    self.fail(&request_id, error);
                }
                return;
            }
        };
        let request_id = match fields.get("requestId") {
            Some(Value::String(request_id)) => Some(request_id.clone()),
            _ => None,
        };
        if let (Some(request_id), Some("call.responded")) =
            (&request_id, fields.get("type").and_then(Value::as_str))
        {
            let mut fields = fields;
            let result = match fields.remove("output") {
                Some(output) => self.respond(request_id, output),
                None => Err(CallError::new(
                    ErrorCode::ValidationError,
                    format!("call.responded for request `{request_id}` has no `output`"),
                )),
            };
            if let Err(error) = result {
                tracing::warn!(%error, "a handler answered with something that is not an envelope");
                self.fail(request_id, error);
            }
            return;
        }
        match CallEvent::from_value(Value::Object(fields)) {
            Ok(event) => self.handle(event),
            Err(error) => {
                tracing::warn!(%error, "a malformed event arrived on a reply topic");
                if let Some(request_id) = request_id {
                    self.fail(
                        &request_id,
                        CallError::new(
                            ErrorCode::ValidationError,
                            format!(
                                "a malformed reply arrived for request `{request_id}`: {error}"
                            ),
                        ),
                    );
                }
            }
        }
    }
}

async fn listen(table: Arc<Table>, mut replies: Subscription) {
    while let Some(payload) = replies.next().await {
        table.route(&payload);
    }
    table.close(CallError::transport(
        "the reply subscription ended: the transport lost it",
    ));
}

// ---------------------------------------------------------------------------------------------
// Calls and subscriptions.

/// Removes its entry when dropped, and publishes `call.aborted` when the entry was still
/// pending (the caller gave up: dropped, timed out or cancelled).
struct PendingGuard {
    inner: Arc<MapInner>,
    seq: u64,
    request_id: Arc<str>,
    operation_id: Arc<str>,
    publish_abort: bool,
}

impl Drop for PendingGuard {
    fn drop(&mut self) {
        if self.inner.table.remove(self.seq).is_some() && self.publish_abort {
            let pubsub = self.inner.pubsub.clone();
            let topic = topics::abort_topic(&self.operation_id);
            let Ok(payload) = CallEvent::aborted(&*self.request_id).to_bytes() else {
                return;
            };
            let request_id = self.request_id.clone();
            self.inner.runtime.spawn(async move {
                if let Err(error) = pubsub.publish(&topic, payload).await {
                    tracing::warn!(%error, request_id = %request_id, "could not publish call.aborted");
                }
            });
        }
    }
}

impl MapInner {
    /// Registers a new request and returns its guard.
    fn register(
        self: &Arc<Self>,
        operation_id: &str,
        entry: Entry,
    ) -> Result<PendingGuard, CallError> {
        let seq = self.next_seq.fetch_add(1, Ordering::Relaxed);
        self.table.insert(seq, entry)?;
        Ok(PendingGuard {
            inner: self.clone(),
            seq,
            request_id: request_id(&self.caller_id, seq),
            operation_id: Arc::from(operation_id),
            publish_abort: true,
        })
    }

    /// Publishes `call.requested`; `OPERATION_NOT_FOUND` when the transport knows nobody
    /// serves the operation.
    async fn publish_request(
        &self,
        guard: &mut PendingGuard,
        input: Value,
        ctx: &OperationContext,
        deadline: Option<Deadline>,
    ) -> Result<(), CallError> {
        let event = CallEvent::Requested(
            CallRequested {
                request_id: guard.request_id.to_string(),
                operation_id: guard.operation_id.to_string(),
                input,
                parent_request_id: ctx.parent_request_id().map(str::to_owned),
                identity: ctx.identity().cloned(),
                deadline: deadline.map(Deadline::epoch_millis),
                traceparent: None,
                tracestate: None,
            }
            .with_trace_context(ctx.trace()),
        );
        let payload = event
            .to_bytes()
            .inspect_err(|_| guard.publish_abort = false)?;
        let topic = topics::request_topic(&guard.operation_id);
        match self.pubsub.publish(&topic, payload).await {
            Ok(receipt) if receipt.reached_nobody() => {
                guard.publish_abort = false;
                Err(CallError::new(
                    ErrorCode::OperationNotFound,
                    format!(
                        "no call handler serves `{}` on this bus (nobody listens on `{topic}`)",
                        guard.operation_id
                    ),
                ))
            }
            Ok(_) => Ok(()),
            Err(error) => {
                guard.publish_abort = false;
                Err(CallError::transport(format!(
                    "could not publish the request for `{}`: {}",
                    guard.operation_id,
                    error.message()
                )))
            }
        }
    }
}

/// `TRANSPORT_ERROR` for a call refused because `max` requests are already pending.
fn too_many_pending(max: usize) -> CallError {
    CallError::transport(format!(
        "{max} calls and subscriptions are already waiting for replies on this PendingRequestMap (the max_pending limit, PendingOptions::with_max_pending): the call was not sent"
    ))
    .with_details(json!({"limit": "maxPending", "max": max}))
}

fn timed_out(operation_id: &str) -> CallError {
    CallError::timeout(format!(
        "`{operation_id}` did not answer before the call's deadline"
    ))
}

fn aborted(operation_id: &str) -> CallError {
    CallError::aborted(format!("the call to `{operation_id}` was cancelled"))
}

/// The error for a call its [`Bounds`](crate::Bounds) stopped.
fn stopped(operation_id: &str, stop: Interrupted) -> CallError {
    match stop {
        Interrupted::Cancelled => aborted(operation_id),
        Interrupted::TimedOut => timed_out(operation_id),
    }
}

async fn call(
    inner: Arc<MapInner>,
    operation_id: String,
    input: Value,
    ctx: OperationContext,
) -> Result<ResponseEnvelope, CallError> {
    let mut span = CallSpan::start(SpanKind::Client, "pending", &operation_id, &ctx);
    let ctx = span.apply(ctx);
    let calling = call_in(inner, operation_id, input, ctx, &span);
    let result = if span.is_active() {
        calling.instrument(span.span().clone()).await
    } else {
        calling.await
    };
    span.finish_with(&result);
    result
}

async fn call_in(
    inner: Arc<MapInner>,
    operation_id: String,
    input: Value,
    ctx: OperationContext,
    span: &CallSpan,
) -> Result<ResponseEnvelope, CallError> {
    let input = crate::limits::admit_input(input)?;
    let bounds = ctx
        .bounds()
        .or_deadline(Deadline::after(inner.default_timeout));
    bounds
        .check()
        .map_err(|stop| stopped(&operation_id, stop))?;
    let (sender, receiver) = oneshot::channel();
    let mut guard = inner.register(&operation_id, Entry::Call(sender))?;
    span.record_request_id(&guard.request_id);
    inner
        .publish_request(&mut guard, input, &ctx, bounds.deadline())
        .await?;
    // When stopped, dropping the guard removes the entry and publishes `call.aborted`.
    let reply = bounds
        .run(receiver)
        .await
        .map_err(|stop| stopped(&operation_id, stop))?;
    reply.unwrap_or_else(|_| {
        Err(CallError::transport(
            "the PendingRequestMap closed before the reply arrived",
        ))
    })
}

async fn subscribe(
    inner: Arc<MapInner>,
    operation_id: String,
    input: Value,
    ctx: OperationContext,
) -> Result<EnvelopeStream, CallError> {
    let span = CallSpan::start(SpanKind::Client, "pending", &operation_id, &ctx);
    let ctx = span.apply(ctx);
    let entered = span.span().clone();
    let mut span = Some(span);
    let starting = subscribe_in(inner, operation_id, input, ctx, &mut span);
    let result = if entered.is_disabled() {
        starting.await
    } else {
        starting.instrument(entered).await
    };
    if let (Err(error), Some(span)) = (&result, span.as_mut()) {
        span.finish(Err(error));
    }
    result
}

async fn subscribe_in(
    inner: Arc<MapInner>,
    operation_id: String,
    input: Value,
    ctx: OperationContext,
    span: &mut Option<CallSpan>,
) -> Result<EnvelopeStream, CallError> {
    let input = crate::limits::admit_input(input)?;
    let bounds = ctx.bounds();
    bounds
        .check()
        .map_err(|stop| stopped(&operation_id, stop))?;
    let deadline = bounds.deadline();
    let (sender, receiver) = mpsc::unbounded_channel();
    let mut guard = inner.register(&operation_id, Entry::Stream(sender))?;
    if let Some(span) = span {
        span.record_request_id(&guard.request_id);
    }
    inner
        .publish_request(&mut guard, input, &ctx, deadline)
        .await?;
    let idle = match deadline {
        Some(_) => None,
        None => inner
            .idle_timeout
            .map(|idle| (idle, Box::pin(tokio::time::sleep(idle)))),
    };
    Ok(Box::pin(RemoteStream {
        events: receiver,
        guard: Some(guard),
        watch: bounds.watch(),
        idle,
        span: span.take(),
    }))
}

/// A remote subscription's envelopes. Dropping it while the subscription runs publishes
/// `call.aborted` (through its guard).
struct RemoteStream {
    events: mpsc::UnboundedReceiver<StreamEvent>,
    /// `None` once the stream has ended.
    guard: Option<PendingGuard>,
    /// The call's deadline and cancellation, polled before the events on every wake-up.
    watch: Watch,
    /// Without a deadline: the longest wait for the next event, and its timer.
    idle: Option<(Duration, Pin<Box<Sleep>>)>,
    /// The subscription's client span, open until the stream ends or is dropped.
    span: Option<CallSpan>,
}

impl RemoteStream {
    /// Ends the stream; the guard removes the entry and, if still pending, aborts the request.
    fn end(
        &mut self,
        item: Option<Result<ResponseEnvelope, CallError>>,
    ) -> Poll<Option<<Self as Stream>::Item>> {
        self.guard = None;
        if let Some(mut span) = self.span.take() {
            match &item {
                Some(Err(error)) => span.finish(Err(error)),
                _ => span.finish(Ok(())),
            }
        }
        Poll::Ready(item)
    }
}

impl Stream for RemoteStream {
    type Item = Result<ResponseEnvelope, CallError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        let Some(guard) = &this.guard else {
            return Poll::Ready(None);
        };
        let operation_id = guard.operation_id.clone();
        if let Poll::Ready(stop) = this.watch.poll_interrupted(cx) {
            return this.end(Some(Err(stopped(&operation_id, stop))));
        }
        match this.events.poll_recv(cx) {
            Poll::Ready(Some(StreamEvent::Item(envelope))) => {
                if let Some((idle, sleep)) = this.idle.as_mut() {
                    sleep.as_mut().reset(Instant::now() + *idle);
                }
                return Poll::Ready(Some(Ok(envelope)));
            }
            Poll::Ready(Some(StreamEvent::End(None))) => return this.end(None),
            Poll::Ready(Some(StreamEvent::End(Some(error)))) => return this.end(Some(Err(error))),
            Poll::Ready(None) => {
                return this.end(Some(Err(CallError::transport(
                    "the PendingRequestMap closed before the subscription ended",
                ))));
            }
            Poll::Pending => {}
        }
        if let Some((idle, sleep)) = this.idle.as_mut()
            && sleep.as_mut().poll(cx).is_ready()
        {
            let error = CallError::timeout(format!(
                "`{operation_id}` sent nothing for {idle:?} (the subscription idle timeout)"
            ));
            return this.end(Some(Err(error)));
        }
        Poll::Pending
    }
}

/// `<callerId>:<seq>`, written without the formatting machinery (once per call).
fn request_id(caller_id: &str, seq: u64) -> Arc<str> {
    let mut digits = [0u8; 20];
    let mut start = digits.len();
    let mut rest = seq;
    loop {
        start -= 1;
        digits[start] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    let mut id = String::with_capacity(caller_id.len() + 1 + digits.len() - start);
    id.push_str(caller_id);
    id.push(':');
    id.extend(digits[start..].iter().map(|&digit| char::from(digit)));
    Arc::from(id)
}

#[cfg(test)]
mod request_id_tests {
    #[test]
    fn request_ids_are_caller_colon_sequence() {
        assert_eq!(&*super::request_id("c", 0), "c:0");
        assert_eq!(&*super::request_id("abc", 907), "abc:907");
        assert_eq!(
            &*super::request_id("x", u64::MAX),
            format!("x:{}", u64::MAX).as_str()
        );
    }
}
