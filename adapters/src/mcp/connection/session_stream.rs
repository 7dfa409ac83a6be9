//! Knowing when a Streamable HTTP session's own event stream (its `GET` stream) is open.
//!
//! A server sends what belongs to no response (and, some servers, a question a tool call
//! asks) on the session's `GET` stream, and may drop it when no such stream is open (the
//! official TypeScript SDK's server does). rmcp's transport opens the stream in the
//! background once the `initialize` handshake gave a session, so a call made as soon as
//! `connect_http` returned could reach the server first, and a question the server asked
//! about it would be lost: the call would wait for an answer that never comes.
//!
//! [`Watched`] wraps the transport's HTTP client and records two facts: whether a response
//! carried a session id (only then does rmcp open the stream) and when the first attempt to
//! open the stream ended (opened, refused with `405`, or failed). [`SessionStream::ready`]
//! waits for that end, bounded by [`STREAM_PATIENCE`], so the connection is reachable when
//! `connect_http` returns.

use futures::stream::BoxStream;
use http::{HeaderName, HeaderValue};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use sse_stream::Sse;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::sync::watch;

/// How long `connect_http` waits for the session's stream to open: a server that holds the
/// stream's response headers back longer is connected to anyway (and may drop what it sends
/// before they go).
pub(super) const STREAM_PATIENCE: Duration = Duration::from_secs(5);

/// What one transport's client has seen of its session's stream (shared by the client's
/// clones, which rmcp makes for the stream's task).
#[derive(Debug)]
pub(super) struct SessionStream {
    /// A response carried a session id: rmcp opens the session's stream.
    session: AtomicBool,
    /// Set once the first attempt to open the stream ended, however it ended.
    settled: watch::Sender<bool>,
}

impl SessionStream {
    pub(super) fn new() -> Arc<Self> {
        Arc::new(Self {
            session: AtomicBool::new(false),
            settled: watch::Sender::new(false),
        })
    }

    /// Waits until the session's stream is open (or its opening failed), when the handshake
    /// gave a session; returns at once when it gave none. Bounded by [`STREAM_PATIENCE`].
    pub(super) async fn ready(&self, label: &str) {
        if !self.session.load(Ordering::Acquire) {
            return;
        }
        let mut settled = self.settled.subscribe();
        if tokio::time::timeout(STREAM_PATIENCE, settled.wait_for(|done| *done))
            .await
            .is_err()
        {
            tracing::debug!(target: "opkit_adapters::mcp", server = %label,
                "the session's stream did not open within {STREAM_PATIENCE:?}; connected without it");
        }
    }

    fn saw(&self, response: &StreamableHttpPostResponse) {
        if let StreamableHttpPostResponse::Json(_, Some(_))
        | StreamableHttpPostResponse::Sse(_, Some(_)) = response
        {
            self.session.store(true, Ordering::Release);
        }
    }

    fn settle(&self) {
        self.settled.send_replace(true);
    }
}

/// An HTTP client `C` that reports to its [`SessionStream`] (see the module docs); every
/// request is `C`'s, unchanged.
#[derive(Clone)]
pub(super) struct Watched<C> {
    pub client: C,
    pub stream: Arc<SessionStream>,
}

type Opened<E> = Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<E>>;
type Posted<E> = Result<StreamableHttpPostResponse, StreamableHttpError<E>>;

impl<C: StreamableHttpClient + Sync> Watched<C> {
    fn posted(&self, result: Posted<C::Error>) -> Posted<C::Error> {
        if let Ok(response) = &result {
            self.stream.saw(response);
        }
        result
    }

    /// The session's own stream is the one opened without a `Last-Event-ID` (a resumption
    /// names the event it resumes after).
    fn opened(&self, last_event_id: Option<&String>, result: Opened<C::Error>) -> Opened<C::Error> {
        if last_event_id.is_none() {
            self.stream.settle();
        }
        result
    }
}

impl<C: StreamableHttpClient + Sync> StreamableHttpClient for Watched<C> {
    type Error = C::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Posted<C::Error> {
        let result = self
            .client
            .post_message(uri, message, session_id, auth_header, custom_headers)
            .await;
        self.posted(result)
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Posted<C::Error> {
        let result = self
            .client
            .post_message_with_max_sse_event_size(
                uri,
                message,
                session_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await;
        self.posted(result)
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Posted<C::Error> {
        let result = self
            .client
            .post_message_with_response_limits(
                uri,
                message,
                session_id,
                auth_header,
                custom_headers,
                limits,
            )
            .await;
        self.posted(result)
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), StreamableHttpError<C::Error>> {
        self.client
            .delete_session(uri, session_id, auth_header, custom_headers)
            .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Opened<C::Error> {
        let result = self
            .client
            .get_stream(
                uri,
                session_id,
                last_event_id.clone(),
                auth_header,
                custom_headers,
            )
            .await;
        self.opened(last_event_id.as_ref(), result)
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Opened<C::Error> {
        let result = self
            .client
            .get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id.clone(),
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await;
        self.opened(last_event_id.as_ref(), result)
    }
}
