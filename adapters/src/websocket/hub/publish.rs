//! Publishing through the hub ([`HubState::publish`]): what a spoke may publish where, under
//! its grant and the call records, and how its requests are read and stamped.
//!
//! On the call protocol's topics the hub reads every event before it routes it:
//!
//! * a request (`opkit.request.<op>`) is checked as the handlers' decoder
//!   ([`CallEvent::from_slice`]) would read it, without building it ([`wire::check_request`];
//!   decoded in full when that check declines); one it cannot read, or that names another
//!   operation than its topic, is refused. A spoke granted an identity has it stamped by
//!   rewriting the request (decode, replace `identity`, sign when the hub has keys, encode):
//!   what is forwarded is exactly what was signed, never the spoke's own bytes.
//! * an abort (`opkit.abort.<op>`) is accepted from the request's caller only;
//! * a reply (`opkit.reply*`) from the spoke the request was routed to only, and it reaches
//!   the caller's connection only. The hub reads its kind and request id, from its first bytes
//!   when they are written as opkit writes them ([`wire::peek_head`]), else by [`wire::peek`]
//!   (one it cannot read is refused); the rest is the caller's to read: its decoder drops a
//!   reply it cannot read (a key written twice, invalid JSON), as a handler refuses such a
//!   request. A serving spoke that sends one ends its call as one that never answers would:
//!   the caller's deadline ends it.
//!
//! Code in the hub's process ([`HubPubSub`](super::HubPubSub)) is trusted: its requests are
//! recorded (so replies find it) but not rewritten, and it may abort any call.

use super::calls::{Call, Caller};
use super::grant::SpokeGrant;
use super::state::HubState;
use super::topic::{TopicKind, check_name, classify};
use bytes::Bytes;
use opkit::Identity;
use opkit::protocol::wire::{self, EventKind, RequestHead};
use opkit::protocol::{CallEvent, CallRequested, TransportError};
use std::sync::Arc;

/// The spoke a publish comes from.
#[derive(Clone, Copy)]
pub(super) struct Publisher<'a> {
    /// Its connection id.
    pub(super) id: u64,
    pub(super) grant: &'a SpokeGrant,
}

/// A publish the hub routed.
#[derive(Debug, Clone, Copy)]
pub(super) struct Published {
    /// How many subscriptions received it (each group counts once).
    pub(super) receivers: usize,
    /// Its receipt may be late (see `receipts.rs`): a request that reached a serving spoke,
    /// or a reply that ended its call at its caller. Nothing but the publish itself waits on
    /// such a receipt.
    pub(super) late: bool,
}

impl Published {
    fn now(receivers: usize) -> Self {
        Self {
            receivers,
            late: false,
        }
    }
}

/// A refused publish: it reached nobody.
fn refused(message: impl Into<String>) -> TransportError {
    TransportError::not_sent(message)
}

impl HubState {
    /// Publishes `payload` on `topic` for a spoke (`from`) or for code in the hub's process
    /// (`None`), under the rules of the module docs.
    pub(super) fn publish(
        &self,
        from: Option<Publisher<'_>>,
        topic: &str,
        payload: Bytes,
    ) -> Result<Published, TransportError> {
        if let Some(from) = from {
            let checked = check_name("topic", topic, self.options.max_topic_len)
                .map_err(refused)
                .and_then(|()| self.check_publish(from, topic));
            if let Err(error) = checked {
                return Err(self.refuse(from, error));
            }
        }
        let published = match classify(topic) {
            TopicKind::Request(operation_id) => {
                self.publish_request(from, topic, operation_id, payload)
            }
            TopicKind::Abort(operation_id) => {
                self.publish_abort(from, topic, operation_id, &payload)
            }
            TopicKind::Reply => self.publish_reply(from, topic, &payload),
            TopicKind::Plain => Ok(Published::now(self.router.publish(topic, &payload, |_| {}))),
        };
        published.map_err(|error| match from {
            Some(from) if error.delivery() == opkit::protocol::Delivery::NotSent => {
                self.refuse(from, error)
            }
            _ => error,
        })
    }

    /// What the grant says about publishing on `topic` (the call records decide the rest).
    fn check_publish(&self, from: Publisher<'_>, topic: &str) -> Result<(), TransportError> {
        match classify(topic) {
            TopicKind::Request(operation_id) if !from.grant.may_call(operation_id) => {
                Err(refused(format!(
                    "the grant `{}` does not let this spoke call `{operation_id}` (SpokeGrant::calling)",
                    from.grant.name
                )))
            }
            TopicKind::Plain if !from.grant.may_use_topic(topic) => Err(refused(format!(
                "the grant `{}` does not let this spoke publish on `{topic}`, a topic outside the call protocol (SpokeGrant::with_topics)",
                from.grant.name
            ))),
            _ => Ok(()),
        }
    }

    /// Logs a publish that was not sent (refused, or reaching a topic whose server is gone)
    /// at a bounded rate, and passes the error on.
    fn refuse(&self, from: Publisher<'_>, error: TransportError) -> TransportError {
        if let Some(left_out) = self.refusal_log.admit() {
            tracing::warn!(spoke = %from.grant.name, left_out, reason = error.message(), "a spoke's publish was not sent");
        }
        error
    }

    /// A `call.requested`: read, checked, stamped, recorded, then routed.
    fn publish_request(
        &self,
        from: Option<Publisher<'_>>,
        topic: &str,
        operation_id: &str,
        payload: Bytes,
    ) -> Result<Published, TransportError> {
        let (request_id, call, payload) = match from {
            Some(from) => {
                // A spoke granted an identity has its request decoded in full, to be rewritten.
                let request = match from.grant.identity {
                    Some(_) => Some(read_request(&payload, operation_id)?),
                    None => None,
                };
                let head = match &request {
                    Some(request) => RequestHead::from(request),
                    None => read_head(&payload, operation_id)?,
                };
                if head.request_id.len() > self.options.max_topic_len {
                    return Err(refused(format!(
                        "the request id is {} bytes long, over the hub's limit of {} (HubOptions::with_max_topic_len)",
                        head.request_id.len(),
                        self.options.max_topic_len
                    )));
                }
                let call = Call::new(
                    Caller::Spoke(from.id),
                    operation_id,
                    head.deadline,
                    head.subscription,
                );
                let request_id = Arc::<str>::from(head.request_id);
                let payload = match (request, &from.grant.identity) {
                    (Some(request), Some(identity)) => self.stamp(request, identity)?,
                    _ => payload,
                };
                (request_id, call, payload)
            }
            None => match wire::peek(&payload) {
                Some(peeked) if peeked.kind == EventKind::Requested => {
                    let call = Call::new(
                        Caller::Hub,
                        operation_id,
                        peeked.deadline,
                        peeked.subscription,
                    );
                    (Arc::<str>::from(peeked.request_id), call, payload)
                }
                _ => {
                    return self
                        .route_request(topic, &payload, None)
                        .map(Published::now);
                }
            },
        };
        self.calls
            .lock()
            .open(request_id.clone(), call, self.options.max_calls_per_spoke)
            .map_err(refused)?;
        let routed = self.route_request(topic, &payload, Some(&request_id));
        if let Ok(receivers @ 1..) = routed {
            return Ok(Published {
                receivers,
                late: from.is_some(),
            });
        }
        self.calls.lock().forget(&request_id);
        routed.map(Published::now)
    }

    /// Routes a request; on a request topic whose last serving spoke went away within the
    /// orphan grace, reaching nobody is a transport error (the spoke may be reconnecting).
    /// The spoke a group hands the request to is recorded as its server (`request_id`, when
    /// the request has a record), under the router's lock: see [`SpokeState`]'s invariant.
    ///
    /// [`SpokeState`]: super::state::SpokeState
    fn route_request(
        &self,
        topic: &str,
        payload: &Bytes,
        request_id: Option<&str>,
    ) -> Result<usize, TransportError> {
        let receivers = self.router.publish(topic, payload, |server| {
            if let Some(request_id) = request_id {
                self.calls.lock().route(request_id, server);
            }
        });
        if receivers == 0
            && let Some((spoke, since)) = self.orphans.lock().get(topic).cloned()
            && since.elapsed() < self.options.orphan_grace
        {
            return Err(TransportError::not_sent(format!(
                "the spoke `{spoke}` that served `{topic}` disconnected and no other serves it (yet)"
            )));
        }
        Ok(receivers)
    }

    /// A `call.aborted`: accepted from the request's caller (or the hub), for that request on
    /// its operation's abort topic only.
    fn publish_abort(
        &self,
        from: Option<Publisher<'_>>,
        topic: &str,
        operation_id: &str,
        payload: &Bytes,
    ) -> Result<Published, TransportError> {
        let caller = from.map_or(Caller::Hub, |from| Caller::Spoke(from.id));
        let request_id = match wire::peek(payload) {
            Some(peeked) if peeked.kind == EventKind::Aborted => peeked.request_id,
            _ if caller == Caller::Hub => {
                return Ok(Published::now(self.router.publish(topic, payload, |_| {})));
            }
            _ => {
                return Err(refused(format!(
                    "only call.aborted is published on `{topic}`, and the hub cannot read this as one"
                )));
            }
        };
        let aborted = self
            .calls
            .lock()
            .abort(&request_id, operation_id, caller)
            .map_err(refused)?;
        if aborted.is_none() && caller != Caller::Hub {
            // No such call in flight (it ended): nothing to stop.
            return Ok(Published::now(0));
        }
        Ok(Published::now(self.router.publish(topic, payload, |_| {})))
    }

    /// A reply: accepted from the spoke the request was routed to, and delivered to its
    /// caller only.
    fn publish_reply(
        &self,
        from: Option<Publisher<'_>>,
        topic: &str,
        payload: &Bytes,
    ) -> Result<Published, TransportError> {
        // Routed by its head when written as opkit writes it (`wire::peek_head`): the rest is
        // the caller's to read, whose decoder drops what it cannot (see the module docs).
        let head = wire::peek_kind_and_id(payload)
            .filter(|(kind, _)| !matches!(kind, EventKind::Requested | EventKind::Aborted));
        let Some((kind, request_id)) = head else {
            if from.is_none() {
                return Ok(Published::now(self.router.publish(topic, payload, |_| {})));
            }
            return Err(refused(format!(
                "only call.responded, call.completed and call.error are published on `{topic}`, and the hub cannot read this as one"
            )));
        };
        let answered = self
            .calls
            .lock()
            .answer(&request_id, kind, topic, from.map(|from| from.id));
        match answered.map_err(refused)? {
            Some((caller, ends)) => {
                let receivers = self.deliver(caller, topic, payload);
                Ok(Published {
                    receivers,
                    late: ends && receivers > 0,
                })
            }
            // In the hub's process: replies to requests the hub did not route.
            None if from.is_none() => {
                Ok(Published::now(self.router.publish(topic, payload, |_| {})))
            }
            // No such call in flight (it ended, or never was): nobody waits for it.
            None => Ok(Published::now(0)),
        }
    }

    /// Rewrites a request with the identity the spoke was granted, signed with the hub's
    /// keys when it has them (the signature covers the request as it is forwarded).
    fn stamp(
        &self,
        mut request: CallRequested,
        identity: &Identity,
    ) -> Result<Bytes, TransportError> {
        request.identity = Some(identity.clone());
        request.identity_token = None;
        #[cfg(feature = "signing")]
        if let Some(keys) = &self.options.identity_keys {
            request.identity_token = keys.sign_request(&request).map_err(|error| {
                TransportError::not_sent(format!(
                    "the hub could not sign the identity it stamps: {error}"
                ))
            })?;
        }
        CallEvent::Requested(request)
            .to_bytes()
            .map_err(|error| TransportError::not_sent(error.to_string()))
    }
}

/// The head of a spoke's `call.requested` for `operation_id`: checked without building it
/// ([`wire::check_request`], which accepts only what a handler's decoder reads the same way),
/// or else decoded in full by [`read_request`], which refuses anything else naming what is
/// wrong.
fn read_head<'a>(payload: &'a [u8], operation_id: &str) -> Result<RequestHead<'a>, TransportError> {
    match wire::check_request(payload) {
        Some(head) if head.operation_id == operation_id => Ok(head),
        _ => read_request(payload, operation_id).map(RequestHead::from),
    }
}

/// A spoke's `call.requested` for `operation_id`, decoded as a handler decodes it; anything
/// else is refused, naming what is wrong.
fn read_request(payload: &[u8], operation_id: &str) -> Result<CallRequested, TransportError> {
    match CallEvent::from_slice(payload) {
        Ok(CallEvent::Requested(request)) if request.operation_id == operation_id => Ok(request),
        Ok(CallEvent::Requested(request)) => Err(refused(format!(
            "the request names the operation `{}`, but was published on the request topic of `{operation_id}`",
            request.operation_id
        ))),
        Ok(other) => Err(refused(format!(
            "only call.requested is published on a request topic, not {}",
            other.type_name()
        ))),
        Err(error) => Err(refused(format!(
            "the hub cannot read this call.requested: {error}"
        ))),
    }
}
