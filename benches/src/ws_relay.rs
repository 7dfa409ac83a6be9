//! The raw WebSocket baseline of opkit's call protocol over `WsHub` (issue 36): a request and
//! its reply relayed through a hub, written with `tokio-tungstenite` alone.
//!
//! The same two hops as an opkit call (caller → hub → serving connection → hub → caller):
//!
//! - frames are text, `<id> <json>`; a connection's first frame names its role, `serve` or
//!   `call` (the hub answers `serve` with `ok` once it routes requests to it);
//! - the hub forwards each request frame from a caller to the serving connection, remembering
//!   which caller sent that id, and each reply frame back to that caller (the id is the route);
//! - the server answers `<id> {"a":..,"b":..}` with `<id> {"sum":..}`;
//! - the caller keeps any number of calls in flight, each waiting for the reply with its id.
//!
//! Every socket has `TCP_NODELAY` (as opkit's hub and spokes set it), and every connection
//! writes through one task that flushes once per batch of queued frames.

use crate::{AddIn, Sum};
use futures::{Sink, SinkExt, StreamExt};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio_tungstenite::tungstenite::{Message, Utf8Bytes};

/// Frames queued for one connection's writer task.
type Outbox = mpsc::UnboundedSender<Message>;

/// Where the hub sends frames: the serving connection, and the caller of each request id.
#[derive(Default)]
struct Routes {
    server: Option<Outbox>,
    callers: HashMap<u64, Outbox>,
}

/// Binds a hub on a loopback port and spawns its accept loop; returns its address.
pub async fn spawn_hub() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = listener.local_addr().expect("address");
    let routes = Arc::new(Mutex::new(Routes::default()));
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            tokio::spawn(hub_connection(tcp, routes.clone()));
        }
    });
    address
}

/// One connection to the hub: its role first, then every frame routed by its id.
async fn hub_connection(tcp: TcpStream, routes: Arc<Mutex<Routes>>) {
    let _ = tcp.set_nodelay(true);
    let Ok(socket) = tokio_tungstenite::accept_async(tcp).await else {
        return;
    };
    let (sink, mut frames) = socket.split();
    let outbox = spawn_writer(sink);
    let Some(Ok(Message::Text(role))) = frames.next().await else {
        return;
    };
    let serving = role.as_str() == "serve";
    if serving {
        routes.lock().expect("routes").server = Some(outbox.clone());
        let _ = outbox.send(Message::text("ok"));
    }
    while let Some(Ok(frame)) = frames.next().await {
        let Some(id) = frame.to_text().ok().and_then(frame_id) else {
            continue;
        };
        let target = {
            let mut routes = routes.lock().expect("routes");
            if serving {
                routes.callers.remove(&id)
            } else {
                routes.callers.insert(id, outbox.clone());
                routes.server.clone()
            }
        };
        if let Some(target) = target {
            let _ = target.send(frame);
        }
    }
}

/// The id of a `<id> <json>` frame.
fn frame_id(frame: &str) -> Option<u64> {
    frame.split_once(' ')?.0.parse().ok()
}

/// Spawns the task that writes `sink`'s frames: it feeds every frame queued so far and flushes
/// once. The task ends when every sender is gone or the socket fails.
fn spawn_writer<S>(mut sink: S) -> Outbox
where
    S: Sink<Message> + Unpin + Send + 'static,
{
    let (outbox, mut queued) = mpsc::unbounded_channel::<Message>();
    tokio::spawn(async move {
        while let Some(frame) = queued.recv().await {
            if sink.feed(frame).await.is_err() {
                return;
            }
            while let Ok(more) = queued.try_recv() {
                if sink.feed(more).await.is_err() {
                    return;
                }
            }
            if sink.flush().await.is_err() {
                return;
            }
        }
    });
    outbox
}

/// Connects to the hub at `hub` (`TCP_NODELAY` on) and sends `role` as the first frame.
async fn connect(
    hub: SocketAddr,
    role: &str,
) -> (
    Outbox,
    futures::stream::SplitStream<
        tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<TcpStream>>,
    >,
) {
    let (socket, _) =
        tokio_tungstenite::connect_async_with_config(format!("ws://{hub}/"), None, true)
            .await
            .expect("connect to the hub");
    let (sink, frames) = socket.split();
    let outbox = spawn_writer(sink);
    outbox.send(Message::text(role)).expect("role");
    (outbox, frames)
}

/// Connects the server to the hub and spawns its loop, which answers every request frame
/// with the sum. Returns once the hub routes requests to it.
pub async fn spawn_server(hub: SocketAddr) -> JoinHandle<()> {
    let (outbox, mut frames) = connect(hub, "serve").await;
    let ready = frames.next().await.expect("the hub's ok").expect("frame");
    assert_eq!(ready.to_text().ok(), Some("ok"));
    tokio::spawn(async move {
        while let Some(Ok(frame)) = frames.next().await {
            if let Some(reply) = frame.to_text().ok().and_then(answer) {
                let _ = outbox.send(Message::text(reply));
            }
        }
    })
}

/// The server's reply to `<id> {"a":..,"b":..}`: `<id> {"sum":..}`.
fn answer(frame: &str) -> Option<String> {
    let (id, body) = frame.split_once(' ')?;
    let input: AddIn = serde_json::from_str(body).ok()?;
    let sum = serde_json::to_string(&Sum {
        sum: input.a + input.b,
    })
    .ok()?;
    Some(format!("{id} {sum}"))
}

/// Calls waiting for their reply, by id.
type Waiting = Arc<Mutex<HashMap<u64, oneshot::Sender<Utf8Bytes>>>>;

/// A caller on one connection to the hub; `add` may be called from many tasks at once.
pub struct RelayCaller {
    outbox: Outbox,
    waiting: Waiting,
    next_id: AtomicU64,
    reader: JoinHandle<()>,
}

impl RelayCaller {
    /// Connects to the hub at `hub` and spawns the task that hands each reply to its call.
    pub async fn connect(hub: SocketAddr) -> Self {
        let (outbox, mut frames) = connect(hub, "call").await;
        let waiting = Waiting::default();
        let reader = {
            let waiting = waiting.clone();
            tokio::spawn(async move {
                while let Some(Ok(frame)) = frames.next().await {
                    let Ok(text) = frame.into_text() else {
                        continue;
                    };
                    let Some(id) = frame_id(text.as_str()) else {
                        continue;
                    };
                    if let Some(call) = waiting.lock().expect("waiting").remove(&id) {
                        let _ = call.send(text);
                    }
                }
            })
        };
        Self {
            outbox,
            waiting,
            next_id: AtomicU64::new(1),
            reader,
        }
    }

    /// `a + b`, computed by the server behind the hub.
    pub async fn add(&self, a: i64, b: i64) -> i64 {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (reply, replied) = oneshot::channel();
        self.waiting.lock().expect("waiting").insert(id, reply);
        let body = serde_json::to_string(&AddIn { a, b }).expect("input");
        self.outbox
            .send(Message::text(format!("{id} {body}")))
            .expect("the connection is open");
        let frame = replied.await.expect("a reply");
        let (_, body) = frame
            .as_str()
            .split_once(' ')
            .expect("an `<id> <json>` reply");
        serde_json::from_str::<Sum>(body).expect("sum").sum
    }
}

impl Drop for RelayCaller {
    fn drop(&mut self) {
        self.reader.abort();
    }
}
