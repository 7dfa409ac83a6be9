//! The HTTP server's shutdown (`HttpServer::serve_with_shutdown`): once the shutdown future
//! completes, no new connection is served, a call in flight is answered, kept-alive
//! connections are closed, and the serve future returns once every connection has ended.
#![cfg(feature = "http-server")]

use crate::serve_support::{read_answer, read_until_closed, serve_fixtures};

use opkit_adapters::http_server::HttpServer;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// The fixtures served until the returned sender is used (or dropped).
async fn start() -> (
    SocketAddr,
    oneshot::Sender<()>,
    JoinHandle<std::io::Result<()>>,
) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let server = HttpServer::new(serve_fixtures::fixture_registry(true));
    let serving = tokio::spawn(server.serve_with_shutdown(listener, async move {
        let _ = stopped.await;
    }));
    (addr, stop, serving)
}

/// `connection` ends (end of stream or reset) within 10 s, with nothing more sent on it.
async fn closes(connection: &mut TcpStream) {
    let (rest, ended) = read_until_closed(connection, Duration::from_secs(10)).await;
    if ended.is_ok() {
        assert!(rest.is_empty(), "{}", String::from_utf8_lossy(&rest));
    }
}

/// The serve future ends within 10 s (well before a kept-alive connection's 10 s header-read
/// timeout could end it) and without an error.
async fn returns(serving: JoinHandle<std::io::Result<()>>) {
    tokio::time::timeout(Duration::from_secs(10), serving)
        .await
        .expect("serve_with_shutdown returns")
        .unwrap()
        .unwrap();
}

#[tokio::test]
async fn a_call_in_flight_is_answered_and_its_connection_then_closed() {
    let (addr, stop, serving) = start().await;
    let mut connection = TcpStream::connect(addr).await.unwrap();
    connection
        .write_all(b"GET /ops/jobs.slow?ms=500 HTTP/1.1\r\nhost: localhost\r\n\r\n")
        .await
        .unwrap();
    // The call is running when the shutdown comes.
    tokio::time::sleep(Duration::from_millis(100)).await;
    stop.send(()).unwrap();
    let answer = read_answer(&mut connection).await;
    let text = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with(b"HTTP/1.1 200"), "{text}");
    assert!(text.contains("\"done\""), "{text}");
    closes(&mut connection).await;
    returns(serving).await;
    // Nothing listens any more.
    assert!(TcpStream::connect(addr).await.is_err());
}

#[tokio::test]
async fn idle_kept_alive_connections_are_closed_and_the_server_returns() {
    let (addr, stop, serving) = start().await;
    let mut idle = Vec::new();
    for _ in 0..3 {
        let mut connection = TcpStream::connect(addr).await.unwrap();
        connection
            .write_all(b"GET /ops/math.add?a=1&b=2 HTTP/1.1\r\nhost: localhost\r\n\r\n")
            .await
            .unwrap();
        assert!(
            read_answer(&mut connection)
                .await
                .starts_with(b"HTTP/1.1 200")
        );
        idle.push(connection);
    }
    // One connection that has not sent a byte yet.
    let mut silent = TcpStream::connect(addr).await.unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    stop.send(()).unwrap();
    for connection in &mut idle {
        closes(connection).await;
    }
    closes(&mut silent).await;
    returns(serving).await;
}
