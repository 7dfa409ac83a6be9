//! The official MCP conformance suite (npm `@modelcontextprotocol/conformance`, pinned in
//! adapters/peers/conformance, installed by `scripts/install-peers.sh` with Node 22): every
//! server scenario against the `conformance_server` example, every client scenario with the
//! `conformance_client` example, at protocol revisions 2025-11-25 and 2026-07-28, then every
//! extension scenario. The scenarios opkit does not pass are listed with their reasons in
//! adapters/peers/conformance/expected-failures-{2025-11-25,2026-07-28,extensions}.yml; any
//! other failure, or a listed scenario that passes, fails this test. A scenario that "passes"
//! with none of its checks run (all of them SKIPPED) has not passed: unless
//! adapters/peers/conformance/not-exercised.txt lists it with its reason, it fails this test
//! too (adapters/peers/conformance/exercised.mjs, which prints a row of checks per scenario).
//!
//! The client signs in where a scenario asks (the `auth/*` scenarios), so the test needs the
//! `oauth-client` feature beside `mcp` and `mcp-server`.
//!
//! The suite's scenario servers bind all interfaces, so the suite and the fixture server run
//! in a private network namespace (`unshare -n`, loopback only) by
//! adapters/peers/conformance/run.sh.
#![cfg(all(
    feature = "mcp",
    feature = "mcp-server",
    feature = "mcp-skills",
    feature = "oauth-client"
))]

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
        .filter(|line| {
            line.starts_with('✓')
                || line.starts_with('✗')
                || line.starts_with("===")
                || line.starts_with('|')
        })
        .collect();
    eprintln!("{}", summary.join("\n"));
    assert!(
        success,
        "the conformance suite found unexpected failures (or stale expected ones):\n{stdout}\n{stderr}"
    );
}

/// The checker of exercised scenarios refuses what a vacuous run looks like: a scenario
/// whose every check was skipped, one partly skipped, and a stale listing; it accepts a
/// scenario whose checks ran and a listed one that skipped.
#[tokio::test]
async fn a_scenario_whose_checks_were_all_skipped_has_not_passed() {
    let peers = crate_dir().join("peers/conformance");
    let node = peers.join("node_modules/.bin/node");
    assert!(
        node.exists(),
        "Node 22 is missing: run `bash scripts/install-peers.sh`"
    );
    let root = std::env::temp_dir().join(format!("opkit-exercised-{}", std::process::id()));
    let write = |run: &str, scenario: &str, statuses: &[&str]| {
        let dir = root
            .join(run)
            .join(format!("{scenario}-2026-11-28T04-30-00-000Z"));
        std::fs::create_dir_all(&dir).unwrap();
        let checks: Vec<_> = statuses
            .iter()
            .enumerate()
            .map(|(n, status)| serde_json::json!({"id": format!("check-{n}"), "status": status}))
            .collect();
        std::fs::write(
            dir.join("checks.json"),
            serde_json::to_vec(&checks).unwrap(),
        )
        .unwrap();
    };
    let check = |listed: &str| {
        let list = root.join("not-exercised.txt");
        std::fs::write(&list, listed).unwrap();
        let results = root.join("results");
        std::process::Command::new(&node)
            .arg(peers.join("exercised.mjs"))
            .arg(&results)
            .arg(&list)
            .output()
            .unwrap()
    };
    write(
        "results/server-2026-07-28",
        "server-ran",
        &["SUCCESS", "INFO"],
    );
    let ran = check("");
    assert!(ran.status.success(), "{ran:?}");

    write(
        "results/server-2026-07-28",
        "server-vacuous",
        &["SKIPPED", "SKIPPED"],
    );
    let vacuous = check("");
    assert!(!vacuous.status.success());
    let out = String::from_utf8_lossy(&vacuous.stdout);
    assert!(
        out.contains("| vacuous | 0 | 0 | 0 | 2 | NOT EXERCISED (not listed"),
        "{out}"
    );
    assert!(check("server/vacuous: not served here").status.success());

    write(
        "results/client-extensions",
        "partly",
        &["SUCCESS", "SKIPPED"],
    );
    let partly = check("server/vacuous: not served here");
    let out = String::from_utf8_lossy(&partly.stdout);
    assert!(
        !partly.status.success() && out.contains("PARTLY SKIPPED (not listed"),
        "{out}"
    );

    let stale = check("server/vacuous: x\nclient/partly: y\nserver/ran: z");
    let out = String::from_utf8_lossy(&stale.stdout);
    assert!(
        !stale.status.success() && out.contains("server/ran is listed"),
        "{out}"
    );
    assert!(
        check("server/vacuous: x\nclient/partly: y")
            .status
            .success()
    );
    std::fs::remove_dir_all(&root).unwrap();
}
