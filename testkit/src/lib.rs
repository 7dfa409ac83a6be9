//! The test kit of the opkit workspace: what more than one test suite needs, in one place.
//!
//! Every test binary of the workspace (core, adapters, the notes example) takes its helpers
//! from here instead of keeping a copy: free loopback ports ([`ports`]), child processes and
//! in-process tasks stopped when dropped ([`process`]), the call protocol's fixtures (a bus,
//! bounded waits, test operations, a warnings recorder: [`protocol`]), this test binary run again as a child
//! ([`rerun`]), temporary directories removed when dropped ([`dir`]), `redis-server` and Redis
//! Cluster launchers ([`redis`]), an OpenID provider ([`oidc`]), the MCP and HTTP servers the tests run against ([`peers`]), the span recorder of the trace tests ([`trace`]) and the
//! fixture operations of the serving tests ([`fixtures`]).
//!
//! # Invariants
//!
//! Every helper keeps these, so a test that uses them keeps them too:
//!
//! - **Loopback only.** Ports are taken on `127.0.0.1`, servers are told to bind
//!   `127.0.0.1`, URLs name `127.0.0.1`. Nothing listens on another interface.
//! - **Every process is stopped by its PID.** A guard owns each child process the kit starts
//!   and kills it by its PID (SIGKILL) when dropped, also when the test panics; it then reaps
//!   it, so no zombie is left behind.
//! - **Bounded waits.** Every loop that waits for something (a port, a `PING`, a cluster to
//!   form) has a deadline, and fails with a message naming what it waited for.
//! - **Nothing left on disk.** Temporary directories are removed when dropped; redis-server
//!   runs without persistence.
//!
//! The kit is `publish = false` and only ever a `[dev-dependencies]` entry. It depends on
//! `opkit` (the trace recorder reads its span target, the fixtures are operations) and on
//! nothing of `opkit-adapters`, so enabling it never turns on an adapters feature: the
//! helpers that need an adapter (a `RedisPubSub` on a test server, the fixture tokens as
//! `StaticTokens`) stay in the adapters' own test modules.

pub mod dir;
pub mod fixtures;
pub mod oidc;
pub mod peers;
pub mod ports;
pub mod process;
pub mod protocol;
pub mod redis;
pub mod rerun;
pub mod trace;

/// The workspace's root folder (where `adapters/peers` and `scripts` are).
pub fn workspace_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the test kit sits in the workspace")
        .to_path_buf()
}
