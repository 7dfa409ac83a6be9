//! Who gets in ([`Admission`]): connections per address and per token, and failed token
//! attempts per address. Each admitted connection holds a [`Ticket`] that gives its places back
//! when it is dropped.

use super::options::HubOptions;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// How many addresses' failed attempts are remembered at most: past it the oldest window is
/// forgotten (an address that fails again starts a new one).
const MAX_REMEMBERED_ADDRESSES: usize = 65_536;

/// The hub's door: counts of connections per address and per token, and failed token
/// attempts per address.
///
/// Invariants, each map behind its own lock (leaves: no other lock is taken while one is
/// held):
///
/// * `per_address[a]` is the number of [`Ticket`]s alive for address `a`, `per_token[t]` the
///   number holding token key `t` (entries at zero are removed), so each map holds at most one
///   entry per connection.
/// * `failures` holds at most [`MAX_REMEMBERED_ADDRESSES`] windows; a window older than
///   the failure window counts as none (the sweep removes them).
pub(super) struct Admission {
    options: Limits,
    per_address: Mutex<HashMap<IpAddr, usize>>,
    per_token: Mutex<HashMap<u64, usize>>,
    /// Failed attempts per address: (when the window started, how many in it).
    failures: Mutex<HashMap<IpAddr, (Instant, u32)>>,
    /// Tokens are counted by a keyed hash, never kept.
    token_keys: RandomState,
}

#[derive(Clone, Copy)]
struct Limits {
    per_address: usize,
    per_token: usize,
    failures: u32,
    window: Duration,
}

/// A place held by one connection; dropping it gives the place back.
pub(super) struct Ticket {
    admission: Arc<Admission>,
    address: IpAddr,
    token: Option<u64>,
}

impl Drop for Ticket {
    fn drop(&mut self) {
        release(&self.admission.per_address, &self.address);
        if let Some(token) = self.token {
            release(&self.admission.per_token, &token);
        }
    }
}

fn release<K: std::hash::Hash + Eq>(counts: &Mutex<HashMap<K, usize>>, key: &K) {
    let mut counts = counts.lock();
    if let Some(count) = counts.get_mut(key) {
        *count -= 1;
        if *count == 0 {
            counts.remove(key);
        }
    }
}

impl Admission {
    pub(super) fn new(options: &HubOptions) -> Self {
        Self {
            options: Limits {
                per_address: options.max_connections_per_address,
                per_token: options.max_connections_per_token,
                failures: options.max_failed_tokens,
                window: options.failed_token_window,
            },
            per_address: Mutex::new(HashMap::new()),
            per_token: Mutex::new(HashMap::new()),
            failures: Mutex::new(HashMap::new()),
            token_keys: RandomState::new(),
        }
    }

    /// A place for a new connection from `address`, or the refusal naming the limit.
    pub(super) fn enter(self: &Arc<Self>, address: IpAddr) -> Result<Ticket, String> {
        let mut counts = self.per_address.lock();
        let count = counts.entry(address).or_default();
        if *count >= self.options.per_address {
            return Err(format!(
                "{count} connections from this address, the hub's limit (HubOptions::with_max_connections_per_address)"
            ));
        }
        *count += 1;
        Ok(Ticket {
            admission: self.clone(),
            address,
            token: None,
        })
    }

    /// Whether `address` failed too many token attempts lately: the refusal, naming the limit.
    pub(super) fn check_failures(&self, address: IpAddr) -> Result<(), String> {
        let failures = self.failures.lock();
        match failures.get(&address) {
            Some((since, count))
                if *count >= self.options.failures && since.elapsed() < self.options.window =>
            {
                Err(format!(
                    "{count} failed token attempts from this address within {:?}, the hub's limit (HubOptions::with_max_failed_tokens): wait and retry",
                    self.options.window
                ))
            }
            _ => Ok(()),
        }
    }

    /// Counts a failed token attempt from `address`.
    pub(super) fn failed(&self, address: IpAddr) {
        let mut failures = self.failures.lock();
        let now = Instant::now();
        if !failures.contains_key(&address) && failures.len() >= MAX_REMEMBERED_ADDRESSES {
            let oldest = failures
                .iter()
                .min_by_key(|(_, (since, _))| *since)
                .map(|(address, _)| *address);
            if let Some(oldest) = oldest {
                failures.remove(&oldest);
            }
        }
        let (since, count) = failures.entry(address).or_insert((now, 0));
        if now.duration_since(*since) >= self.options.window {
            *since = now;
            *count = 0;
        }
        *count = count.saturating_add(1);
    }

    /// Takes a place for `token` on the connection holding `ticket`, or the refusal naming
    /// the limit.
    pub(super) fn hold_token(&self, ticket: &mut Ticket, token: &str) -> Result<(), String> {
        let key = self.token_keys.hash_one(token);
        let mut counts = self.per_token.lock();
        let count = counts.entry(key).or_default();
        if *count >= self.options.per_token {
            return Err(format!(
                "{count} connections hold this token, the hub's limit (HubOptions::with_max_connections_per_token)"
            ));
        }
        *count += 1;
        ticket.token = Some(key);
        Ok(())
    }

    /// Forgets the failure windows that ended.
    pub(super) fn sweep(&self) {
        let window = self.options.window;
        self.failures
            .lock()
            .retain(|_, (since, _)| since.elapsed() < window);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn admission(per_address: usize, per_token: usize, failures: u32) -> Arc<Admission> {
        let options = HubOptions::default()
            .with_max_connections_per_address(per_address)
            .with_max_connections_per_token(per_token)
            .with_max_failed_tokens(failures, Duration::from_secs(3600));
        Arc::new(Admission::new(&options))
    }

    #[test]
    fn places_are_counted_and_given_back() {
        let door = admission(2, 1, 3);
        let here: IpAddr = [127, 0, 0, 1].into();
        let there: IpAddr = [127, 0, 0, 2].into();
        let mut first = door.enter(here).unwrap();
        let mut second = door.enter(here).unwrap();
        let refused = door.enter(here).err().expect("over the limit");
        assert!(
            refused.contains("with_max_connections_per_address"),
            "{refused}"
        );
        let _elsewhere = door.enter(there).unwrap();
        door.hold_token(&mut first, "t").unwrap();
        assert!(
            door.hold_token(&mut second, "t")
                .unwrap_err()
                .contains("with_max_connections_per_token")
        );
        door.hold_token(&mut second, "u").unwrap();
        drop(first);
        let mut third = door.enter(here).unwrap();
        door.hold_token(&mut third, "t").unwrap();
        drop((second, third));
        assert!(door.per_address.lock().get(&here).is_none());
        assert!(door.per_token.lock().is_empty());
    }

    #[test]
    fn failures_block_an_address_within_the_window() {
        let door = admission(10, 10, 3);
        let here: IpAddr = [127, 0, 0, 1].into();
        for _ in 0..3 {
            assert!(door.check_failures(here).is_ok());
            door.failed(here);
        }
        assert!(
            door.check_failures(here)
                .unwrap_err()
                .contains("with_max_failed_tokens")
        );
        assert!(door.check_failures([127, 0, 0, 2].into()).is_ok());
    }
}
