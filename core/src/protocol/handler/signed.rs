//! What a handler given identity keys does with signatures (see
//! [`signing`](crate::protocol::signing)): it takes requests only signed (the signature
//! checked against the whole request, a signed request id taken once within its signature's
//! life), signs its replies when its keys sign replies, and lets a signed request be
//! cancelled only by an abort its caller signed.

use super::HandlerState;
use crate::error::CallError;
use crate::protocol::signing::{IdentityKeys, Refusal, Reply, ReplyKind, now_secs, reply_body};
use crate::protocol::wire::{CallAborted, CallEvent, CallRequested};
use serde_json::Value;
use std::sync::Arc;

impl HandlerState {
    /// Whether `request` may run: `Ok(true)` when it is anonymous, when this handler needs no
    /// signatures, or when its signature verifies and its id was not taken within the
    /// signature's life; `Ok(false)` for a replay (logged, answered with nothing); an error
    /// for a signature that does not verify (`ACCESS_DENIED`) or a full replay memory
    /// (`UNAVAILABLE`).
    pub(super) fn take_signed(
        &self,
        request_id: &Arc<str>,
        request: &CallRequested,
    ) -> Result<bool, CallError> {
        let Some(keys) = &self.identity_keys else {
            return Ok(true);
        };
        let Some(verified) = keys.verify(request)? else {
            return Ok(true);
        };
        let taken = self
            .replays
            .lock()
            .take(request_id, verified.forget_at, now_secs());
        match taken {
            Ok(()) => Ok(true),
            Err(Refusal::Replayed) => {
                tracing::warn!(
                    request_id = &**request_id,
                    operation = %request.operation_id,
                    "dropping a signed request taken before: a replay of a genuine request"
                );
                Ok(false)
            }
            Err(Refusal::Full(capacity)) => Err(CallError::unavailable(format!(
                "this call handler holds {capacity} signed requests whose signatures have not expired (CallHandler::with_replay_capacity): retry later"
            ))),
        }
    }

    /// This handler's keys, when they sign its replies.
    fn reply_keys(&self) -> Option<&IdentityKeys> {
        self.identity_keys
            .as_ref()
            .filter(|keys| keys.signs_replies())
    }

    /// Whether this handler's keys sign its replies.
    pub(super) fn signs_replies(&self) -> bool {
        self.reply_keys().is_some()
    }

    /// Signs `event`, a reply (`index`: a subscription item's), when this handler's keys
    /// sign replies. A reply that cannot be signed goes unsigned (logged): its caller, if it
    /// takes only signed replies, drops it and ends by its deadline.
    pub(super) fn sign_reply(&self, event: &mut CallEvent, index: Option<u64>) {
        let Some(keys) = self.reply_keys() else {
            return;
        };
        let kind = match event {
            CallEvent::Responded(_) => ReplyKind::Responded,
            CallEvent::Completed(_) => ReplyKind::Completed,
            CallEvent::Error(_) => ReplyKind::Error,
            CallEvent::Requested(_) | CallEvent::Aborted(_) => return,
        };
        let signature = match event.to_value() {
            Ok(Value::Object(fields)) => keys.sign_reply(&Reply {
                request_id: event.request_id(),
                kind,
                body: &reply_body(&fields),
                index,
            }),
            Ok(_) => Err("the reply is not a JSON object".to_owned()),
            Err(error) => Err(error.to_string()),
        };
        match signature {
            Ok(signature) => event.set_signature(signature),
            Err(error) => tracing::error!(%error, "could not sign a reply"),
        }
    }

    /// Whether `abort`, on the abort topic of `operation_id`, may act, and whether it was
    /// signed by the request's caller: `Some(true)` for a signed abort (or any abort when
    /// this handler needs no signatures), `Some(false)` for an unsigned one that may cancel
    /// only an anonymous request running here, `None` (logged) for one that may not act at
    /// all: an unsigned or forged abort of a signed request.
    pub(super) fn abort_signed(&self, operation_id: &str, abort: &CallAborted) -> Option<bool> {
        let Some(keys) = &self.identity_keys else {
            return Some(true);
        };
        if let Some(signature) = &abort.signature {
            match keys.verify_abort(&abort.request_id, operation_id, signature) {
                Ok(()) => return Some(true),
                Err(why) => tracing::warn!(
                    request_id = %abort.request_id,
                    "ignoring a call.aborted whose signature does not hold: {why}"
                ),
            }
        }
        if self.replays.lock().contains(&abort.request_id) {
            tracing::warn!(
                request_id = %abort.request_id,
                "ignoring a call.aborted of a signed request that its caller did not sign"
            );
            return None;
        }
        Some(false)
    }
}
