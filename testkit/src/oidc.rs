//! A real OpenID provider for the OAuth tests: `oidc-provider`, run by
//! `adapters/peers/oauth/provider.mjs` with the peers' Node 22 on a free loopback port,
//! killed by its PID when dropped. Installed by `bash scripts/install-peers.sh`.

use crate::process::ChildGuard;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// `adapters/peers/oauth`.
pub fn peers() -> PathBuf {
    crate::workspace_dir().join("adapters/peers/oauth")
}

/// Node 22 of the OAuth peers, checked to be installed with `oidc-provider`.
pub fn node() -> PathBuf {
    let node = peers().join("node_modules/.bin/node");
    assert!(
        node.exists() && peers().join("node_modules/oidc-provider").exists(),
        "the OAuth peers are missing ({}): run `bash scripts/install-peers.sh`",
        peers().display()
    );
    node
}

/// A running `oidc-provider`; killed (by PID) when dropped.
#[derive(Debug)]
pub struct OidcProvider {
    _child: ChildGuard,
    issuer: String,
}

impl OidcProvider {
    /// Starts the provider and waits (at most 30 s) until it prints `READY <port>`.
    pub fn start() -> Self {
        let mut child = ChildGuard::spawn(
            Command::new(node())
                .current_dir(peers())
                .arg("provider.mjs")
                // The provider exits when its stdin closes: the guard holds it open.
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::null()),
            "the OpenID provider",
        );
        let stdout = child
            .child_mut()
            .and_then(|child| child.stdout.take())
            .expect("the provider's stdout");
        let (ready, port) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(port) = line.strip_prefix("READY ") {
                    let _ = ready.send(port.trim().to_owned());
                }
            }
        });
        // On a panic here the guard kills the provider.
        let port = port
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|error| panic!("the OpenID provider did not start: {error}"));
        Self {
            _child: child,
            issuer: format!("http://127.0.0.1:{port}"),
        }
    }

    /// `http://127.0.0.1:<port>`, the provider's issuer.
    pub fn issuer(&self) -> &str {
        &self.issuer
    }
}
