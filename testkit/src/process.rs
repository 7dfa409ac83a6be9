//! Child processes, and in-process tasks, stopped when dropped.
//!
//! [`ChildGuard`] owns a `std::process::Child`, [`AsyncChildGuard`] a
//! `tokio::process::Child`; both kill their child by its PID (SIGKILL) when dropped, also
//! when the test panics. [`PidGuard`] does the same for a process another library started
//! and only told the PID of. [`TaskGuard`] aborts an in-process server task.

use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// A child process, killed by its PID and reaped when dropped.
#[derive(Debug)]
pub struct ChildGuard {
    child: Option<Child>,
}

impl ChildGuard {
    /// Guards a child already started.
    pub fn new(child: Child) -> Self {
        Self { child: Some(child) }
    }

    /// Starts `command` (its stdio as `command` says); on failure, panics naming `what` and
    /// how to install the test peers.
    pub fn spawn(command: &mut Command, what: &str) -> Self {
        let child = command.spawn().unwrap_or_else(|error| {
            panic!(
                "could not start {what} ({error}): install the test peers with `bash scripts/install-peers.sh`"
            )
        });
        Self::new(child)
    }

    /// The child's PID, while it was not killed.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// The child, while it was not killed (to take its pipes).
    pub fn child_mut(&mut self) -> Option<&mut Child> {
        self.child.as_mut()
    }

    /// Its exit status, when it has exited by itself.
    pub fn try_wait(&mut self) -> Option<ExitStatus> {
        self.child
            .as_mut()
            .and_then(|child| child.try_wait().ok().flatten())
    }

    /// `true` while the child was started and not killed (it may have exited by itself).
    pub fn is_running(&self) -> bool {
        self.child.is_some()
    }

    /// Waits (bounded) until `ready` holds; panics naming `what` when the child exits first
    /// or `patience` passes.
    pub fn wait_ready(&mut self, what: &str, patience: Duration, mut ready: impl FnMut() -> bool) {
        let started = Instant::now();
        while !ready() {
            if let Some(status) = self.try_wait() {
                panic!("{what} exited before it was ready ({status})");
            }
            assert!(
                started.elapsed() < patience,
                "{what} was not ready within {patience:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Sends `signal` (such as `-STOP` or `-CONT`) to the child's PID with `kill`.
    pub fn signal(&self, signal: &str) {
        let pid = self.pid().map(|pid| pid.to_string()).unwrap_or_default();
        let status = Command::new("kill")
            .args([signal, &pid])
            .status()
            .expect("kill runs");
        assert!(status.success(), "kill {signal} {pid}");
    }

    /// Kills the child (SIGKILL, by its PID) and reaps it; nothing when already killed.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A tokio child process, killed by its PID when dropped (tokio reaps it in the background
/// when it was spawned with `kill_on_drop(true)`).
#[derive(Debug)]
pub struct AsyncChildGuard(pub Option<tokio::process::Child>);

impl AsyncChildGuard {
    /// Guards a child already started.
    pub fn new(child: tokio::process::Child) -> Self {
        Self(Some(child))
    }

    /// The child, while it was not taken.
    pub fn child_mut(&mut self) -> Option<&mut tokio::process::Child> {
        self.0.as_mut()
    }
}

impl Drop for AsyncChildGuard {
    fn drop(&mut self) {
        if let Some(child) = self.0.as_mut() {
            let _ = child.start_kill();
        }
    }
}

/// Kills a process by its PID (`kill -KILL`) when dropped: the safety net for a process a
/// library started (and stops itself on the happy path), known to the test by its PID only.
#[derive(Debug)]
pub struct PidGuard(pub Option<u32>);

impl Drop for PidGuard {
    fn drop(&mut self) {
        if let Some(pid) = self.0 {
            let _ = Command::new("kill")
                .arg("-KILL")
                .arg(pid.to_string())
                .stderr(Stdio::null())
                .status();
        }
    }
}

/// An in-process task (a server the test started), aborted when dropped.
#[derive(Debug)]
pub struct TaskGuard(pub tokio::task::JoinHandle<()>);

impl Drop for TaskGuard {
    fn drop(&mut self) {
        self.0.abort();
    }
}
