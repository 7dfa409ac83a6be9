//! Closing a call's SSE stream mid-call, for the client to resume (SEP-1699).
//!
//! rmcp's session worker closes a request's stream by the HTTP request id it gave the
//! stream ([`LocalSessionHandle::close_sse_stream`][close]), which the request's handler is not
//! told. [`Resumable`] is the session manager [`McpServer::router`](super::McpServer::router)
//! serves with: rmcp's own, except that opening a request's stream also records, in a
//! [`StreamBook`], which HTTP request id serves which JSON-RPC request of which session, for
//! as long as that stream is open. A call's [`McpSession`](super::McpSession) can then close
//! its own stream ([`McpSession::close_sse_stream`](super::McpSession::close_sse_stream)):
//! the worker sends a priming event with the retry interval and ends the stream, keeps what
//! the call sends next, and the client gets it by reconnecting with `Last-Event-ID`.
//!
//! Invariant: an entry of the book lives exactly as long as its stream (the stream removes
//! it when dropped), so the book holds at most one entry per open request stream.
//!
//! [close]: rmcp::transport::streamable_http_server::session::local::LocalSessionHandle::close_sse_stream

use crate::seeded::Seeded;
use futures::Stream;
use parking_lot::Mutex;
use rmcp::model::{ClientJsonRpcMessage, RequestId, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::SessionManager;
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError,
};
use rmcp::transport::streamable_http_server::session::{
    EventStore, RestoreOutcome, ServerSseMessage, SessionId,
};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

/// Which HTTP request id serves each open request stream, by session and JSON-RPC id.
///
/// Keyed by rmcp's shared session id (a clone is a reference count, where a `String` key
/// was an allocation per request) and hashed with foldhash: the book is written twice per
/// call (the stream opens and ends) and read only to close a stream. It keeps only the HTTP
/// request id: closing, which is rare, finds the session's handle in the manager (a handle
/// kept per entry was a channel sender cloned and dropped on every call).
pub(crate) struct StreamBook {
    open: Mutex<Book>,
    manager: Arc<LocalSessionManager>,
}

/// The open request streams: the HTTP request id of each.
type Book = Seeded<(SessionId, RequestId), u64>;

impl StreamBook {
    /// The book of the request streams of `manager`'s sessions.
    pub(crate) fn new(manager: Arc<LocalSessionManager>) -> Self {
        Self {
            open: Mutex::default(),
            manager,
        }
    }

    /// Closes the stream of request `request` of session `session`, after a priming event
    /// carrying `retry`; `false` when it is not open (already closed, or not a stream) or its
    /// session is gone.
    pub(crate) async fn close(&self, session: &str, request: &RequestId, retry: Duration) -> bool {
        let session = SessionId::from(session);
        let Some(http_request_id) = self
            .open
            .lock()
            .get(&(session.clone(), request.clone()))
            .copied()
        else {
            return false;
        };
        let handle = self.manager.sessions.read().await.get(&session).cloned();
        let Some(handle) = handle else {
            return false;
        };
        handle
            .close_sse_stream(http_request_id, Some(retry))
            .await
            .is_ok()
    }
}

/// rmcp's session manager, with a [`StreamBook`] of the request streams it opens.
pub(crate) struct Resumable {
    pub(crate) inner: Arc<LocalSessionManager>,
    pub(crate) book: Arc<StreamBook>,
}

/// A request's stream; it leaves the book when dropped.
struct Booked {
    messages: tokio::sync::mpsc::Receiver<ServerSseMessage>,
    book: Arc<StreamBook>,
    key: Option<(SessionId, RequestId)>,
}

impl Stream for Booked {
    type Item = ServerSseMessage;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.messages.poll_recv(cx)
    }
}

impl Drop for Booked {
    fn drop(&mut self) {
        if let Some(key) = self.key.take() {
            self.book.open.lock().remove(&key);
        }
    }
}

impl SessionManager for Resumable {
    type Error = LocalSessionManagerError;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        self.inner.create_session().await
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        self.inner.initialize_session(id, message).await
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        self.inner.has_session(id).await
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.inner.close_session(id).await
    }

    /// rmcp's `create_stream`, which also books the stream's HTTP request id.
    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let handle = self
            .inner
            .sessions
            .read()
            .await
            .get(id)
            .cloned()
            .ok_or_else(|| LocalSessionManagerError::SessionNotFound(id.clone()))?;
        let receiver = handle.establish_request_wise_channel().await?;
        let http_request_id = receiver.http_request_id;
        let key = match (&message, http_request_id) {
            (rmcp::model::JsonRpcMessage::Request(request), Some(http_request_id)) => {
                let key = (id.clone(), request.id.clone());
                self.book.open.lock().insert(key.clone(), http_request_id);
                Some(key)
            }
            _ => None,
        };
        let booked = Booked {
            messages: receiver.inner,
            book: self.book.clone(),
            key,
        };
        handle.push_message(message, http_request_id).await?;
        Ok(booked)
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        self.inner.accept_message(id, message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.inner.create_standalone_stream(id).await
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.inner.resume(id, last_event_id).await
    }

    async fn restore_session(
        &self,
        id: SessionId,
    ) -> Result<RestoreOutcome<Self::Transport>, Self::Error> {
        self.inner.restore_session(id).await
    }

    fn event_store(&self) -> Option<Arc<dyn EventStore>> {
        self.inner.event_store()
    }
}
