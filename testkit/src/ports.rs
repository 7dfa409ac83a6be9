//! Free loopback ports and bounded waits for them.
//!
//! A port from [`free_port`] was free on `127.0.0.1` a moment ago: the listener that found it
//! is closed before the function returns, so another process could take it in between. The
//! tests accept that race (it is rare on a test machine); servers that can bind port 0
//! themselves should do so instead.

use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

/// A TCP port that was free on 127.0.0.1 a moment ago.
pub fn free_port() -> u16 {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("a free loopback port");
    listener.local_addr().expect("a local address").port()
}

/// A free loopback port whose companion `port + 10000` is free too (a Redis Cluster node's
/// cluster bus port).
pub fn free_port_pair() -> u16 {
    for _ in 0..200 {
        let port = free_port();
        if port > 55_000 {
            continue;
        }
        if TcpListener::bind((Ipv4Addr::LOCALHOST, port + 10_000)).is_ok() {
            return port;
        }
    }
    panic!("no free loopback port pair (port, port + 10000) found in 200 tries");
}

/// `true` when something accepts a TCP connection on `127.0.0.1:port` (within 200 ms).
pub fn accepts(port: u16) -> bool {
    let address = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    TcpStream::connect_timeout(&address, Duration::from_millis(200)).is_ok()
}

/// Polls `condition` every `every` until it holds; panics naming `what` after `patience`.
pub fn wait_until(
    what: &str,
    patience: Duration,
    every: Duration,
    mut condition: impl FnMut() -> bool,
) {
    let started = Instant::now();
    while !condition() {
        assert!(
            started.elapsed() < patience,
            "{what}: not within {patience:?}"
        );
        std::thread::sleep(every);
    }
}
