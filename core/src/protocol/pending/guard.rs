//! [`PendingGuard`]: what keeps a started call's entry, removes it when the caller stops
//! waiting, and then aborts the request if it may still run.

use super::MapInner;
use super::table::Entry;
use crate::error::CallError;
use crate::protocol::topics;
use crate::protocol::wire::CallEvent;
use std::sync::Arc;
use std::sync::atomic::Ordering;

/// Removes its entry when dropped, and publishes `call.aborted` when the entry was still
/// pending (the caller gave up: dropped, timed out or cancelled).
pub(super) struct PendingGuard {
    inner: Arc<MapInner>,
    /// The key of the entry this guard removes.
    seq: u64,
    pub(super) request_id: Arc<str>,
    pub(super) operation_id: Arc<str>,
    /// Cleared when the request never reached a handler: there is nothing to abort.
    pub(super) publish_abort: bool,
}

impl Drop for PendingGuard {
    fn drop(&mut self) {
        if self.inner.table.remove(self.seq).is_some() && self.publish_abort {
            let pubsub = self.inner.pubsub.clone();
            let topic = topics::abort_topic(&self.operation_id);
            let Some(payload) = self
                .inner
                .abort_payload(&self.request_id, &self.operation_id)
            else {
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
    /// The `call.aborted` of `request_id` to `operation_id`, signed when this map signs.
    pub(super) fn abort_payload(
        &self,
        request_id: &str,
        operation_id: &str,
    ) -> Option<bytes::Bytes> {
        abort_payload(self.keys(), request_id, operation_id)
    }

    /// Registers a new request and returns its guard.
    pub(super) fn register(
        self: &Arc<Self>,
        operation_id: Arc<str>,
        entry: Entry,
    ) -> Result<PendingGuard, CallError> {
        let seq = self.next_seq.fetch_add(1, Ordering::Relaxed);
        self.table.insert(seq, entry)?;
        Ok(PendingGuard {
            inner: self.clone(),
            seq,
            request_id: request_id(&self.caller_id, seq),
            operation_id,
            publish_abort: true,
        })
    }
}

/// The `call.aborted` of `request_id` to `operation_id`, signed with `keys` when they sign
/// (so that a handler that takes only signed aborts for signed requests takes it).
pub(super) fn abort_payload(
    keys: Option<&super::Keys>,
    request_id: &str,
    operation_id: &str,
) -> Option<bytes::Bytes> {
    #[cfg_attr(not(feature = "signing"), allow(unused_mut))]
    let mut event = CallEvent::aborted(request_id);
    #[cfg(feature = "signing")]
    if let Some(keys) = keys {
        match keys.sign_abort(request_id, operation_id) {
            Ok(signature) => event.set_signature(signature),
            Err(error) => tracing::error!(%error, request_id, "could not sign a call.aborted"),
        }
    }
    #[cfg(not(feature = "signing"))]
    let _ = (keys, operation_id);
    event.to_bytes().ok()
}

/// `<callerId>:<seq>`, written without the formatting machinery (once per call) into a
/// buffer on the stack, then copied into its one allocation. A caller id is at most
/// [`MAX_CALLER_ID_LEN`](topics::MAX_CALLER_ID_LEN) ASCII characters (checked where the map
/// is built), so the buffer always holds it; a longer one would be written through a
/// `String`.
fn request_id(caller_id: &str, seq: u64) -> Arc<str> {
    let mut digits = itoa::Buffer::new();
    let digits = digits.format(seq);
    let len = caller_id.len() + 1 + digits.len();
    let mut text = [0u8; topics::MAX_CALLER_ID_LEN + 1 + 20];
    if let Some(out) = text.get_mut(..len) {
        let (caller, rest) = out.split_at_mut(caller_id.len());
        caller.copy_from_slice(caller_id.as_bytes());
        rest[0] = b':';
        rest[1..].copy_from_slice(digits.as_bytes());
        if let Ok(id) = std::str::from_utf8(out) {
            return Arc::from(id);
        }
    }
    Arc::from([caller_id, ":", digits].concat())
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
        let longest = "c".repeat(crate::protocol::topics::MAX_CALLER_ID_LEN);
        assert_eq!(
            &*super::request_id(&longest, u64::MAX),
            format!("{longest}:{}", u64::MAX).as_str()
        );
        // Longer than any caller id the map takes: written through a `String`.
        let longer = "c".repeat(300);
        assert_eq!(
            &*super::request_id(&longer, 7),
            format!("{longer}:7").as_str()
        );
    }
}
