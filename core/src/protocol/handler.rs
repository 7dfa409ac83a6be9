//! `CallHandler`: the serving side of the call protocol.

use super::pubsub::{PubSub, Receipt, Subscription, TransportError};
use super::topics;
use super::wire::{CallEvent, CallRequested, WireError};
use crate::bounds::Deadline;
use crate::context::EnvBackend;
use crate::context::OperationContext;
use crate::error::CallError;
use crate::registry::OperationRegistry;
use crate::spec::OperationKind;
use crate::trace::{CallSpan, SpanKind};
use bytes::Bytes;
use futures::StreamExt;
use parking_lot::Mutex;
use serde_json::Value;
use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};
use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll, Waker};
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

/// How often a serving [`CallHandler`] looks for operations registered or removed since.
pub const DEFAULT_REFRESH_INTERVAL: Duration = Duration::from_secs(1);

/// How many `call.aborted` events for requests not (yet) seen a handler remembers.
const TOMBSTONES: usize = 4096;

/// Serves the operations of a registry on a bus: the only publisher of `call.responded`.
///
/// For every request it receives it: looks the operation up (`OPERATION_NOT_FOUND`), checks
/// the access rule against the request's identity (`ACCESS_DENIED`: the handler never runs),
/// then dispatches on the kind through [`OperationRegistry::execute`] or
/// [`OperationRegistry::subscribe`] — which validate the input (`VALIDATION_ERROR`), run the
/// handler (a panic is `EXECUTION_ERROR`), enforce the request's deadline (`TIMEOUT`) and
/// finish every result in the shared pipeline. A query or mutation is answered with one
/// `call.responded` (an envelope with `meta.isError: true` included) or one `call.error`; a
/// subscription with one `call.responded` per item, then `call.completed`, or `call.error`
/// when an item fails. `call.aborted` cancels the request: its future or stream is dropped
/// and nothing more is published for it.
///
/// Each request runs in its own tokio task. Nested calls made by handlers (`ctx.env()`) go to
/// the local registry — the trusted path, without access checks — unless
/// [`with_env`](Self::with_env) sends them elsewhere (for example through a
/// [`PendingRequestMap`](super::PendingRequestMap) on the same bus).
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
///     OperationSpec::new("users", "delete", OperationKind::Mutation)
///         .access(AccessRule::scopes(["users:write"])),
///     Handler::unary(|_input, _ctx| async move { Ok(json!("deleted")) }),
/// ).unwrap();
/// let bus = Arc::new(MemoryPubSub::new());
/// let handle = CallHandler::new(registry, bus.clone()).spawn().await.unwrap();
/// assert_eq!(handle.operations(), ["users.delete"]);
///
/// let map = PendingRequestMap::connect(bus).await.unwrap();
/// let anonymous = OperationContext::default();
/// let denied = map.call("users.delete", json!({}), &anonymous).await.unwrap_err();
/// assert_eq!(denied.code, ErrorCode::AccessDenied);
/// let admin = OperationContext::default().with_identity(Identity::new("ann").with_scopes(["users:write"]));
/// assert_eq!(map.call("users.delete", json!({}), &admin).await.unwrap().data, json!("deleted"));
/// # });
/// ```
pub struct CallHandler {
    registry: OperationRegistry,
    pubsub: Arc<dyn PubSub>,
    env: Option<Arc<dyn EnvBackend>>,
    refresh_interval: Option<Duration>,
    query_redelivery: bool,
}

impl fmt::Debug for CallHandler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallHandler")
            .field("registry", &self.registry)
            .field("has_env", &self.env.is_some())
            .field("refresh_interval", &self.refresh_interval)
            .field("query_redelivery", &self.query_redelivery)
            .finish()
    }
}

impl CallHandler {
    /// A handler serving `registry` on `pubsub`; nothing happens until [`spawn`](Self::spawn).
    pub fn new(registry: OperationRegistry, pubsub: Arc<dyn PubSub>) -> Self {
        Self {
            registry,
            pubsub,
            env: None,
            refresh_interval: Some(DEFAULT_REFRESH_INTERVAL),
            query_redelivery: true,
        }
    }

    /// Where nested calls of the served handlers go (`ctx.env()`); the local registry unless set.
    #[must_use]
    pub fn with_env(mut self, env: Arc<dyn EnvBackend>) -> Self {
        self.env = Some(env);
        self
    }

    /// How often to pick up operations registered or removed after `spawn`
    /// ([`DEFAULT_REFRESH_INTERVAL`] unless set); `None` only refreshes on
    /// [`CallHandlerHandle::refresh`].
    #[must_use]
    pub fn with_refresh_interval(mut self, interval: Option<Duration>) -> Self {
        self.refresh_interval = interval;
        self
    }

    /// Whether the request topics of `Query` operations are joined with
    /// [`PubSub::subscribe_group_idempotent`] (on unless set): on a transport that supports
    /// it, a query taken by a replica that dies is handed to another replica and answered
    /// before the caller's deadline, at the price of running twice when the first replica was
    /// only stalled. Mutations and subscriptions are always joined with
    /// [`PubSub::subscribe_group`] (at most once), whatever this says.
    #[must_use]
    pub fn with_query_redelivery(mut self, on: bool) -> Self {
        self.query_redelivery = on;
        self
    }

    /// Subscribes to the request and abort topics of every operation in the registry, then
    /// serves them in background tasks until the returned handle is dropped.
    ///
    /// First checks that the registry holds the application state its operations read
    /// ([`OperationRegistry::check_states`]): a replica that lacks one refuses to start,
    /// naming the operation and the type, instead of failing calls later.
    ///
    /// When this resolves the handler is listening: requests published afterwards reach it.
    /// Must run inside a tokio runtime.
    pub async fn spawn(self) -> Result<CallHandlerHandle, SpawnError> {
        self.registry.check_states()?;
        let shared = Arc::new(Shared {
            registry: self.registry,
            pubsub: self.pubsub,
            env: self.env,
            running: Mutex::new(HashMap::default()),
            tombstones: Mutex::new(Tombstones::default()),
            shutdown: CancellationToken::new(),
            served: Mutex::new(HashMap::new()),
            refreshing: tokio::sync::Mutex::new(()),
            generation: AtomicU64::new(0),
            query_redelivery: self.query_redelivery,
        });
        let handle = CallHandlerHandle {
            shared: shared.clone(),
        };
        shared.refresh().await?;
        if let Some(interval) = self.refresh_interval {
            tokio::spawn(refresh_periodically(shared, interval));
        }
        Ok(handle)
    }
}

/// Why a [`CallHandler`] did not start.
#[derive(Debug, thiserror::Error)]
pub enum SpawnError {
    /// Subscribing to the operations' topics failed.
    #[error(transparent)]
    Transport(#[from] TransportError),
    /// An operation reads application state the registry was not given.
    #[error(transparent)]
    Registry(#[from] crate::registry::RegistryError),
}

impl From<SpawnError> for crate::CallError {
    fn from(error: SpawnError) -> Self {
        match error {
            SpawnError::Transport(error) => error.into(),
            SpawnError::Registry(error) => crate::CallError::execution(error.to_string()),
        }
    }
}

/// A running [`CallHandler`]. Dropping it stops the handler: it unsubscribes, and requests
/// still running are cancelled and answered with `call.error` `ABORTED`.
pub struct CallHandlerHandle {
    shared: Arc<Shared>,
}

impl fmt::Debug for CallHandlerHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallHandlerHandle")
            .field("operations", &self.operations())
            .field("in_flight", &self.in_flight())
            .finish()
    }
}

impl Drop for CallHandlerHandle {
    fn drop(&mut self) {
        self.shared.shutdown.cancel();
    }
}

impl CallHandlerHandle {
    /// Serves the operations registered since the last refresh and stops serving the removed
    /// ones, now.
    pub async fn refresh(&self) -> Result<(), TransportError> {
        self.shared.refresh().await
    }

    /// How many requests are running.
    pub fn in_flight(&self) -> usize {
        self.shared.running.lock().len()
    }

    /// The ids of the operations served, sorted.
    pub fn operations(&self) -> Vec<String> {
        let mut ids: Vec<String> = self.shared.served.lock().keys().cloned().collect();
        ids.sort();
        ids
    }

    /// Stops the handler (the same as dropping the handle).
    pub fn stop(self) {}
}

/// `call.aborted` events for requests this handler has not seen: the request may still
/// arrive (events on different topics are not ordered), or it went to another replica.
#[derive(Default)]
struct Tombstones {
    order: VecDeque<Arc<str>>,
    ids: HashSet<Arc<str>, foldhash::fast::RandomState>,
}

impl Tombstones {
    fn insert(&mut self, request_id: Arc<str>) {
        if self.ids.insert(request_id.clone()) {
            self.order.push_back(request_id);
        }
        while self.order.len() > TOMBSTONES {
            if let Some(oldest) = self.order.pop_front() {
                self.ids.remove(&oldest);
            }
        }
    }

    fn take(&mut self, request_id: &str) -> bool {
        if self.ids.remove(request_id) {
            self.order.retain(|id| &**id != request_id);
            true
        } else {
            false
        }
    }
}

struct Served {
    stop: CancellationToken,
    generation: u64,
    task: Option<tokio::task::JoinHandle<()>>,
}

struct Shared {
    registry: OperationRegistry,
    pubsub: Arc<dyn PubSub>,
    env: Option<Arc<dyn EnvBackend>>,
    /// Running requests by id, with the token that cancels each.
    running: Mutex<HashMap<Arc<str>, CancellationToken, foldhash::fast::RandomState>>,
    tombstones: Mutex<Tombstones>,
    shutdown: CancellationToken,
    /// Served operations by id.
    served: Mutex<HashMap<String, Served>>,
    /// Serializes refreshes.
    refreshing: tokio::sync::Mutex<()>,
    generation: AtomicU64,
    /// Whether query request topics are joined with `subscribe_group_idempotent`.
    query_redelivery: bool,
}

async fn refresh_periodically(shared: Arc<Shared>, interval: Duration) {
    loop {
        tokio::select! {
            () = shared.shutdown.cancelled() => return,
            () = tokio::time::sleep(interval) => {}
        }
        if let Err(error) = shared.refresh().await {
            tracing::warn!(%error, "the call handler could not refresh its subscriptions");
        }
    }
}

/// Removes a request from the running map when its task ends, however it ends.
struct RunningGuard {
    shared: Arc<Shared>,
    request_id: Arc<str>,
}

impl Drop for RunningGuard {
    fn drop(&mut self) {
        self.shared.running.lock().remove(&self.request_id);
    }
}

impl Shared {
    async fn refresh(self: &Arc<Self>) -> Result<(), TransportError> {
        let _refreshing = self.refreshing.lock().await;
        if self.shutdown.is_cancelled() {
            return Ok(());
        }
        let specs = self.registry.specs();
        let wanted: BTreeSet<String> = specs.iter().map(|spec| spec.id()).collect();
        let queries: HashSet<String> = specs
            .iter()
            .filter(|spec| spec.kind == OperationKind::Query)
            .map(|spec| spec.id())
            .collect();
        let (added, removed): (Vec<String>, Vec<Served>) = {
            let mut served = self.served.lock();
            let gone: Vec<String> = served
                .keys()
                .filter(|id| !wanted.contains(*id))
                .cloned()
                .collect();
            let removed = gone.iter().filter_map(|id| served.remove(id)).collect();
            let added = wanted
                .into_iter()
                .filter(|id| !served.contains_key(id))
                .collect();
            (added, removed)
        };
        // Wait until the removed operations' subscriptions are dropped, so that requests
        // published after the refresh no longer reach this handler.
        for mut operation in removed {
            operation.stop.cancel();
            if let Some(task) = operation.task.take() {
                // The task only ends by itself; a panic in it was already reported.
                drop(task.await);
            }
        }
        for id in added {
            let topic = topics::request_topic(&id);
            let requests = if self.query_redelivery && queries.contains(&id) {
                self.pubsub
                    .subscribe_group_idempotent(&topic, topics::HANDLER_GROUP)
                    .await?
            } else {
                self.pubsub
                    .subscribe_group(&topic, topics::HANDLER_GROUP)
                    .await?
            };
            let aborts = self.pubsub.subscribe(&topics::abort_topic(&id)).await?;
            let stop = self.shutdown.child_token();
            let generation = self.generation.fetch_add(1, Ordering::Relaxed);
            // Listed before the task starts: a task that ends at once unlists itself.
            self.served.lock().insert(
                id.clone(),
                Served {
                    stop: stop.clone(),
                    generation,
                    task: None,
                },
            );
            let task = tokio::spawn(self.clone().serve_operation(
                id.clone(),
                generation,
                requests,
                aborts,
                stop,
            ));
            if let Some(served) = self.served.lock().get_mut(&id)
                && served.generation == generation
            {
                served.task = Some(task);
            }
        }
        Ok(())
    }

    /// Receives the requests and aborts of one operation until stopped.
    async fn serve_operation(
        self: Arc<Self>,
        id: String,
        generation: u64,
        mut requests: Subscription,
        mut aborts: Subscription,
        stop: CancellationToken,
    ) {
        loop {
            tokio::select! {
                // Requests before aborts: an abort published after its request never
                // overtakes it on a transport that keeps order per topic.
                biased;
                () = stop.cancelled() => return,
                request = requests.next() => match request {
                    Some(payload) => self.accept(&payload),
                    None => break,
                },
                abort = aborts.next() => match abort {
                    Some(payload) => self.abort(&payload),
                    None => break,
                },
            }
        }
        // The transport lost a subscription: forget the operation so the next refresh
        // subscribes again.
        tracing::warn!(operation = %id, "a subscription of the call handler ended");
        let mut served = self.served.lock();
        if served
            .get(&id)
            .is_some_and(|served| served.generation == generation)
        {
            served.remove(&id);
        }
    }

    /// Starts serving one `call.requested`.
    fn accept(self: &Arc<Self>, payload: &Bytes) {
        let request = match super::fast_decode::decode_fast(payload) {
            Some(CallEvent::Requested(request)) => request,
            _ => match self.decode_request(payload) {
                Some(request) => request,
                None => return,
            },
        };
        self.start(request);
    }

    /// Decodes a `call.requested` the fast path declined: anything else is logged, and a
    /// malformed request whose id can be read is refused with `call.error`.
    fn decode_request(self: &Arc<Self>, payload: &Bytes) -> Option<CallRequested> {
        let value: Value = match serde_json::from_slice(payload) {
            Ok(value) => value,
            Err(error) => {
                tracing::warn!(%error, "a call.requested that is not JSON arrived");
                if let Some((kind, request_id)) = CallEvent::peek_ids(payload)
                    && kind == "call.requested"
                {
                    self.refuse(request_id, WireError::NotJson(error.to_string()).into());
                }
                return None;
            }
        };
        let request_id = value
            .get("requestId")
            .and_then(Value::as_str)
            .map(str::to_owned);
        match CallEvent::from_value(value) {
            Ok(CallEvent::Requested(request)) => Some(request),
            Ok(other) => {
                tracing::warn!(
                    event = other.type_name(),
                    "ignoring an event on a request topic"
                );
                None
            }
            Err(error) => {
                tracing::warn!(%error, "a malformed call.requested arrived");
                if let Some(request_id) = request_id {
                    self.refuse(request_id, error.into());
                }
                None
            }
        }
    }

    /// Runs a decoded request in its own task (unless it was aborted already or is a duplicate).
    fn start(self: &Arc<Self>, request: CallRequested) {
        let request_id: Arc<str> = Arc::from(request.request_id.as_str());
        if self.tombstones.lock().take(&request_id) {
            tracing::debug!(request_id = %request_id, "the request was aborted before it arrived");
            return;
        }
        let token = self.shutdown.child_token();
        {
            let mut running = self.running.lock();
            if running.contains_key(&request_id) {
                tracing::debug!(request_id = %request_id, "ignoring a duplicate request");
                return;
            }
            running.insert(request_id.clone(), token.clone());
        }
        let guard = RunningGuard {
            shared: self.clone(),
            request_id,
        };
        let mut serving = Box::pin(async move {
            let shared = guard.shared.clone();
            shared.serve(&guard.request_id, request, &token).await;
            drop(guard);
        });
        // Most requests finish without waiting (the handler answers at once and the transport
        // takes the reply): poll once here, and only a request that has to wait gets a task of
        // its own. Its first poll there registers the real wakers (futures re-register on
        // every poll), so nothing is lost by this poll's no-op waker.
        let mut first_poll = Context::from_waker(Waker::noop());
        // As in a task of its own, a panic ends this request only (handler panics are already
        // errors; this covers the serving code around them), never the operation's loop.
        let polled = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            serving.as_mut().poll(&mut first_poll)
        }));
        match polled {
            Ok(Poll::Pending) => drop(tokio::spawn(serving)),
            Ok(Poll::Ready(())) => {}
            Err(_) => tracing::error!("serving a request panicked; the request is dropped"),
        }
    }

    /// Answers a request that could not be decoded with `call.error`.
    fn refuse(self: &Arc<Self>, request_id: String, error: CallError) {
        let shared = self.clone();
        tokio::spawn(async move {
            let topic = topics::reply_topic_for(&request_id);
            shared
                .send(&topic, CallEvent::error(request_id, error))
                .await;
        });
    }

    /// Cancels the request a `call.aborted` names.
    fn abort(&self, payload: &Bytes) {
        let request_id = match CallEvent::from_slice(payload) {
            Ok(CallEvent::Aborted(event)) => event.request_id,
            Ok(other) => {
                tracing::warn!(
                    event = other.type_name(),
                    "ignoring an event on an abort topic"
                );
                return;
            }
            Err(error) => {
                tracing::warn!(%error, "a malformed call.aborted arrived");
                return;
            }
        };
        let token = self.running.lock().get(request_id.as_str()).cloned();
        match token {
            Some(token) => token.cancel(),
            None => self.tombstones.lock().insert(Arc::from(request_id)),
        }
    }

    /// Runs one request and publishes its outcome.
    async fn serve(
        &self,
        request_id: &Arc<str>,
        request: CallRequested,
        token: &CancellationToken,
    ) {
        let reply_topic = topics::reply_topic_for(request_id);
        let Err(error) = self.run(request_id, request, token, &reply_topic).await else {
            return;
        };
        let error = if token.is_cancelled() {
            if !self.shutdown.is_cancelled() {
                // The caller aborted: it listens no more.
                return;
            }
            CallError::aborted("the call handler serving this request stopped")
        } else {
            error
        };
        self.send(&reply_topic, CallEvent::error(&**request_id, error))
            .await;
    }

    async fn run(
        &self,
        request_id: &Arc<str>,
        request: CallRequested,
        token: &CancellationToken,
        reply_topic: &str,
    ) -> Result<(), CallError> {
        let trace = request.trace_context();
        let CallRequested {
            operation_id,
            input,
            parent_request_id,
            identity,
            deadline,
            ..
        } = request;
        let mut ctx = OperationContext::for_request(request_id.clone())
            .with_cancellation(token.clone())
            .with_trace_opt(trace);
        if let Some(parent) = parent_request_id {
            ctx = ctx.with_parent_request_id(parent);
        }
        if let Some(deadline) = deadline {
            ctx = ctx.with_deadline(Deadline::from_epoch_millis(deadline));
        }
        if let Some(env) = &self.env {
            ctx = ctx.with_env(env.clone());
        }
        let mut span = CallSpan::start(SpanKind::Server, "call_handler", &operation_id, &ctx);
        let ctx = span.apply(ctx);
        let serving = self.run_in(
            request_id,
            operation_id,
            input,
            identity,
            ctx,
            &span,
            reply_topic,
        );
        let result = if span.is_active() {
            serving.instrument(span.span().clone()).await
        } else {
            serving.await
        };
        span.finish_with(&result);
        result
    }

    #[allow(clippy::too_many_arguments)]
    async fn run_in(
        &self,
        request_id: &Arc<str>,
        operation_id: String,
        input: serde_json::Value,
        identity: Option<crate::access::Identity>,
        ctx: OperationContext,
        span: &CallSpan,
        reply_topic: &str,
    ) -> Result<(), CallError> {
        let spec = self
            .registry
            .spec(&operation_id)
            .ok_or_else(|| CallError::operation_not_found(&operation_id))?;
        span.record_kind(spec.kind);
        spec.access.check(identity.as_ref())?;
        let ctx = ctx.with_identity_opt(identity);
        if spec.kind.is_stream() {
            let mut items = self.registry.subscribe(&operation_id, input, &ctx).await?;
            while let Some(item) = items.next().await {
                let receipt = self
                    .send(reply_topic, CallEvent::responded(&**request_id, item?))
                    .await;
                if receipt.is_none_or(Receipt::reached_nobody) {
                    tracing::debug!(
                        request_id = &**request_id,
                        "nobody listens for the subscription any more: stopping it"
                    );
                    return Ok(());
                }
            }
            self.send(reply_topic, CallEvent::completed(&**request_id))
                .await;
        } else {
            let envelope = self.registry.execute(&operation_id, input, &ctx).await?;
            self.send(reply_topic, CallEvent::responded(&**request_id, envelope))
                .await;
        }
        Ok(())
    }

    /// Publishes one reply; `None` (logged) when it could not be sent.
    async fn send(&self, topic: &str, event: CallEvent) -> Option<Receipt> {
        let payload = match event.to_bytes() {
            Ok(payload) => payload,
            Err(error) => {
                tracing::error!(%error, "could not encode a reply");
                return None;
            }
        };
        match self.pubsub.publish(topic, payload).await {
            Ok(receipt) => Some(receipt),
            Err(error) => {
                tracing::warn!(%error, topic, event = event.type_name(), "could not publish a reply");
                None
            }
        }
    }
}
