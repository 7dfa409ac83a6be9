//! Cancel-on-drop: when a caller stops waiting, the server is told — `notifications/cancelled`
//! for a request, `tasks/cancel` for a task it runs.

use rmcp::model::{CancelTaskParams, CancelledNotificationParam, RequestId};
use rmcp::{Peer, RoleClient};

/// What the server is asked to stop.
pub(super) enum Pending {
    /// A request in flight.
    Request(RequestId),
    /// A task, by id.
    Task(String),
}

/// Tells the server to stop `pending` when dropped before [`disarm`](Self::disarm).
pub(super) struct CancelOnDrop {
    pub peer: Peer<RoleClient>,
    pub pending: Option<Pending>,
}

impl CancelOnDrop {
    pub(super) fn disarm(&mut self) {
        self.pending = None;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let Some(pending) = self.pending.take() else {
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let peer = self.peer.clone();
        runtime.spawn(async move {
            let sent = match pending {
                Pending::Request(id) => {
                    let notice = CancelledNotificationParam::new(
                        Some(id),
                        Some(
                            "the caller stopped waiting (cancelled or past its deadline)"
                                .to_owned(),
                        ),
                    );
                    peer.notify_cancelled(notice).await.map_err(|e| e.to_string())
                }
                Pending::Task(id) => peer
                    .cancel_task(CancelTaskParams::new(id))
                    .await
                    .map_err(|e| e.to_string()),
            };
            if let Err(error) = sent {
                tracing::debug!(target: "opkit_adapters::mcp", %error, "could not tell the server to stop");
            }
        });
    }
}
