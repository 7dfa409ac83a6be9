//! The server's accept loop: axum routes behind hyper connections that honour a
//! header-read timeout and a connection limit (what `axum::serve` does not offer). The
//! timeout is kept around each connection, with one alarm ([`super::head_timer`]).

use super::coalesce::Coalescing;
use super::head_timer::{Answer, HeadDeadline, Http2, head_read};
use axum::Router;
use axum::body::Body;
use axum::response::Response;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

/// How long a client may take to send a request's headers (and how long a kept-alive
/// connection may stay idle before its next request) unless
/// [`ConnectionLimits::header_read_timeout`] says otherwise: 10 s.
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// How many connections are served at once unless [`ConnectionLimits::max_connections`] says
/// otherwise: 10,000.
pub const DEFAULT_MAX_CONNECTIONS: usize = 10_000;

/// Connection-level bounds of a server: what [`HttpServer::serve`](super::HttpServer::serve)
/// applies, and what [`serve_router`] applies to any router (an application's own, with
/// opkit's mounted in it).
///
/// ```
/// use opkit_adapters::http_server::ConnectionLimits;
/// use std::time::Duration;
/// let limits = ConnectionLimits::default()
///     .header_read_timeout(Duration::from_secs(5))
///     .max_connections(2_000);
/// ```
#[derive(Debug, Clone, Copy)]
pub struct ConnectionLimits {
    header_read_timeout: Duration,
    max_connections: usize,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        Self {
            header_read_timeout: DEFAULT_HEADER_READ_TIMEOUT,
            max_connections: DEFAULT_MAX_CONNECTIONS,
        }
    }
}

impl ConnectionLimits {
    /// How long a client may take to send a request's headers, and a kept-alive connection
    /// may stay idle ([`DEFAULT_HEADER_READ_TIMEOUT`] unless set): a slower one is closed.
    /// It counts from the connection's start and from each response's end to the next
    /// request's head, over HTTP/1; an HTTP/2 connection only until its first request.
    ///
    /// The connections' alarms are kept by one thread of the process, `opkit-head-alarms`,
    /// started when the first connection is served, not by tokio's timer: a runtime with a
    /// timer pending parks its idle workers with a timeout, which costs every request
    /// served a little CPU.
    #[must_use]
    pub fn header_read_timeout(mut self, timeout: Duration) -> Self {
        self.header_read_timeout = timeout;
        self
    }

    /// How many connections are served at once ([`DEFAULT_MAX_CONNECTIONS`] unless set; a
    /// count past what a `tokio` semaphore holds, `usize::MAX` say, is taken as that
    /// count): further ones wait in the listen backlog until one closes.
    #[must_use]
    pub fn max_connections(mut self, connections: usize) -> Self {
        // More than a semaphore counts is as good as no limit.
        self.max_connections = connections.clamp(1, Semaphore::MAX_PERMITS);
        self
    }
}

/// Serves `router` on `listener` with `limits` until `shutdown` completes, then lets the
/// open connections finish (HTTP/1 keep-alive ends after the current request).
///
/// Invariant: at most `max_connections` connections exist at once — a permit is taken
/// before `accept` and released when the connection's task ends.
pub async fn serve_router(
    listener: TcpListener,
    router: Router,
    limits: ConnectionLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    serve_service(listener, router, limits, shutdown).await
}

/// [`serve_router`] of any service of axum requests (a router wrapped in a layer once, rather
/// than in every route as `Router::layer` does).
pub(crate) async fn serve_service<S>(
    listener: TcpListener,
    service: S,
    limits: ConnectionLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()>
where
    S: tower_service::Service<http::Request<Body>, Response = Response, Error = Infallible>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
{
    let permits = Arc::new(Semaphore::new(limits.max_connections));
    let graceful = GracefulShutdown::new();
    let mut builder = Builder::new(TokioExecutor::new());
    // The header-read timeout is kept around each connection (`HeadDeadline`), not by hyper.
    builder.http2().timer(TokioTimer::new());
    let builder = Arc::new(builder);
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let permit = tokio::select! {
            () = &mut shutdown => break,
            permit = permits.clone().acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => break,
            },
        };
        let (stream, peer) = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    // Out of file descriptors and the like: wait, then accept again.
                    tracing::warn!(%error, "the HTTP server could not accept a connection");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let _ = stream.set_nodelay(true);
        // The peer's address reaches handlers as axum's `ConnectInfo` (the MCP server bounds
        // anonymous sessions per address with it).
        let http2 = Http2::default();
        let service = TowerToHyperService::new(WithPeer {
            service: service.clone(),
            connection: Arc::new(PerConnection {
                extensions: request_extensions(peer),
                http2: http2.clone(),
            }),
        });
        let connection =
            builder.serve_connection_with_upgrades(TokioIo::new(Coalescing::new(stream)), service);
        let connection = HeadDeadline::new(
            graceful.watch(connection.into_owned()),
            limits.header_read_timeout,
            http2,
        );
        tokio::spawn(async move {
            if let Err(error) = connection.await {
                tracing::debug!(%error, "an HTTP connection ended with an error");
            }
            drop(permit);
        });
    }
    drop(listener);
    graceful.shutdown().await;
    Ok(())
}

/// A connection's service, giving every request the peer's address as `ConnectInfo`, and
/// telling the connection's [`HeadDeadline`] of each head read and each answer's end.
///
/// hyper clones it for every request: what the connection's requests share is behind one
/// `Arc`.
#[derive(Clone)]
struct WithPeer<S> {
    service: S,
    connection: Arc<PerConnection>,
}

/// What every request of one connection is given.
struct PerConnection {
    /// A request's extensions as the connection gives them (see [`request_extensions`]).
    extensions: http::Extensions,
    http2: Http2,
}

/// The extensions a request of the connection from `peer` starts with: `ConnectInfo(peer)`,
/// in a map with room for what axum's router adds to it (`OriginalUri`, `MatchedPath`, its
/// path parameters) and a few more.
///
/// A map made by inserting `ConnectInfo` holds three entries before it grows: the router's
/// third insertion moved the whole map to a larger one, on every request. A clone of this one
/// keeps its room (a map's clone has as many buckets as the map).
fn request_extensions(peer: SocketAddr) -> http::Extensions {
    #[derive(Clone)]
    struct Room<const N: usize>;
    let mut extensions = http::Extensions::new();
    extensions.insert(Room::<0>);
    extensions.insert(Room::<1>);
    extensions.insert(Room::<2>);
    extensions.insert(axum::extract::ConnectInfo(peer));
    extensions.remove::<Room<0>>();
    extensions.remove::<Room<1>>();
    extensions.remove::<Room<2>>();
    extensions
}

impl<S> tower_service::Service<http::Request<hyper::body::Incoming>> for WithPeer<S>
where
    S: tower_service::Service<http::Request<Body>, Response = Response, Error = Infallible>,
{
    type Response = http::Response<Answer>;
    type Error = Infallible;
    type Future = Answering<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.service.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<hyper::body::Incoming>) -> Self::Future {
        head_read(request.version(), &self.connection.http2);
        let mut request = request.map(Body::new);
        let extensions = request.extensions_mut();
        if extensions.is_empty() {
            // What hyper gives an HTTP/1 request that is not an upgrade.
            *extensions = self.connection.extensions.clone();
        } else {
            extensions.extend(self.connection.extensions.clone());
        }
        Answering {
            response: self.service.call(request),
        }
    }
}

pin_project_lite::pin_project! {
    /// A response of the connection's service, its body made an [`Answer`].
    struct Answering<F> {
        #[pin]
        response: F,
    }
}

impl<F> Future for Answering<F>
where
    F: Future<Output = Result<Response, Infallible>>,
{
    type Output = Result<http::Response<Answer>, Infallible>;

    fn poll(self: std::pin::Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.project()
            .response
            .poll(cx)
            .map(|answered| answered.map(|response| response.map(Answer::new)))
    }
}

#[cfg(test)]
mod tests {
    use super::request_extensions;
    use axum::extract::ConnectInfo;
    use std::net::SocketAddr;

    #[test]
    fn a_request_starts_with_the_peer_alone() {
        let peer: SocketAddr = "127.0.0.1:4321".parse().unwrap();
        let extensions = request_extensions(peer).clone();
        assert_eq!(extensions.len(), 1);
        assert_eq!(
            extensions
                .get::<ConnectInfo<SocketAddr>>()
                .map(|info| info.0),
            Some(peer)
        );
    }
}
