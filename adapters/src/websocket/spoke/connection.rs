//! One connection to the hub after another: connecting and the handshake ([`open`]),
//! putting a connection in use ([`start`]), reading it until it ends ([`run`]), and
//! reconnecting with backoff ([`supervise`]).

use super::inbound::handle;
use super::state::{Answer, Socket, SpokeShared, transport};
use super::subscription::subscribe_header;
use crate::websocket::frame::{self, Header, LATE_RECEIPTS, LATE_RECEIPTS_HEADER};
use bytes::Bytes;
use futures::stream::{SplitSink, SplitStream};
use futures::{SinkExt, StreamExt};
use opkit::protocol::TransportError;
use std::sync::Arc;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::{HeaderValue, header};
use tokio_tungstenite::tungstenite::{self, Message};
use tokio_util::sync::CancellationToken;

/// Connects, authenticates and waits for the hub's welcome (bounded by the connect timeout).
pub(super) async fn open(inner: &SpokeShared) -> Result<(Socket, String), TransportError> {
    let mut request = inner
        .url
        .as_str()
        .into_client_request()
        .map_err(|error| transport(format!("invalid hub URL: {error}")))?;
    let bearer = HeaderValue::from_str(&format!("Bearer {}", inner.options.token))
        .map_err(|_| transport("the token is not a valid header value"))?;
    request.headers_mut().insert(header::AUTHORIZATION, bearer);
    // This spoke reads receipts sent late, several in one frame (see the hub's `receipts.rs`).
    request.headers_mut().insert(
        LATE_RECEIPTS_HEADER,
        HeaderValue::from_static(LATE_RECEIPTS),
    );
    let connect = async {
        // `TCP_NODELAY` (the last argument): a frame the hub does not answer on this socket
        // must not wait for its delayed ACK (Nagle's algorithm), about 40 ms on Linux.
        let connector = crate::websocket::tls::connector(
            request.uri().scheme_str(),
            inner.options.tls.as_ref(),
        )
        .map_err(transport)?;
        let (mut socket, _) = tokio_tungstenite::connect_async_tls_with_config(
            request,
            Some(frame::socket_config()),
            true,
            Some(connector),
        )
        .await
        .map_err(|error| match error {
            tungstenite::Error::Http(response) => {
                // The hub's reason, when it gave one (a limit it names), bounded.
                let reason = response
                    .body()
                    .as_deref()
                    .map(|body| String::from_utf8_lossy(&body[..body.len().min(512)]))
                    .filter(|reason| !reason.is_empty())
                    .map(|reason| format!(": {reason}"))
                    .unwrap_or_default();
                transport(format!(
                    "the hub refused the connection: {}{reason}",
                    response.status()
                ))
            }
            other => transport(format!("could not connect to the hub: {other}")),
        })?;
        while let Some(message) = socket.next().await {
            let message = message.map_err(|error| transport(format!("hub handshake: {error}")))?;
            let Some(data) = frame::data_of(message) else {
                continue;
            };
            return match frame::decode(&data, usize::MAX) {
                Ok((Header::Welcome { spoke }, _)) => Ok((socket, spoke)),
                Ok((other, _)) => Err(transport(format!(
                    "the hub sent {other:?} instead of a welcome"
                ))),
                Err(error) => Err(transport(format!(
                    "the hub sent a malformed welcome: {error}"
                ))),
            };
        }
        Err(transport(
            "the hub closed the connection during the handshake",
        ))
    };
    match tokio::time::timeout(inner.options.connect_timeout, connect).await {
        Ok(result) => result,
        Err(_) => Err(transport("connecting to the hub timed out")),
    }
}

/// Runs connections one after the other until the spoke is closed.
pub(super) async fn supervise(inner: Arc<SpokeShared>, running: Running) {
    let mut connection = Some(running);
    let mut backoff = inner.options.backoff.clone();
    loop {
        if let Some(running) = connection.take() {
            run(&inner, running).await;
            if inner.closed.is_cancelled() {
                return;
            }
            tracing::warn!(hub = %inner.url, "lost the connection to the hub: reconnecting");
        }
        tokio::select! {
            () = inner.closed.cancelled() => return,
            () = tokio::time::sleep(backoff.step()) => {}
        }
        match open(&inner).await {
            Ok((socket, name)) => {
                tracing::info!(hub = %inner.url, spoke = %name, "reconnected to the hub");
                connection = Some(start(&inner, socket, name));
                backoff.reset();
            }
            Err(error) => {
                tracing::debug!(%error, "the hub is still unreachable");
            }
        }
    }
}

/// A connection in use.
pub(super) struct Running {
    source: SplitStream<Socket>,
    outbound: mpsc::UnboundedSender<Message>,
    writer: tokio::task::JoinHandle<()>,
    /// Cancelled to drop this connection (a request it carried went unanswered).
    kick: CancellationToken,
}

/// Puts a fresh connection in use: subscribes again to every live subscription (under the
/// same ids), then lets publishes and subscribes through.
pub(super) fn start(inner: &Arc<SpokeShared>, socket: Socket, name: String) -> Running {
    let (sink, source) = socket.split();
    let (outbound, queue) = mpsc::unbounded_channel::<Message>();
    let writer = tokio::spawn(write(inner.clone(), sink, queue));
    let mut state = inner.state.lock();
    for (id, sub) in &state.subscriptions {
        let header = subscribe_header(*id, &sub.topic, sub.group.as_deref());
        let _ = outbound.send(frame::encode(&header, None));
    }
    let kick = inner.closed.child_token();
    state.link = Some(outbound.clone());
    state.name = Some(name);
    state.connection += 1;
    state.kick = Some(kick.clone());
    Running {
        source,
        outbound,
        writer,
        kick,
    }
}

/// How many times a connection's sweep runs per request timeout: a publish or subscribe the
/// hub leaves unanswered is noticed between one and a quarter more than the timeout after it
/// was sent.
const SWEEPS_PER_TIMEOUT: u64 = 4;

/// Reads one connection until it ends: closed by either side, failed, dropped by a request
/// that went unanswered (the sweep), or silent — a ping every ping interval, and nothing
/// heard within the pong timeout after one (while a ping is unanswered, `awaiting` holds
/// when it was sent).
async fn run(inner: &SpokeShared, running: Running) {
    let Running {
        mut source,
        outbound,
        writer,
        kick,
    } = running;
    let mut ping = tokio::time::interval(inner.options.ping_interval);
    ping.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let period = inner.options.request_timeout / SWEEPS_PER_TIMEOUT as u32;
    let mut sweep = tokio::time::interval_at(Instant::now() + period, period);
    sweep.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut awaiting: Option<Instant> = None;
    loop {
        let silence = async {
            match awaiting {
                Some(sent) => tokio::time::sleep_until(sent + inner.options.pong_timeout).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = inner.closed.cancelled() => {
                let _ = outbound.send(Message::Close(None));
                break;
            }
            () = kick.cancelled() => break,
            () = silence => {
                tracing::warn!(hub = %inner.url, "the hub went silent: reconnecting");
                break;
            }
            _ = ping.tick() => {
                awaiting.get_or_insert_with(Instant::now);
                let _ = outbound.send(Message::Ping(Bytes::new()));
            }
            _ = sweep.tick() => {
                if answer_overdue(inner) {
                    tracing::warn!(hub = %inner.url, "the hub did not answer a request in time: reconnecting");
                    break;
                }
            }
            message = source.next() => match message {
                Some(Ok(message)) => {
                    awaiting = None;
                    if matches!(message, Message::Close(_)) {
                        break;
                    }
                    if let Some(data) = frame::data_of(message) {
                        handle(inner, &data);
                    }
                }
                Some(Err(error)) => {
                    tracing::debug!(%error, "the connection to the hub failed");
                    break;
                }
                None => break,
            }
        }
    }
    let pending = {
        let mut state = inner.state.lock();
        state.link = None;
        state.kick = None;
        std::mem::take(&mut state.pending)
    };
    for (_, pending) in pending {
        pending.answer(Answer::Lost("disconnected from the hub before it answered"));
    }
    drop(outbound);
    // Let the writer flush a close frame, but not for long; a silent link never flushes it.
    let mut writer = writer;
    if tokio::time::timeout(inner.options.close_timeout, &mut writer)
        .await
        .is_err()
    {
        writer.abort();
    }
}

/// One sweep of the requests waiting for the hub: those sent more than a request timeout
/// ago are answered "did not answer in time"; `true` when there were any (the connection is
/// then dropped: a silent link fails every request sent on it).
fn answer_overdue(inner: &SpokeShared) -> bool {
    let overdue: Vec<_> = {
        let mut state = inner.state.lock();
        state.sweeps += 1;
        let now = state.sweeps;
        let late: Vec<u64> = state
            .pending
            .iter()
            .filter(|(_, pending)| now - pending.since > SWEEPS_PER_TIMEOUT)
            .map(|(id, _)| *id)
            .collect();
        late.into_iter()
            .filter_map(|id| state.pending.remove(&id))
            .collect()
    };
    let any = !overdue.is_empty();
    for pending in overdue {
        pending.answer(Answer::Lost("the hub did not answer in time"));
    }
    any
}

/// How many of a spoke's publishes and subscribes must be waiting for the hub's answer
/// before its writer holds a frame back for others (see [`write`]).
const COALESCE_WHEN_WAITING: usize = 16;

/// Writes the connection's frames until the queue closes, a close frame is written or the
/// socket fails; frames queued while the socket was busy go out in one batch with one flush.
///
/// A task that queues a frame wakes this one, and tokio runs a woken task next: frames queued
/// by many tasks one after another were written one by one, a system call each (at 64 calls
/// in flight, most of a caller's CPU). So when the hub has at least
/// [`COALESCE_WHEN_WAITING`] of this spoke's frames still to answer (it has work; a frame
/// written a moment later waits no longer for it), a frame found alone waits for the runtime
/// to run what is ready and poll its sockets once (`yield_now`), and the frames queued
/// meanwhile go out with it in one write. With fewer waiting, each frame is written at once:
/// holding it back would leave the hub idle and add its wait to the call's latency.
async fn write(
    inner: Arc<SpokeShared>,
    mut sink: SplitSink<Socket, Message>,
    mut queue: mpsc::UnboundedReceiver<Message>,
) {
    // Holding frames back: from when enough wait for the hub until a wait gathers none.
    let mut coalescing = false;
    while let Some(message) = queue.recv().await {
        if queue.is_empty()
            && (coalescing || inner.state.lock().pending.len() >= COALESCE_WHEN_WAITING)
        {
            tokio::task::yield_now().await;
            coalescing = !queue.is_empty();
        }
        match frame::write_batch(&mut sink, message, || queue.try_recv().ok()).await {
            Ok((_, false)) => {}
            Ok((_, true)) | Err(_) => break,
        }
    }
    let _ = sink.close().await;
}
