//! Free loopback ports and bounded waits for them.
//!
//! A port from [`free_port`] was free on `127.0.0.1` a moment ago: the listener that found it
//! is closed before the function returns, so another process could take it in between. The
//! tests accept that race (it is rare on a test machine); servers that can bind port 0
//! themselves should do so instead. A Redis Cluster node needs two ports it cannot choose
//! itself: [`free_port_pair`] takes them below the range outgoing connections draw from.

use std::collections::BTreeSet;
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// A TCP port that was free on 127.0.0.1 a moment ago.
pub fn free_port() -> u16 {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("a free loopback port");
    listener.local_addr().expect("a local address").port()
}

/// A free loopback port whose companion `port + 10000` is free too (a Redis Cluster node's
/// cluster bus port).
///
/// Both are taken below the kernel's ephemeral range (`/proc/sys/net/ipv4/ip_local_port_range`,
/// where outgoing connections get their local ports): a pair from that range could lose its
/// bus port to another test's client socket between this check and the node's bind, and the
/// node would never start. Both ports are bound at once for the check, and a port handed out
/// once in this process is not handed out again. Where the range leaves no room below it, any
/// free pair is taken, as [`free_port`] takes one.
pub fn free_port_pair() -> u16 {
    static GIVEN: Mutex<BTreeSet<u16>> = Mutex::new(BTreeSet::new());
    let mut given = GIVEN.lock().unwrap_or_else(PoisonError::into_inner);
    let low = ephemeral_low().unwrap_or(32_768);
    if let Some(span) = low
        .checked_sub(PAIR_FLOOR + 10_000)
        .filter(|span| *span > 0)
    {
        // A start that differs between processes, then every port of the span once.
        let start = std::process::id() ^ clock_bits();
        for step in 0..u32::from(span) {
            let offset = start.wrapping_add(step) % u32::from(span);
            let port = PAIR_FLOOR + u16::try_from(offset).expect("below the span, a u16");
            if !given.contains(&port) && pair_is_free(port) {
                given.insert(port);
                return port;
            }
        }
    }
    for _ in 0..200 {
        let port = free_port();
        if port <= 55_000 && !given.contains(&port) && pair_is_free(port) {
            given.insert(port);
            return port;
        }
    }
    panic!("no free loopback port pair (port, port + 10000) found");
}

/// The lowest port [`free_port_pair`] hands out below the ephemeral range.
const PAIR_FLOOR: u16 = 10_000;

/// `true` when `port` and `port + 10000` can both be bound on 127.0.0.1 now.
fn pair_is_free(port: u16) -> bool {
    let Some(bus) = port.checked_add(10_000) else {
        return false;
    };
    let first = TcpListener::bind((Ipv4Addr::LOCALHOST, port));
    first.is_ok() && TcpListener::bind((Ipv4Addr::LOCALHOST, bus)).is_ok()
}

/// The first port of the kernel's ephemeral range, when it can be read.
fn ephemeral_low() -> Option<u16> {
    let range = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").ok()?;
    range.split_whitespace().next()?.parse().ok()
}

/// Some bits of the clock, to start a search elsewhere each run.
fn clock_bits() -> u32 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.subsec_nanos())
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Pairs come from below the ephemeral range, each once, both ports bindable.
    #[test]
    fn port_pairs_are_distinct_and_below_the_ephemeral_range() {
        let low = ephemeral_low().unwrap_or(32_768);
        let pairs: Vec<u16> = (0..8).map(|_| free_port_pair()).collect();
        let distinct: BTreeSet<u16> = pairs.iter().copied().collect();
        assert_eq!(distinct.len(), pairs.len(), "{pairs:?}");
        for port in pairs {
            if low > PAIR_FLOOR + 10_000 {
                assert!(port >= PAIR_FLOOR && port + 10_000 < low, "{port}");
            }
            assert!(pair_is_free(port), "{port}");
        }
    }
}
