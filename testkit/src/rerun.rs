//! This test binary started again as a child process, to run one ignored helper test
//! (`<test> --exact --ignored`) configured through environment variables: a replica, a
//! caller, a process of a multi-process trace. The child is killed by its PID when dropped
//! (even when the test fails), and its stdout is read line by line when asked for. In the
//! child, [`run_child`] exits with the parent.

use crate::process::ChildGuard;
use std::ffi::OsStr;
use std::future::Future;
use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// Whether a child's stdout is kept, line by line, or discarded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stdout {
    /// Sent to `/dev/null`.
    Discard,
    /// Read line by line (see [`ChildTest::lines`]).
    Lines,
}

/// The name libtest gives the test `name` of the module `module_path` (what
/// `module_path!()` says where it is written): the path without the test binary's crate
/// name. The same whether the file is a test binary of its own or a module of a grouped
/// one (`faults::child` as `child`, `redis_transport::replica_kill::child` as
/// `replica_kill::child`).
pub fn test_name(module_path: &str, name: &str) -> String {
    match module_path.split_once("::") {
        Some((_crate, module)) => format!("{module}::{name}"),
        None => name.to_owned(),
    }
}

/// A child process running one helper test of this binary; killed by PID when dropped.
#[derive(Default)]
pub struct ChildTest {
    child: Option<ChildGuard>,
    lines: Arc<Mutex<Vec<String>>>,
    reader: Option<JoinHandle<()>>,
}

impl ChildTest {
    /// Starts this test binary running only the ignored test `test` (its full name: see
    /// [`test_name`]), with `env` added to its
    /// environment. Its stdin is a pipe the parent holds (see [`run_child`]); its stderr is
    /// inherited.
    pub fn spawn(test: &str, env: &[(&str, &OsStr)], stdout: Stdout) -> Self {
        let mut command = Command::new(std::env::current_exe().unwrap());
        command
            .args([
                test,
                "--exact",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .stdin(Stdio::piped())
            .stderr(Stdio::inherit());
        for (name, value) in env {
            command.env(name, value);
        }
        command.stdout(match stdout {
            Stdout::Discard => Stdio::null(),
            Stdout::Lines => Stdio::piped(),
        });
        let mut child = ChildGuard::new(command.spawn().expect("spawn a child process"));
        let lines = Arc::new(Mutex::new(Vec::new()));
        let reader = child
            .child_mut()
            .and_then(|child| child.stdout.take())
            .map(|out| {
                let sink = lines.clone();
                std::thread::spawn(move || {
                    for line in BufReader::new(out).lines().map_while(Result::ok) {
                        sink.lock().unwrap().push(line);
                    }
                })
            });
        Self {
            child: Some(child),
            lines,
            reader,
        }
    }

    /// The child's PID (empty once it was killed).
    pub fn pid(&self) -> String {
        self.child
            .as_ref()
            .and_then(ChildGuard::pid)
            .map(|pid| pid.to_string())
            .unwrap_or_default()
    }

    /// Sends `signal` (such as `-STOP` or `-CONT`) with `kill`.
    pub fn signal(&self, signal: &str) {
        let child = self.child.as_ref().expect("the child runs");
        child.signal(signal);
    }

    /// Kills the child (SIGKILL) and reaps it; then its stdout is read to the end.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            child.kill();
        }
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
    }

    /// Moves the running child out (to kill it elsewhere); this one is left empty.
    pub fn take(&mut self) -> Self {
        std::mem::take(self)
    }

    /// The stdout lines read so far (with [`Stdout::Lines`]).
    pub fn lines(&self) -> Vec<String> {
        self.lines.lock().unwrap().clone()
    }
}

impl Drop for ChildTest {
    fn drop(&mut self) {
        if self.child.is_some() {
            // A paused child cannot die until it runs again.
            let _ = Command::new("kill").args(["-CONT", &self.pid()]).status();
        }
        self.kill();
    }
}

/// In the child: exits when the parent dies (its end of our stdin closes), and runs `body`
/// on a runtime of two workers.
pub fn run_child(body: impl Future<Output = ()>) {
    std::thread::spawn(|| {
        let _ = std::io::stdin().read_to_end(&mut Vec::new());
        std::process::exit(0);
    });
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
        .block_on(body);
}
