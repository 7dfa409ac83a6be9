//! Streamable HTTP sessions held to their owner and to bounds: a session belongs to the
//! identity that opened it (or to "anonymous"), another caller presenting its id is answered
//! as for an unknown session, and how many sessions exist — in all, per identity, per
//! anonymous address — and how long an idle one lives are bounded ([`SessionLimits`]).
//!
//! rmcp creates sessions on `initialize` and knows nothing of callers, so this is a service
//! ([`Guarded`]) in front of its service sharing a [`Sessions`] book with a sweeper task:
//!
//! - a request naming a session (`mcp-session-id`) passes only when its caller owns it;
//!   a session this book does not know goes through, for rmcp to answer `404` itself;
//! - a request naming none may open one: it takes a slot first (refused past a bound, when
//!   it is an `initialize`), and the slot becomes the session's when rmcp's answer carries
//!   a new session id, or is given back otherwise;
//! - the sweeper closes sessions idle longer than the timeout with no response still
//!   streaming (an open SSE stream keeps its session alive).
//!
//! # Invariants
//!
//! `owned` counts, for every owner, the sessions it holds plus the slots it reserved; `total`
//! is their sum. A slot is reserved under the lock and given back (dropped) or turned into a
//! session under the lock, so the counts never exceed the bounds, whatever the concurrency.
//! A session leaves the book (and its counts) exactly once: by `DELETE`, by the sweeper, or
//! when rmcp no longer knows it.
//!
//! What every request of a session updates — when it was last seen, how many of its responses
//! still stream — is kept beside the book in the session's [`Live`], in atomics, so that a
//! request takes the book's lock once (to check its owner). A stream that ends stores when it
//! was seen before it decrements the count (release), and the sweeper reads the count
//! (acquire) before that time: a session whose last stream just ended is seen as touched.

use super::RequestIdentity;
use crate::seeded::Seeded;
use axum::BoxError;
use axum::body::{Body, Bytes, HttpBody};
use axum::extract::{ConnectInfo, Request};
use axum::response::{IntoResponse, Response};
use futures::future::BoxFuture;
use http::{Method, StatusCode, header};
use hyper::body::{Frame, SizeHint};
use opkit::Identity;
use parking_lot::Mutex;
use rmcp::transport::streamable_http_server::SessionManager;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use std::collections::HashMap;
use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tower_service::Service;

/// How many Streamable HTTP sessions may exist at once unless [`SessionLimits`] says
/// otherwise: 4,096 (an idle session holds about 55 KB).
pub const DEFAULT_MAX_SESSIONS: usize = 4_096;
/// How many sessions one identity may hold at once: 32.
pub const DEFAULT_MAX_SESSIONS_PER_IDENTITY: usize = 32;
/// How many anonymous sessions one client address may hold at once: 8.
pub const DEFAULT_MAX_ANONYMOUS_SESSIONS_PER_ADDRESS: usize = 8;
/// How long a session may stay idle (no request, no response streaming) before it is
/// closed: 5 minutes.
pub const DEFAULT_SESSION_IDLE_TIMEOUT: Duration = Duration::from_secs(300);

/// The header naming a request's session (a `HeaderName`: one looked up by its text is
/// parsed on every lookup).
pub(super) const SESSION_HEADER: http::HeaderName = http::HeaderName::from_static("mcp-session-id");

/// The bounds on Streamable HTTP sessions of an [`McpServer`](super::McpServer)
/// ([`McpServer::session_limits`](super::McpServer::session_limits)).
///
/// ```
/// use opkit_adapters::mcp_server::SessionLimits;
/// use std::time::Duration;
/// let limits = SessionLimits::default()
///     .max_sessions(10_000)
///     .per_identity(8)
///     .anonymous_per_address(2)
///     .idle_timeout(Duration::from_secs(120));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionLimits {
    max_sessions: usize,
    per_identity: usize,
    anonymous_per_address: usize,
    idle_timeout: Duration,
}

impl Default for SessionLimits {
    fn default() -> Self {
        Self {
            max_sessions: DEFAULT_MAX_SESSIONS,
            per_identity: DEFAULT_MAX_SESSIONS_PER_IDENTITY,
            anonymous_per_address: DEFAULT_MAX_ANONYMOUS_SESSIONS_PER_ADDRESS,
            idle_timeout: DEFAULT_SESSION_IDLE_TIMEOUT,
        }
    }
}

impl SessionLimits {
    /// How many sessions may exist at once ([`DEFAULT_MAX_SESSIONS`] unless set).
    #[must_use]
    pub fn max_sessions(mut self, sessions: usize) -> Self {
        self.max_sessions = sessions;
        self
    }

    /// How many sessions one identity may hold ([`DEFAULT_MAX_SESSIONS_PER_IDENTITY`]).
    #[must_use]
    pub fn per_identity(mut self, sessions: usize) -> Self {
        self.per_identity = sessions;
        self
    }

    /// How many anonymous sessions one client address may hold
    /// ([`DEFAULT_MAX_ANONYMOUS_SESSIONS_PER_ADDRESS`]). The address is the connection's
    /// peer (`ConnectInfo`, which [`serve_router`](crate::http_server::serve_router) and
    /// [`McpServer::serve_http`](super::McpServer::serve_http) provide); behind a proxy
    /// every client shares the proxy's.
    #[must_use]
    pub fn anonymous_per_address(mut self, sessions: usize) -> Self {
        self.anonymous_per_address = sessions;
        self
    }

    /// How long a session may stay idle before it is closed
    /// ([`DEFAULT_SESSION_IDLE_TIMEOUT`]); a client whose session was closed gets `404` and
    /// initializes again, as the MCP spec has it.
    #[must_use]
    pub fn idle_timeout(mut self, timeout: Duration) -> Self {
        self.idle_timeout = timeout;
        self
    }

    /// The idle timeout.
    pub fn idle(&self) -> Duration {
        self.idle_timeout
    }
}

/// Who a session belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Owner {
    Identity(String),
    Anonymous,
}

/// What the counts of a bound are kept by.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Counted {
    Identity(String),
    Address(Option<IpAddr>),
}

struct Session {
    owner: Owner,
    counted: Counted,
    live: Arc<Live>,
}

/// What a session's requests update without the book's lock (see the module docs).
#[derive(Debug, Default)]
struct Live {
    /// Responses of this session still streaming.
    streaming: AtomicUsize,
    /// When the session was last seen, in nanoseconds after the book's `base`.
    last_seen: AtomicU64,
}

impl Live {
    fn touch(&self, base: Instant) {
        self.last_seen
            .store(nanos_since(base, Instant::now()), Ordering::Relaxed);
    }
}

/// `at` in nanoseconds after `base` (0 before it).
fn nanos_since(base: Instant, at: Instant) -> u64 {
    u64::try_from(at.saturating_duration_since(base).as_nanos()).unwrap_or(u64::MAX)
}

/// What the book says of a request's session id.
#[derive(Debug)]
enum Checked {
    /// The book does not know it.
    Unknown,
    /// Another caller holds it.
    Foreign,
    /// The caller holds it (touched now).
    Held(Arc<Live>),
}

/// The sessions by id, hashed with foldhash: looked up on every request of a session and
/// again when its streaming response ends.
#[derive(Default)]
struct Book {
    sessions: Seeded<Arc<str>, Session>,
    counts: HashMap<Counted, usize>,
    total: usize,
}

impl Book {
    fn release(&mut self, counted: &Counted) {
        self.total -= 1;
        if let Some(count) = self.counts.get_mut(counted) {
            *count -= 1;
            if *count == 0 {
                self.counts.remove(counted);
            }
        }
    }
}

/// The sessions of one server (see the module docs).
pub(super) struct Sessions {
    limits: SessionLimits,
    book: Mutex<Book>,
    /// The instant the sessions' `last_seen` times count from.
    base: Instant,
    manager: Arc<LocalSessionManager>,
    sweeping: std::sync::Once,
}

/// A slot taken for a session that may be opened; given back when dropped unconsumed.
struct Slot {
    sessions: Arc<Sessions>,
    counted: Option<Counted>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        if let Some(counted) = self.counted.take() {
            self.sessions.book.lock().release(&counted);
        }
    }
}

/// Counts a streaming response of a session until the response ends (it is dropped), when
/// the session is touched.
struct Streaming {
    live: Arc<Live>,
    base: Instant,
}

impl Streaming {
    fn start(live: Arc<Live>, base: Instant) -> Self {
        live.streaming.fetch_add(1, Ordering::Relaxed);
        Self { live, base }
    }
}

impl Drop for Streaming {
    fn drop(&mut self) {
        // Seen first, then no longer streaming: see the module docs.
        self.live.touch(self.base);
        self.live.streaming.fetch_sub(1, Ordering::Release);
    }
}

impl Sessions {
    pub(super) fn new(limits: SessionLimits, manager: Arc<LocalSessionManager>) -> Arc<Self> {
        Arc::new(Self {
            limits,
            book: Mutex::default(),
            base: Instant::now(),
            manager,
            sweeping: std::sync::Once::new(),
        })
    }

    /// Takes a slot for a session `owner` (from `address`) may open, or the bound it would
    /// pass.
    fn reserve(
        self: &Arc<Self>,
        owner: &Owner,
        address: Option<IpAddr>,
    ) -> Result<Slot, &'static str> {
        let (counted, bound, what) = match owner {
            Owner::Identity(id) => (
                Counted::Identity(id.clone()),
                self.limits.per_identity,
                "sessions per identity",
            ),
            Owner::Anonymous => (
                Counted::Address(address),
                self.limits.anonymous_per_address,
                "anonymous sessions per address",
            ),
        };
        let mut book = self.book.lock();
        if book.total >= self.limits.max_sessions {
            return Err("sessions in all");
        }
        let count = book.counts.entry(counted.clone()).or_default();
        if *count >= bound {
            return Err(what);
        }
        *count += 1;
        book.total += 1;
        Ok(Slot {
            sessions: self.clone(),
            counted: Some(counted),
        })
    }

    /// Turns `slot` into the session `id` of `owner`, whose [`Live`] it answers.
    fn open(self: &Arc<Self>, mut slot: Slot, id: String, owner: Owner) -> Option<Arc<Live>> {
        let counted = slot.counted.take()?;
        let id: Arc<str> = Arc::from(id);
        let live = Arc::new(Live::default());
        live.touch(self.base);
        let session = Session {
            owner,
            counted,
            live: live.clone(),
        };
        let mut book = self.book.lock();
        if let Some(replaced) = book.sessions.insert(id, session) {
            // rmcp never reuses an id; should it, the old entry's count goes.
            book.release(&replaced.counted);
        }
        drop(book);
        self.sweeping
            .call_once(|| spawn_sweeper(Arc::downgrade(self)));
        Some(live)
    }

    /// Whether the session `id` is known, and then whether `owner` holds it (touching it).
    fn check(&self, id: &str, owner: &Owner) -> Checked {
        let book = self.book.lock();
        match book.sessions.get(id) {
            None => Checked::Unknown,
            Some(session) if session.owner != *owner => Checked::Foreign,
            Some(session) => {
                session.live.touch(self.base);
                Checked::Held(session.live.clone())
            }
        }
    }

    /// Forgets the session `id`.
    fn forget(&self, id: &str) {
        let mut book = self.book.lock();
        if let Some(session) = book.sessions.remove(id) {
            book.release(&session.counted);
        }
    }

    /// The sessions idle past the timeout, taken out of the book.
    fn expired(&self, now: Instant) -> Vec<Arc<str>> {
        let idle = u64::try_from(self.limits.idle_timeout.as_nanos()).unwrap_or(u64::MAX);
        let now = nanos_since(self.base, now);
        let mut book = self.book.lock();
        let expired: Vec<Arc<str>> = book
            .sessions
            .iter()
            .filter(|(_, session)| {
                // The count before the time (see the module docs).
                session.live.streaming.load(Ordering::Acquire) == 0
                    && now.saturating_sub(session.live.last_seen.load(Ordering::Relaxed)) > idle
            })
            .map(|(id, _)| id.clone())
            .collect();
        for id in &expired {
            if let Some(session) = book.sessions.remove(id) {
                book.release(&session.counted);
            }
        }
        expired
    }

    /// How many sessions are open (for tests and metrics).
    #[cfg(test)]
    fn open_count(&self) -> usize {
        self.book.lock().sessions.len()
    }
}

/// Closes expired sessions until the server is dropped: every quarter of the idle timeout
/// (at least every second, at most every minute).
fn spawn_sweeper(sessions: Weak<Sessions>) {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return;
    };
    runtime.spawn(async move {
        loop {
            let every = match sessions.upgrade() {
                Some(sessions) => (sessions.limits.idle_timeout / 4)
                    .clamp(Duration::from_secs(1), Duration::from_secs(60)),
                None => return,
            };
            tokio::time::sleep(every).await;
            let Some(sessions) = sessions.upgrade() else {
                return;
            };
            for id in sessions.expired(Instant::now()) {
                tracing::debug!(session = %id, "closing an idle MCP session");
                if let Err(error) = sessions.manager.close_session(&id).await {
                    tracing::debug!(%error, "an idle MCP session could not be closed");
                }
            }
        }
    });
}

/// The guard in front of rmcp's service (see the module docs): a tower [`Service`] wrapping
/// it, not an axum `from_fn` middleware, so a request that passes costs one boxed future
/// (no boxed `Next`, no clone of the inner service, no second future around it).
#[derive(Clone)]
pub(super) struct Guarded<S> {
    pub(super) sessions: Arc<Sessions>,
    pub(super) inner: S,
}

impl<S, B> Service<Request> for Guarded<S>
where
    S: Service<Request, Response = http::Response<B>, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send + 'static,
    B: HttpBody<Data = Bytes> + Unpin + Send + 'static,
    B::Error: Into<BoxError>,
{
    type Response = Response;
    type Error = Infallible;
    type Future = BoxFuture<'static, Result<Response, Infallible>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        let sessions = self.sessions.clone();
        // The gate's identity when there is an authenticator, else the application's own.
        let identity = match request.extensions().get::<RequestIdentity>() {
            Some(RequestIdentity(identity)) => identity.as_ref(),
            None => request.extensions().get::<Identity>(),
        };
        let owner = owner_of(identity);
        // The header's value is shared, not copied: the id is read from it again below.
        let session = request.headers().get(SESSION_HEADER).cloned();
        let id = session.as_ref().and_then(|value| value.to_str().ok());
        match id.map(|id| sessions.check(id, &owner)) {
            Some(Checked::Foreign) => Box::pin(std::future::ready(Ok(not_found()))),
            Some(Checked::Held(live)) => {
                let delete = request.method() == Method::DELETE;
                let response = self.inner.call(request);
                Box::pin(async move {
                    let response = response.await?;
                    let id = session
                        .as_ref()
                        .and_then(|value| value.to_str().ok())
                        .unwrap_or_default();
                    if (delete && response.status().is_success())
                        || response.status() == StatusCode::NOT_FOUND
                    {
                        // Closed by the client, or rmcp no longer knows it (it closed it
                        // itself).
                        sessions.forget(id);
                        return Ok(response.map(Body::new));
                    }
                    Ok(track_stream(&sessions, live, response))
                })
            }
            None if request.method() == Method::POST => {
                let address = request
                    .extensions()
                    .get::<ConnectInfo<SocketAddr>>()
                    .map(|ConnectInfo(address)| address.ip());
                // Opening may read the body first: the call goes to a clone of the service.
                let inner = self.inner.clone();
                Box::pin(async move { Ok(open(sessions, owner, address, request, inner).await) })
            }
            // A session this book does not know goes through, for rmcp to answer `404` itself.
            Some(Checked::Unknown) | None => {
                let response = self.inner.call(request);
                Box::pin(async move { Ok(response.await?.map(Body::new)) })
            }
        }
    }
}

/// A request without a session that may open one.
async fn open<S, B>(
    sessions: Arc<Sessions>,
    owner: Owner,
    address: Option<IpAddr>,
    request: Request,
    mut inner: S,
) -> Response
where
    S: Service<Request, Response = http::Response<B>, Error = Infallible>,
    B: HttpBody<Data = Bytes> + Unpin + Send + 'static,
    B::Error: Into<BoxError>,
{
    let (slot, request) = match sessions.reserve(&owner, address) {
        Ok(slot) => (Some(slot), request),
        Err(bound) => {
            // Only an `initialize` opens a session: anything else goes on without a slot.
            let (parts, body) = request.into_parts();
            let Ok(bytes) = axum::body::to_bytes(body, super::gate::MAX_PEEKED_BODY).await else {
                return (
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "the request body is too large",
                )
                    .into_response();
            };
            if initializes(&bytes) {
                return refused(&sessions.limits, bound);
            }
            (None, Request::from_parts(parts, Body::from(bytes)))
        }
    };
    let Ok(()) = std::future::poll_fn(|cx| inner.poll_ready(cx)).await;
    let Ok(response) = inner.call(request).await;
    let opened = response
        .headers()
        .get(SESSION_HEADER)
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    match (slot, opened) {
        (Some(slot), Some(id)) => match sessions.open(slot, id, owner) {
            Some(live) => track_stream(&sessions, live, response),
            None => response.map(Body::new),
        },
        _ => response.map(Body::new),
    }
}

/// Keeps the session (`live`) of a streaming (SSE) response alive while it streams.
fn track_stream<B>(sessions: &Sessions, live: Arc<Live>, response: http::Response<B>) -> Response
where
    B: HttpBody<Data = Bytes> + Unpin + Send + 'static,
    B::Error: Into<BoxError>,
{
    let streams = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("text/event-stream"));
    if !streams {
        return response.map(Body::new);
    }
    let alive = Streaming::start(live, sessions.base);
    response.map(|body| {
        Body::new(Tracked {
            body,
            _alive: alive,
        })
    })
}

/// A streaming response's body, holding its session's [`Streaming`] guard until it is
/// dropped (its frames passed on as they are).
struct Tracked<B> {
    body: B,
    _alive: Streaming,
}

impl<B: HttpBody + Unpin> HttpBody for Tracked<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<B::Data>, B::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

fn owner_of(identity: Option<&Identity>) -> Owner {
    match identity {
        Some(identity) => Owner::Identity(identity.id.clone()),
        None => Owner::Anonymous,
    }
}

/// Whether `body` is a JSON-RPC `initialize` request (or a batch holding one).
fn initializes(body: &[u8]) -> bool {
    let Ok(message) = serde_json::from_slice::<serde_json::Value>(body) else {
        return false;
    };
    let is_initialize = |message: &serde_json::Value| {
        message.get("method").and_then(|m| m.as_str()) == Some("initialize")
    };
    match &message {
        serde_json::Value::Array(batch) => batch.iter().any(is_initialize),
        single => is_initialize(single),
    }
}

/// What rmcp answers for a session it does not know: a caller presenting another's session
/// learns nothing more.
fn not_found() -> Response {
    (StatusCode::NOT_FOUND, "Not Found: Session not found").into_response()
}

/// A new session past a bound: `503` with `Retry-After` and a JSON-RPC error naming it.
fn refused(limits: &SessionLimits, bound: &str) -> Response {
    let message = format!(
        "no new MCP session: the server holds as many {bound} as it allows (McpServer::session_limits); close an unused session (DELETE) or wait for an idle one to expire ({} s)",
        limits.idle_timeout.as_secs()
    );
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {"code": -32000, "message": message},
    });
    let mut response = (StatusCode::SERVICE_UNAVAILABLE, axum::Json(body)).into_response();
    response.headers_mut().insert(
        header::RETRY_AFTER,
        http::HeaderValue::from(limits.idle_timeout.as_secs().max(1)),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sessions(limits: SessionLimits) -> Arc<Sessions> {
        Sessions::new(limits, Arc::new(LocalSessionManager::default()))
    }

    #[test]
    fn bounds_count_reserved_and_open_sessions_and_release_them() {
        let sessions = sessions(
            SessionLimits::default()
                .max_sessions(3)
                .anonymous_per_address(2)
                .per_identity(1),
        );
        let here = Some(IpAddr::from([127, 0, 0, 1]));
        let a = sessions.reserve(&Owner::Anonymous, here).unwrap();
        let b = sessions.reserve(&Owner::Anonymous, here).unwrap();
        assert_eq!(
            sessions.reserve(&Owner::Anonymous, here).err(),
            Some("anonymous sessions per address")
        );
        drop(b);
        let b = sessions.reserve(&Owner::Anonymous, here).unwrap();
        let ann = Owner::Identity("ann".into());
        let c = sessions.reserve(&ann, here).unwrap();
        assert_eq!(
            sessions.reserve(&Owner::Identity("bob".into()), None).err(),
            Some("sessions in all")
        );
        sessions.open(a, "s1".into(), Owner::Anonymous);
        sessions.open(c, "s2".into(), ann.clone());
        drop(b);
        assert!(matches!(sessions.check("s2", &ann), Checked::Held(_)));
        assert!(matches!(
            sessions.check("s2", &Owner::Anonymous),
            Checked::Foreign
        ));
        assert!(matches!(sessions.check("s1", &ann), Checked::Foreign));
        assert!(matches!(sessions.check("nope", &ann), Checked::Unknown));
        assert_eq!(
            sessions.reserve(&ann, here).err(),
            Some("sessions per identity")
        );
        sessions.forget("s2");
        assert!(sessions.reserve(&ann, here).is_ok());
        assert_eq!(sessions.open_count(), 1);
    }

    #[test]
    fn idle_sessions_expire_unless_a_response_streams() {
        let sessions = sessions(SessionLimits::default().idle_timeout(Duration::from_secs(10)));
        let slot = sessions.reserve(&Owner::Anonymous, None).unwrap();
        sessions.open(slot, "s1".into(), Owner::Anonymous);
        let slot = sessions.reserve(&Owner::Anonymous, None).unwrap();
        sessions.open(slot, "s2".into(), Owner::Anonymous);
        let Checked::Held(live) = sessions.check("s2", &Owner::Anonymous) else {
            panic!("s2 is held")
        };
        let streaming = Streaming::start(live, sessions.base);
        let later = Instant::now() + Duration::from_secs(11);
        assert_eq!(sessions.expired(later), [Arc::from("s1")]);
        drop(streaming);
        let soon = Instant::now() + Duration::from_secs(5);
        assert!(
            sessions.expired(soon).is_empty(),
            "touched when its stream ended"
        );
        assert_eq!(
            sessions.expired(soon + Duration::from_secs(11)),
            [Arc::from("s2")]
        );
        assert_eq!(sessions.book.lock().total, 0);
    }
}
