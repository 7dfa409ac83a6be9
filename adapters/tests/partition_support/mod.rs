//! A loopback TCP proxy that partitions the network without closing anything: it keeps every
//! connection open while passing no byte (no FIN, no RST), in both directions or one, for a
//! while or — for the connections open at that moment — for good while new ones pass. Bytes
//! read during a cut are held and delivered at the heal, as a real network delivers what its
//! retransmissions carry once a partition heals.
#![allow(dead_code, missing_docs)]

pub mod scenario;

use parking_lot::Mutex;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinSet;

/// Which directions pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Flow {
    /// Client → server.
    pub up: bool,
    /// Server → client.
    pub down: bool,
}

impl Flow {
    pub const OPEN: Self = Self {
        up: true,
        down: true,
    };
    pub const CUT: Self = Self {
        up: false,
        down: false,
    };
    /// Only the server's answers are lost (the client's writes arrive).
    pub const DOWN_CUT: Self = Self {
        up: true,
        down: false,
    };
    /// Only the client's writes are held (the server's answers arrive).
    pub const UP_CUT: Self = Self {
        up: false,
        down: true,
    };
}

struct State {
    /// The flow of new connections and of the connections it governs.
    flow: Flow,
    /// How many connections it accepted.
    accepted: usize,
    /// The flow of each connection the proxy governs (those not cut for good).
    connections: Vec<watch::Sender<Flow>>,
}

/// The proxy: listens on a loopback port and forwards each connection to `target`. Every
/// task it runs stops when it is dropped.
pub struct Proxy {
    address: SocketAddr,
    state: Arc<Mutex<State>>,
    tasks: Arc<Mutex<JoinSet<()>>>,
}

impl Proxy {
    pub async fn start(target: SocketAddr) -> Self {
        Self::start_now(target)
    }

    /// [`start`](Self::start) from code that is not async (it must run inside a tokio
    /// runtime, which runs the proxy).
    pub fn start_now(target: SocketAddr) -> Self {
        let listener = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .expect("a loopback port for the proxy");
        listener.set_nonblocking(true).unwrap();
        let listener = TcpListener::from_std(listener).unwrap();
        let address = listener.local_addr().unwrap();
        let state = Arc::new(Mutex::new(State {
            flow: Flow::OPEN,
            accepted: 0,
            connections: Vec::new(),
        }));
        let tasks = Arc::new(Mutex::new(JoinSet::new()));
        let accepting = accept(listener, target, state.clone(), tasks.clone());
        tasks.lock().spawn(accepting);
        Self {
            address,
            state,
            tasks,
        }
    }

    pub fn address(&self) -> SocketAddr {
        self.address
    }

    pub fn port(&self) -> u16 {
        self.address.port()
    }

    /// Sets the flow of every connection it governs and of new ones.
    pub fn set(&self, flow: Flow) {
        let mut state = self.state.lock();
        state.flow = flow;
        state
            .connections
            .retain(|connection| connection.send(flow).is_ok());
    }

    /// Cuts the connections open now for good (both directions, never healed), while new
    /// connections pass.
    pub fn cut_open_connections_for_good(&self) {
        let mut state = self.state.lock();
        for connection in state.connections.drain(..) {
            let _ = connection.send(Flow::CUT);
            // The sender is kept alive by the pumps' receivers' last value; leak nothing:
            // a dropped sender leaves the receivers on their last value (CUT) for good.
        }
        state.flow = Flow::OPEN;
    }

    /// How many connections it accepted so far.
    pub fn accepted(&self) -> usize {
        self.state.lock().accepted
    }

    /// How many connections it governs (open, not cut for good).
    pub fn governed(&self) -> usize {
        let mut state = self.state.lock();
        state
            .connections
            .retain(|connection| !connection.is_closed());
        state.connections.len()
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.tasks.lock().abort_all();
    }
}

async fn accept(
    listener: TcpListener,
    target: SocketAddr,
    state: Arc<Mutex<State>>,
    tasks: Arc<Mutex<JoinSet<()>>>,
) {
    loop {
        let Ok((client, _)) = listener.accept().await else {
            continue;
        };
        let Ok(server) = TcpStream::connect(target).await else {
            continue;
        };
        let _ = client.set_nodelay(true);
        let _ = server.set_nodelay(true);
        let flow = {
            let mut state = state.lock();
            state.accepted += 1;
            let (sender, receiver) = watch::channel(state.flow);
            state.connections.push(sender);
            receiver
        };
        let (client_read, client_write) = client.into_split();
        let (server_read, server_write) = server.into_split();
        let mut tasks = tasks.lock();
        tasks.spawn(pump(client_read, server_write, flow.clone(), |flow| {
            flow.up
        }));
        tasks.spawn(pump(server_read, client_write, flow, |flow| flow.down));
    }
}

/// Copies one direction, holding what it read while `open` says the direction is cut.
/// When the other side closes, the close passes only when the direction is open.
async fn pump(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    mut flow: watch::Receiver<Flow>,
    open: fn(&Flow) -> bool,
) {
    let mut buffer = vec![0_u8; 64 * 1024];
    loop {
        let read = from.read(&mut buffer).await.unwrap_or(0);
        // A dropped sender (cut for good) keeps the last value: wait forever then.
        if flow.wait_for(open).await.is_err() {
            std::future::pending::<()>().await;
        }
        if read == 0 {
            let _ = to.shutdown().await;
            return;
        }
        if to.write_all(&buffer[..read]).await.is_err() {
            return;
        }
    }
}
