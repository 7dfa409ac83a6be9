//! Requests a handler given identity keys takes only signed: the signature checked against
//! the whole request, and a signed request id taken once within its signature's life (see
//! [`signing`](crate::protocol::signing)).

use super::HandlerState;
use crate::error::CallError;
use crate::protocol::signing::{Refusal, now_secs};
use crate::protocol::wire::CallRequested;
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
}
