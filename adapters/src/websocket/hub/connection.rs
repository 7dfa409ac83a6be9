//! Spoke connections: accepting them, the authenticated handshake, and each connection's
//! loop (pings, silence, frames in, the writer) until the spoke is gone.

use super::auth::{bearer_token, refuse};
use super::link::Link;
use super::outbound::Outbound;
use super::state::{HubState, SpokeState};
use crate::websocket::frame::{self, Header};
use bytes::Bytes;
use futures::{SinkExt, StreamExt};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use tokio::net::{TcpListener, TcpStream};
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::handshake::server::{Request, Response};

/// Accepts connections until the hub shuts down.
pub(super) async fn accept(shared: Arc<HubState>, listener: TcpListener) {
    loop {
        let accepted = tokio::select! {
            () = shared.shutdown.cancelled() => return,
            accepted = listener.accept() => accepted,
        };
        match accepted {
            Ok((stream, peer)) => {
                // Frames are small and often unanswered on the same socket (a receipt, an
                // event): with Nagle's algorithm each would wait for the peer's delayed ACK.
                let _ = stream.set_nodelay(true);
                tokio::spawn(connection(shared.clone(), stream, peer));
            }
            Err(error) => {
                tracing::warn!(%error, "the hub could not accept a connection");
                tokio::time::sleep(shared.options.accept_retry_delay).await;
            }
        }
    }
}

/// Serves one spoke connection: the TLS handshake when the hub has a certificate (bounded by
/// the handshake timeout), then the spoke.
async fn connection(shared: Arc<HubState>, stream: TcpStream, peer: SocketAddr) {
    let Some(tls) = shared.options.tls.clone() else {
        return serve_spoke(shared, stream, peer).await;
    };
    let acceptor = tokio_rustls::TlsAcceptor::from(tls.config);
    match tokio::time::timeout(shared.options.handshake_timeout, acceptor.accept(stream)).await {
        Ok(Ok(stream)) => serve_spoke(shared, stream, peer).await,
        Ok(Err(error)) => tracing::warn!(%peer, %error, "refused a spoke connection: TLS"),
        Err(_) => tracing::warn!(%peer, "a spoke's TLS handshake timed out"),
    }
}

/// Serves one spoke from the WebSocket handshake to disconnection.
// The handshake callback's error type is tungstenite's HTTP response.
#[allow(clippy::result_large_err)]
async fn serve_spoke<S>(shared: Arc<HubState>, stream: S, peer: SocketAddr)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let mut grant = None;
    let verifier = shared.verifier.clone();
    let handshake =
        tokio_tungstenite::accept_hdr_async(stream, |request: &Request, response: Response| {
            match bearer_token(request) {
                None => Err(refuse("missing bearer token")),
                Some(token) => match verifier.verify(token) {
                    Some(granted) => {
                        grant = Some(granted);
                        Ok(response)
                    }
                    None => Err(refuse("invalid token")),
                },
            }
        });
    let socket = match tokio::time::timeout(shared.options.handshake_timeout, handshake).await {
        Ok(Ok(socket)) => socket,
        Ok(Err(error)) => {
            tracing::warn!(%peer, %error, "refused a spoke connection");
            return;
        }
        Err(_) => {
            tracing::warn!(%peer, "a spoke handshake timed out");
            return;
        }
    };
    let Some(grant) = grant else { return };
    let id = shared.next_connection.fetch_add(1, Ordering::Relaxed);
    let name = format!("{}#{id}", grant.name);
    let spoke = Arc::new(Mutex::new(SpokeState {
        name: name.clone(),
        grant,
        subscriptions: HashMap::new(),
        in_flight: HashMap::new(),
        dead: false,
    }));
    let kick = shared.shutdown.child_token();
    shared.spokes.lock().insert(id, spoke.clone());
    shared.kicks.lock().insert(id, kick.clone());
    tracing::info!(spoke = %name, %peer, "spoke connected");

    let (mut sink, mut source) = socket.split();
    let (outbound, mut queue) = Outbound::new(&shared.options, spoke.clone(), kick.clone());
    let writer_stop = kick.clone();
    let writer = tokio::spawn(async move {
        // Frames queued while the socket was busy go out in one batch with one flush.
        while let Some(message) = queue.recv().await {
            match frame::write_batch(&mut sink, message, || queue.try_recv()).await {
                Ok((size, _)) => queue.written(size),
                Err(_) => break,
            }
        }
        writer_stop.cancel();
        let _ = sink.close().await;
    });
    let link = Link {
        shared: shared.clone(),
        spoke: spoke.clone(),
        outbound,
    };
    link.send(frame::encode(
        &Header::Welcome {
            spoke: name.clone(),
        },
        None,
    ));

    let ping_interval = shared.options.ping_interval;
    let pong_timeout = shared.options.pong_timeout;
    let mut ping = tokio::time::interval(ping_interval);
    let mut last_heard = Instant::now();
    // When the ping not yet followed by any frame from the spoke was sent.
    let mut awaiting: Option<Instant> = None;
    loop {
        let silence = async {
            match awaiting {
                Some(sent) => tokio::time::sleep_until(sent + pong_timeout).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = kick.cancelled() => break,
            () = silence => {
                tracing::warn!(spoke = %name, "a spoke did not answer a ping in time: disconnecting it");
                break;
            }
            _ = ping.tick() => {
                if last_heard.elapsed() > ping_interval * shared.options.silent_intervals {
                    tracing::warn!(spoke = %name, "a spoke went silent: disconnecting it");
                    break;
                }
                awaiting.get_or_insert_with(Instant::now);
                link.send(Message::Ping(Bytes::new()));
            }
            message = source.next() => match message {
                Some(Ok(message)) => {
                    last_heard = Instant::now();
                    awaiting = None;
                    if matches!(message, Message::Close(_)) {
                        break;
                    }
                    if let Some(data) = frame::data_of(message) {
                        link.handle(&data).await;
                    }
                }
                Some(Err(error)) => {
                    tracing::debug!(spoke = %name, %error, "a spoke connection failed");
                    break;
                }
                None => break,
            }
        }
    }
    kick.cancel();
    writer.abort();
    shared.spoke_gone(id, &spoke).await;
}
