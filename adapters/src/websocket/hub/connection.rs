//! Spoke connections: accepting them (within the limits per address), the authenticated
//! handshake (failed attempts throttled per address, connections per token), and each
//! connection's loop (pings, silence, frames in, the writer) until the spoke is gone.

use super::admission::Ticket;
use super::auth::{bearer_token, refuse, too_many};
use super::grant::SpokeGrant;
use super::link::Link;
use super::outbound::{Out, Outbound, OutboundQueue};
use super::state::{HubState, SpokeState};
use crate::websocket::frame::{self, Header, LATE_RECEIPTS, LATE_RECEIPTS_HEADER};
use bytes::Bytes;
use futures::stream::{SplitSink, SplitStream};
use futures::{SinkExt, StreamExt};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::Instant;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tokio_util::sync::CancellationToken;

/// Accepts connections until the hub shuts down.
pub(super) async fn accept(shared: Arc<HubState>, listener: TcpListener) {
    loop {
        let accepted = tokio::select! {
            () = shared.shutdown.cancelled() => return,
            accepted = listener.accept() => accepted,
        };
        match accepted {
            Ok((stream, peer)) => {
                let ticket = match shared.admission.enter(peer.ip()) {
                    Ok(ticket) => ticket,
                    Err(refusal) => {
                        // Closed at once: each place an address holds is bounded.
                        if let Some(left_out) = shared.door_log.admit() {
                            tracing::warn!(%peer, %refusal, left_out, "refused a connection");
                        }
                        continue;
                    }
                };
                // Frames are small and often unanswered on the same socket (a receipt, an
                // event): with Nagle's algorithm each would wait for the peer's delayed ACK.
                let _ = stream.set_nodelay(true);
                tokio::spawn(connection(shared.clone(), stream, peer, ticket));
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
async fn connection(shared: Arc<HubState>, stream: TcpStream, peer: SocketAddr, ticket: Ticket) {
    let Some(tls) = shared.options.tls.clone() else {
        return serve_spoke(shared, stream, peer, ticket).await;
    };
    let acceptor = tokio_rustls::TlsAcceptor::from(tls.config);
    match tokio::time::timeout(shared.options.handshake_timeout, acceptor.accept(stream)).await {
        Ok(Ok(stream)) => serve_spoke(shared, stream, peer, ticket).await,
        Ok(Err(error)) => {
            if let Some(left_out) = shared.door_log.admit() {
                tracing::warn!(%peer, %error, left_out, "refused a spoke connection: TLS");
            }
        }
        Err(_) => {
            if let Some(left_out) = shared.door_log.admit() {
                tracing::warn!(%peer, left_out, "a spoke's TLS handshake timed out");
            }
        }
    }
}

/// Serves one spoke from the WebSocket handshake to disconnection; `ticket` holds its places
/// (its address's, then its token's) until it is gone.
async fn serve_spoke<S>(shared: Arc<HubState>, stream: S, peer: SocketAddr, mut ticket: Ticket)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let Some((socket, grant, late_receipts)) = handshake(&shared, stream, peer, &mut ticket).await
    else {
        return;
    };
    let grant = Arc::new(grant);
    let id = shared.next_connection.fetch_add(1, Ordering::Relaxed);
    let name = format!("{}#{id}", grant.name);
    let spoke = Arc::new(Mutex::new(SpokeState {
        name: name.clone(),
        grant: grant.clone(),
        subscriptions: HashMap::new(),
    }));
    let kick = shared.shutdown.child_token();
    shared.spokes.lock().insert(id, spoke.clone());
    shared.kicks.lock().insert(id, kick.clone());
    tracing::info!(spoke = %name, %peer, "spoke connected");

    let (sink, source) = socket.split();
    let (outbound, queue) = Outbound::new(&shared.options, name.clone(), kick.clone());
    let writer = tokio::spawn(write(sink, queue, kick.clone()));
    let link = Link {
        shared: shared.clone(),
        spoke: spoke.clone(),
        outbound,
        id,
        grant,
        late_receipts,
    };
    link.send(frame::encode(
        &Header::Welcome {
            spoke: name.clone(),
        },
        None,
    ));
    read(&link, source, &kick, &name).await;
    kick.cancel();
    writer.abort();
    shared.spoke_gone(id, &spoke);
    drop(ticket);
}

/// The WebSocket handshake of a spoke (bounded by the handshake timeout): its socket, its
/// grant and whether it reads late receipts; `None` when it was refused (logged here).
// The handshake callback's error type is tungstenite's HTTP response.
#[allow(clippy::result_large_err)]
async fn handshake<S>(
    shared: &HubState,
    stream: S,
    peer: SocketAddr,
    ticket: &mut Ticket,
) -> Option<(WebSocketStream<S>, SpokeGrant, bool)>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mut grant = None;
    let mut refusal = None;
    let mut late_receipts = false;
    let handshake = tokio_tungstenite::accept_hdr_async_with_config(
        stream,
        |request: &Request, response: Response| match admit(shared, peer, request, ticket) {
            Ok(granted) => {
                grant = Some(granted);
                late_receipts = request
                    .headers()
                    .get(LATE_RECEIPTS_HEADER)
                    .is_some_and(|value| value.as_bytes() == LATE_RECEIPTS.as_bytes());
                Ok(response)
            }
            Err((answer, why)) => {
                refusal = Some(why);
                Err(answer)
            }
        },
        Some(frame::socket_config()),
    );
    let socket = match tokio::time::timeout(shared.options.handshake_timeout, handshake).await {
        Ok(Ok(socket)) => socket,
        Ok(Err(error)) => {
            if let Some(left_out) = shared.door_log.admit() {
                let reason = refusal.unwrap_or_else(|| error.to_string());
                tracing::warn!(%peer, %reason, left_out, "refused a spoke connection");
            }
            return None;
        }
        Err(_) => {
            if let Some(left_out) = shared.door_log.admit() {
                tracing::warn!(%peer, left_out, "a spoke handshake timed out");
            }
            return None;
        }
    };
    Some((socket, grant?, late_receipts))
}

/// The spoke's writer: frames queued while the socket was busy go out in one batch with one
/// flush, the receipts held back first (see `receipts.rs`). A failed write stops the
/// connection (`stop`).
async fn write<S>(
    mut sink: SplitSink<WebSocketStream<S>, Message>,
    mut queue: OutboundQueue,
    stop: CancellationToken,
) where
    S: AsyncRead + AsyncWrite + Unpin,
{
    while let Some(item) = queue.recv().await {
        let mut receipts = queue.take_receipts();
        let first = match item {
            Out::Frame(message) => message,
            Out::Receipts => match receipts.take() {
                Some(receipts) => receipts,
                None => continue,
            },
        };
        let (first, mut second) = match receipts {
            Some(receipts) => (receipts, Some(first)),
            None => (first, None),
        };
        let more = || second.take().or_else(|| queue.try_recv());
        match frame::write_batch(&mut sink, first, more).await {
            Ok((size, _)) => queue.written(size),
            Err(_) => break,
        }
    }
    stop.cancel();
    let _ = sink.close().await;
}

/// The spoke's frames, handled as they come, and its pings, until the spoke leaves, fails,
/// goes silent (no frame for the silent intervals, or no answer to a ping within the pong
/// timeout) or is kicked.
async fn read<S>(
    link: &Link,
    mut source: SplitStream<WebSocketStream<S>>,
    kick: &CancellationToken,
    name: &str,
) where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let options = &link.shared.options;
    let mut ping = tokio::time::interval(options.ping_interval);
    let mut last_heard = Instant::now();
    // When the ping not yet followed by any frame from the spoke was sent.
    let mut awaiting: Option<Instant> = None;
    loop {
        let silence = async {
            match awaiting {
                Some(sent) => tokio::time::sleep_until(sent + options.pong_timeout).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = kick.cancelled() => return,
            () = silence => {
                tracing::warn!(spoke = %name, "a spoke did not answer a ping in time: disconnecting it");
                return;
            }
            _ = ping.tick() => {
                if last_heard.elapsed() > options.ping_interval * options.silent_intervals {
                    tracing::warn!(spoke = %name, "a spoke went silent: disconnecting it");
                    return;
                }
                awaiting.get_or_insert_with(Instant::now);
                link.send(Message::Ping(Bytes::new()));
            }
            message = source.next() => match message {
                Some(Ok(message)) => {
                    last_heard = Instant::now();
                    awaiting = None;
                    if matches!(message, Message::Close(_)) {
                        return;
                    }
                    if let Some(data) = frame::data_of(message) {
                        link.handle(&data);
                    }
                }
                Some(Err(error)) => {
                    tracing::debug!(spoke = %name, %error, "a spoke connection failed");
                    return;
                }
                None => return,
            }
        }
    }
}

/// The handshake's decision: the spoke's grant, or the HTTP answer refusing it and why (for
/// the log; never the token). An address past its failed attempts is refused before its
/// token is looked at.
#[allow(clippy::result_large_err)]
fn admit(
    shared: &HubState,
    peer: SocketAddr,
    request: &Request,
    ticket: &mut Ticket,
) -> Result<SpokeGrant, (ErrorResponse, String)> {
    let door = &shared.admission;
    door.check_failures(peer.ip())
        .map_err(|why| (too_many(why.clone()), why))?;
    let Some(token) = bearer_token(request) else {
        door.failed(peer.ip());
        return Err((
            refuse("missing bearer token"),
            "missing bearer token".to_owned(),
        ));
    };
    let Some(grant) = shared.verifier.verify(token) else {
        door.failed(peer.ip());
        return Err((refuse("invalid token"), "invalid token".to_owned()));
    };
    door.hold_token(ticket, token)
        .map_err(|why| (too_many(why.clone()), why))?;
    Ok(grant)
}
