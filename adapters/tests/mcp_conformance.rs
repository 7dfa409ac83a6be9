//! The official MCP conformance suite (npm `@modelcontextprotocol/conformance`, pinned in
//! adapters/peers/conformance, installed by `scripts/install-peers.sh` with Node 22): every
//! server scenario against the `conformance_server` example, every client scenario with the
//! `conformance_client` example, at protocol revisions 2025-11-25 and 2026-07-28, then every
//! extension scenario. The scenarios opkit does not pass are listed with their reasons in
//! adapters/peers/conformance/expected-failures-{2025-11-25,2026-07-28,extensions}.yml; any
//! other failure, or a listed scenario that passes, fails this test.
//!
//! The client signs in where a scenario asks (the `auth/*` scenarios), so the test needs the
//! `oauth-client` feature beside `mcp` and `mcp-server`.
//!
//! The suite's scenario servers bind all interfaces, so the suite and the fixture server run
//! in a private network namespace (`unshare -n`, loopback only) by
//! adapters/peers/conformance/run.sh.
#![cfg(all(feature = "mcp", feature = "mcp-server", feature = "oauth-client"))]

mod serve_support;

use serve_support::{Finished, crate_dir, example_binary, run};
use std::time::Duration;

#[tokio::test]
async fn the_official_conformance_suite_passes_but_for_the_listed_scenarios() {
    let peers = crate_dir().join("peers/conformance");
    let suite = peers.join("node_modules/.bin/conformance");
    assert!(
        suite.exists() && peers.join("node_modules/.bin/node").exists(),
        "the MCP conformance suite or Node 22 is missing ({}): run `bash scripts/install-peers.sh`",
        suite.display()
    );
    let unshare = ["/usr/bin/unshare", "/bin/unshare"]
        .into_iter()
        .find(|path| std::path::Path::new(path).exists())
        .expect("`unshare` (util-linux) is needed to run the suite in a private network namespace");
    let mut command = tokio::process::Command::new(unshare);
    command
        .arg("-n")
        .arg("sh")
        .arg(peers.join("run.sh"))
        .arg(example_binary("conformance_server"))
        .arg(example_binary("conformance_client"))
        .arg(&peers)
        .env("NO_COLOR", "1");
    let Finished {
        success,
        stdout,
        stderr,
    } = run(command, Duration::from_secs(600)).await;
    let summary: Vec<&str> = stdout
        .lines()
        .filter(|line| line.starts_with('✓') || line.starts_with('✗') || line.starts_with("==="))
        .collect();
    eprintln!("{}", summary.join("\n"));
    assert!(
        success,
        "the conformance suite found unexpected failures (or stale expected ones):\n{stdout}\n{stderr}"
    );
}
