//! One request: decoding its `call.requested`, running it in the registry, publishing its
//! replies; and the `call.aborted` that cancels it (or leaves a tombstone).

use super::HandlerState;
use crate::bounds::Deadline;
use crate::context::OperationContext;
use crate::edge::Edge;
use crate::error::{CallError, ErrorCode};
use crate::middleware::{Outcome, Reply};
use crate::protocol::pubsub::Receipt;
use crate::protocol::topics;
use crate::protocol::wire::{self, CallEvent, CallRequested};
use crate::registry::FoundOperation;
use crate::trace::CallSpan;
use bytes::Bytes;
use futures::StreamExt;
use futures::future::Either;
use serde_json::Value;
use std::collections::{HashSet, VecDeque};
use std::future::Future;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use tokio::sync::OwnedSemaphorePermit;
use tokio_util::sync::CancellationToken;

/// What the call protocol's [`CallHandler`](crate::CallHandler) knows about a request it
/// serves, for operations and middleware to read through the context's
/// [`Edge`]: `ctx.edge().and_then(|edge| edge.fact::<CallProtocolRequest>())`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CallProtocolRequest {
    /// The id of the caller that published the request: what its request id has before
    /// the last `:` (a `PendingRequestMap` names its requests `<callerId>:<n>`), when it has
    /// one. It is what the caller stated, like the request's identity.
    pub caller: Option<String>,
}

/// How many `call.aborted` events for requests not (yet) seen a handler remembers.
const TOMBSTONES: usize = 4096;

/// `call.aborted` events for requests this handler has not seen: the request may still
/// arrive (events on different topics are not ordered), or it went to another replica.
#[derive(Default)]
pub(super) struct Tombstones {
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

/// A request ready to run: its operation (when the registry has it), its input and the
/// context it runs with.
struct Prepared {
    found: Option<FoundOperation>,
    operation_id: String,
    input: Value,
    ctx: OperationContext,
}

/// Removes a request from the running map when its task ends, however it ends, and gives
/// back the permit it ran under.
struct RunningGuard {
    shared: Arc<HandlerState>,
    request_id: Arc<str>,
    _permit: OwnedSemaphorePermit,
}

impl Drop for RunningGuard {
    fn drop(&mut self) {
        self.shared.running.lock().remove(&self.request_id);
    }
}

impl HandlerState {
    /// Starts serving one `call.requested` that arrived on the request topic of
    /// `operation_id`: a request naming another operation is refused (what the topic let
    /// through is what runs, whatever the bus checked publishers against).
    pub(super) fn accept(
        self: &Arc<Self>,
        operation_id: &str,
        payload: &Bytes,
        permit: OwnedSemaphorePermit,
    ) {
        let request = match crate::protocol::wire::decode_fast(payload) {
            Some(CallEvent::Requested(request)) => request,
            _ => match self.decode_request(payload) {
                Some(request) => request,
                None => return,
            },
        };
        if request.operation_id != operation_id {
            tracing::warn!(
                topic_operation = operation_id,
                operation = %request.operation_id,
                "refused a request naming another operation than its topic"
            );
            let error = CallError::new(
                ErrorCode::ValidationError,
                format!(
                    "the request names the operation `{}` but was published on the request topic of `{operation_id}`",
                    request.operation_id
                ),
            );
            self.refuse(request.request_id, error);
            return;
        }
        self.start(request, permit);
    }

    /// Decodes a `call.requested` the fast path declined, under the wire's one rule (no
    /// repeated key at any depth): anything else is logged, and a malformed request whose id
    /// can be read is refused with `call.error`.
    fn decode_request(self: &Arc<Self>, payload: &Bytes) -> Option<CallRequested> {
        let value = match wire::parse_json(payload) {
            Ok(value) => value,
            Err(error) => {
                tracing::warn!(%error, "a call.requested that is not JSON without repeated keys arrived");
                if let Some(peeked) = wire::peek(payload)
                    && peeked.kind == wire::EventKind::Requested
                {
                    self.refuse(peeked.request_id.into_owned(), error.into());
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
    fn start(self: &Arc<Self>, request: CallRequested, permit: OwnedSemaphorePermit) {
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
            _permit: permit,
        };
        // Most requests finish without waiting (the handler answers at once and the transport
        // takes the reply): poll once here, and only a request that has to wait gets a task of
        // its own. Its first poll there registers the real wakers (futures re-register on
        // every poll), so nothing is lost by this poll's no-op waker.
        let mut first_poll = Context::from_waker(Waker::noop());
        // As in a task of its own, a panic ends this request only (handler panics are already
        // errors; this covers the serving code around them, the call's start included: its
        // future is made here), never the operation's loop.
        let polled = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let mut serving = Box::pin(Self::serve(guard, request, token));
            match serving.as_mut().poll(&mut first_poll) {
                Poll::Pending => Some(serving),
                Poll::Ready(()) => None,
            }
        }));
        match polled {
            Ok(Some(serving)) => drop(tokio::spawn(serving)),
            Ok(None) => {}
            Err(_) => tracing::error!("serving a request panicked; the request is dropped"),
        }
    }

    /// Answers a request that could not be decoded with `call.error`.
    fn refuse(self: &Arc<Self>, request_id: String, error: CallError) {
        let shared = self.clone();
        tokio::spawn(async move {
            let topic = topics::reply_topic_for(&request_id);
            shared
                .send(&topic, CallEvent::error(request_id, error), None)
                .await;
        });
    }

    /// Cancels the request a `call.aborted` names.
    pub(super) fn abort(&self, operation_id: &str, payload: &Bytes) {
        let event = match CallEvent::from_slice(payload) {
            Ok(CallEvent::Aborted(event)) => event,
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
        #[cfg(feature = "signing")]
        let signed = match self.abort_signed(operation_id, &event) {
            Some(signed) => signed,
            None => return,
        };
        #[cfg(not(feature = "signing"))]
        let signed = {
            let _ = operation_id;
            true
        };
        let token = self.running.lock().get(event.request_id.as_str()).cloned();
        match token {
            Some(token) => token.cancel(),
            // Only an abort its caller signed may keep a request that has not arrived from
            // running: an unsigned one could be anybody's.
            None if signed => self.tombstones.lock().insert(Arc::from(event.request_id)),
            None => {}
        }
    }

    /// Runs one request and publishes its outcome, on the handler `guard` holds; `guard` is
    /// dropped when it is done.
    ///
    /// The request is taken apart here, before the future is made: the future holds what
    /// the call needs once (an `async fn` taking the request would keep it, and each `async
    /// fn` it awaits its own copy, beside the call).
    fn serve(
        guard: RunningGuard,
        request: CallRequested,
        token: CancellationToken,
    ) -> impl Future<Output = ()> + Send + 'static {
        let reply_topic = topics::TopicName::reply_for(&guard.request_id);
        // The front door's future, made here and polled in place below (it is `Unpin`): the
        // request's context and input move into it now, not into this future first.
        let shared = &guard.shared;
        let mut serving = match shared.call(&guard.request_id, request, &token) {
            Ok(Some(Prepared {
                found: Some(found),
                input,
                ctx,
                ..
            })) => Some(Either::Left(shared.registry.serve_found(found, input, ctx))),
            Ok(Some(Prepared {
                operation_id,
                input,
                ctx,
                ..
            })) => Some(Either::Right(Either::Left(shared.registry.serve(
                &operation_id,
                input,
                ctx,
            )))),
            Ok(None) => None,
            Err(error) => Some(Either::Right(Either::Right(std::future::ready(Err(error))))),
        };
        async move {
            let Some(serving) = serving.as_mut() else {
                return;
            };
            let outcome = serving.await;
            let delivered = match outcome {
                // The usual outcome, published by a future of its own that holds only the
                // reply's bytes: the others (a stream's items, a signed reply's event, an
                // error's) are awaited boxed, so that this future, allocated once per
                // request, stays small (holding theirs, it was ~2.4 KB: past the sizes
                // the allocator serves from its per-thread cache, with a copy of it all).
                Ok(Outcome::Unary(reply)) if guard.shared.replies_unsigned() => {
                    match wire::responded(&guard.request_id, reply) {
                        Ok(payload) => {
                            // The request keeps its place (its permit, its entry among the
                            // running) until the transport confirms the reply: the guard
                            // goes with the reply, and nothing here waits for it.
                            let shared = guard.shared.clone();
                            shared.publish_keeping(&reply_topic, payload, guard).await;
                            return;
                        }
                        Err(error) => Err(error),
                    }
                }
                outcome => {
                    let (shared, request_id) = (&guard.shared, &guard.request_id);
                    Box::pin(shared.deliver(outcome, request_id, &reply_topic)).await
                }
            };
            let (shared, request_id) = (&guard.shared, &guard.request_id);
            let Err(error) = delivered else {
                return;
            };
            let error = if token.is_cancelled() {
                if !shared.shutdown.is_cancelled() {
                    // The caller aborted: it listens no more.
                    return;
                }
                CallError::aborted("the call handler serving this request stopped")
            } else {
                error
            };
            Box::pin(shared.send(&reply_topic, CallEvent::error(&**request_id, error), None)).await;
        }
    }

    /// What a request asks of the registry's front door
    /// ([`OperationRegistry::serve`](crate::OperationRegistry::serve)): the operation, its
    /// input and the call's context. `None` when it is not to run (a signed request seen
    /// before).
    fn call(
        &self,
        request_id: &Arc<str>,
        request: CallRequested,
        token: &CancellationToken,
    ) -> Result<Option<Prepared>, CallError> {
        #[cfg(feature = "signing")]
        if !self.take_signed(request_id, &request)? {
            return Ok(None);
        }
        let found = self.registry.lookup(&request.operation_id);
        // A handler that reads nothing of its context, with no middleware around it: nothing
        // can read the edge's facts, nor the trace unless a span records the call (the
        // front door's span, which reads the trace only then).
        let lean = found
            .as_ref()
            .is_some_and(|found| !self.registry.reads_context(found));
        let trace = (!lean || CallSpan::wanted())
            .then(|| request.trace_context())
            .flatten();
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
            .with_trace_opt(trace)
            .with_identity_opt(identity);
        if let Some(parent) = parent_request_id {
            ctx = ctx.with_parent_request_id(parent);
        }
        if let Some(deadline) = deadline {
            ctx = ctx.with_deadline(Deadline::from_epoch_millis(deadline));
        }
        if let Some(env) = &self.env {
            ctx = ctx.with_env(env.clone());
        }
        let mut edge = Edge::new(Edge::CALL_PROTOCOL);
        if !lean {
            edge = edge.with_fact(CallProtocolRequest {
                caller: request_id
                    .rsplit_once(':')
                    .map(|(caller, _)| caller.to_owned()),
            });
        }
        Ok(Some(Prepared {
            found,
            operation_id,
            input,
            ctx: ctx.with_edge(edge),
        }))
    }

    /// Publishes a call's outcome: a unary reply, or a stream's items and then
    /// `call.completed`. An error is the call's (or its reply's), for [`serve`](Self::serve)
    /// to answer.
    async fn deliver(
        &self,
        outcome: Result<Outcome, CallError>,
        request_id: &Arc<str>,
        reply_topic: &str,
    ) -> Result<(), CallError> {
        match outcome? {
            Outcome::Unary(reply) => {
                self.respond(reply_topic, request_id, reply, None).await?;
            }
            Outcome::Stream(mut items) => {
                let mut index = 0;
                while let Some(item) = items.next().await {
                    let receipt = self
                        .respond(reply_topic, request_id, item?, Some(index))
                        .await?;
                    index += 1;
                    if receipt.is_none_or(Receipt::reached_nobody) {
                        tracing::debug!(
                            request_id = &**request_id,
                            "nobody listens for the subscription any more: stopping it"
                        );
                        return Ok(());
                    }
                }
                self.send(reply_topic, CallEvent::completed(&**request_id), None)
                    .await;
            }
        }
        Ok(())
    }

    /// Publishes one reply (signed when this handler signs replies; `index` is a
    /// subscription item's); `None` (logged) when it could not be sent.
    async fn send(
        &self,
        topic: &str,
        #[cfg_attr(not(feature = "signing"), allow(unused_mut))] mut event: CallEvent,
        index: Option<u64>,
    ) -> Option<Receipt> {
        #[cfg(feature = "signing")]
        self.sign_reply(&mut event, index);
        #[cfg(not(feature = "signing"))]
        let _ = index;
        let payload = match event.to_bytes() {
            Ok(payload) => payload,
            Err(error) => {
                tracing::error!(%error, "could not encode a reply");
                return None;
            }
        };
        self.publish(topic, payload, event.type_name()).await
    }

    /// Publishes `reply` to `request_id` (`index`: a subscription item's) as `call.responded`:
    /// unsigned, written around the reply's own JSON (no envelope `Value` in between); signed,
    /// built as the event the signature covers. `Ok(None)` (logged) when it could not be
    /// sent; an error is the reply's (an output that would not serialize).
    async fn respond(
        &self,
        topic: &str,
        request_id: &str,
        reply: Reply,
        index: Option<u64>,
    ) -> Result<Option<Receipt>, CallError> {
        if self.replies_unsigned() {
            let payload = wire::responded(request_id, reply)?;
            return Ok(self.publish(topic, payload, wire::RESPONDED).await);
        }
        let event = CallEvent::responded(request_id, reply.into_envelope()?);
        Ok(self.send(topic, event, index).await)
    }

    /// Whether replies go out unsigned (then one can be written without building its event).
    #[cfg(feature = "signing")]
    fn replies_unsigned(&self) -> bool {
        !self.signs_replies()
    }

    /// Whether replies go out unsigned: always, without the `signing` feature.
    #[cfg(not(feature = "signing"))]
    fn replies_unsigned(&self) -> bool {
        true
    }

    /// Publishes a unary reply's `payload` (`call.responded`), the request's `guard` kept by
    /// the transport until the reply is confirmed
    /// ([`PubSub::publish_keeping`](crate::protocol::PubSub::publish_keeping)); logged when
    /// it could not be published.
    async fn publish_keeping(&self, topic: &str, payload: Bytes, guard: RunningGuard) {
        let published = self
            .pubsub
            .publish_keeping(topic, payload, Box::new(guard))
            .await;
        if let Err(error) = published {
            tracing::warn!(%error, topic, event = wire::RESPONDED, "could not publish a reply");
        }
    }

    /// Publishes a reply's `payload` (an event of type `event`); `None` (logged) when it could
    /// not be sent.
    async fn publish(&self, topic: &str, payload: Bytes, event: &'static str) -> Option<Receipt> {
        match self.pubsub.publish(topic, payload).await {
            Ok(receipt) => Some(receipt),
            Err(error) => {
                tracing::warn!(%error, topic, event, "could not publish a reply");
                None
            }
        }
    }
}
