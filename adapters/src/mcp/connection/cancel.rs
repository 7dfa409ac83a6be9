//! Cancel-on-drop: `notifications/cancelled` for a request whose caller stopped waiting.

use rmcp::model::{CancelledNotificationParam, RequestId};
use rmcp::{Peer, RoleClient};

/// Sends `notifications/cancelled` for a request when dropped before [`disarm`](Self::disarm).
pub(super) struct CancelOnDrop {
    pub peer: Peer<RoleClient>,
    pub id: Option<RequestId>,
}

impl CancelOnDrop {
    pub(super) fn disarm(&mut self) {
        self.id = None;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let peer = self.peer.clone();
        runtime.spawn(async move {
            let notice = CancelledNotificationParam::new(
                Some(id),
                Some("the caller stopped waiting (cancelled or past its deadline)".to_owned()),
            );
            if let Err(error) = peer.notify_cancelled(notice).await {
                tracing::debug!(target: "opkit_adapters::mcp", %error, "could not send notifications/cancelled");
            }
        });
    }
}
