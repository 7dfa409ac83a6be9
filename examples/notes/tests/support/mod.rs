//! The notes tests' harness: the `notes` binary as a child process on loopback, stopped by
//! its PID when dropped (even when a test fails), and its databases in temporary directories
//! removed when dropped. A `redis-server` comes from the test kit (`opkit_testkit::redis`).
#![allow(dead_code, missing_docs)]

use opkit_testkit::dir::TempDir;
use opkit_testkit::process::AsyncChildGuard;
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

/// A `notes` process, killed by its PID when dropped (`kill_on_drop` reaps it).
pub struct Process {
    _child: AsyncChildGuard,
    /// Its first line on stdout (the readiness line).
    pub ready: String,
}

/// Starts `notes <args>` and waits (bounded) for its readiness line.
pub async fn notes(args: &[&str]) -> Process {
    let mut child = Command::new(env!("CARGO_BIN_EXE_notes"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("the notes binary starts");
    let stdout = child.stdout.take().expect("piped stdout");
    let mut lines = BufReader::new(stdout).lines();
    let ready = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
        .await
        .expect("notes is ready within 30 s")
        .expect("stdout is readable")
        .expect("notes printed its readiness line");
    // Keep draining stdout so the child never blocks on it.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    Process {
        _child: AsyncChildGuard::new(child),
        ready,
    }
}

/// `notes serve` on a free loopback port with a database at `db`; returns the process and
/// its base URL.
pub async fn serve(db: &Path, extra: &[&str]) -> (Process, String) {
    let db = db.to_string_lossy().into_owned();
    let mut args = vec!["serve", "--db", &db, "--addr", "127.0.0.1:0"];
    args.extend_from_slice(extra);
    let process = notes(&args).await;
    let base = process
        .ready
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("unexpected readiness line {:?}", process.ready))
        .to_owned();
    (process, base)
}

/// A database path (`notes.db`) in a fresh directory of its own, removed when dropped: keep
/// it alive as long as a process uses it.
pub struct TempDb {
    _dir: TempDir,
    path: PathBuf,
}

impl Deref for TempDb {
    type Target = Path;

    fn deref(&self) -> &Path {
        &self.path
    }
}

/// A fresh database path in a directory of its own.
pub fn temp_db(name: &str) -> TempDb {
    let dir = TempDir::new(&format!("notes-{name}"));
    TempDb {
        path: dir.join("notes.db"),
        _dir: dir,
    }
}

/// The shared identity secret of the notes processes over Redis, in a temporary file
/// removed when dropped.
pub struct Secret {
    pub path: PathBuf,
    pub bytes: Vec<u8>,
    _dir: TempDir,
}

impl Secret {
    pub fn path(&self) -> String {
        self.path.to_string_lossy().into_owned()
    }
}

/// A fresh 32-byte identity secret written to a file.
pub fn identity_secret(name: &str) -> Secret {
    let dir = TempDir::new(&format!("notes-key-{name}"));
    let path = dir.join("notes.key");
    // Not a secret from a CSPRNG: a test's, unique enough per run.
    let bytes: Vec<u8> = format!(
        "{:0>32}",
        std::process::id() as u128 * 7919 + name.len() as u128
    )
    .into_bytes();
    std::fs::write(&path, &bytes).expect("the secret file is written");
    Secret {
        path,
        bytes,
        _dir: dir,
    }
}
