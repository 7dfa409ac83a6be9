//! The operations explorer in a real browser: a real server on loopback serves the page,
//! headless Chromium (Debian's, through chromedriver and Selenium) fills forms, calls a query,
//! sees validation errors next to the right fields, calls with a token, streams a
//! subscription to its end and stops another. Screenshots of every step are kept in
//! `<target>/tmp/explorer-screenshots/` (artifacts, not compared pixel by pixel).
#![cfg(feature = "http-server")]

mod serve_support;

use opkit::prelude::*;
use opkit_adapters::http_server::{HttpServer, StaticTokens};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::time::Duration;

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Size {
    Small,
    Medium,
    Large,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
struct Address {
    street: String,
    city: String,
}

fn no_note() -> String {
    "no note".to_owned()
}

/// An order: every kind of field a form has to offer.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
struct Order {
    /// Who orders.
    customer: String,
    /// How many, 1 to 10.
    #[schemars(range(min = 1, max = 10))]
    quantity: u32,
    size: Size,
    /// Wrapped as a gift.
    #[serde(default)]
    gift: bool,
    #[serde(default = "no_note")]
    note: String,
    address: Address,
    #[serde(default)]
    toppings: Vec<String>,
    coupon: Option<String>,
}

/// Places an order (echoes it).
#[operation(namespace = "shop", mutation)]
async fn order(Input(order): Input<Order>) -> Order {
    order
}

/// Adds two integers.
#[operation(namespace = "math")]
async fn add(a: i64, b: i64) -> i64 {
    a + b
}

/// Counts from 0, one tick every `every_ms`.
#[operation(namespace = "clock", subscription)]
fn ticks(count: u32, every_ms: Option<u64>) -> impl Stream<Item = u32> + Send + 'static {
    let every = Duration::from_millis(every_ms.unwrap_or(10));
    futures::stream::unfold(0, move |n| async move {
        if n >= count {
            return None;
        }
        if n > 0 {
            tokio::time::sleep(every).await;
        }
        Some((n, n + 1))
    })
}

/// Only for administrators.
#[operation(namespace = "admin", access(scopes = ["admin"]))]
async fn secret() -> String {
    "the secret".to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_explorer_works_in_a_real_browser() {
    let registry = OperationRegistry::from_inventory();
    let server = HttpServer::new(registry)
        .info("explorer test", "1.0.0")
        .identity_resolver(
            StaticTokens::new().with("admin-token", Identity::new("root").with_scopes(["admin"])),
        )
        .explorer("/explorer")
        .explorer_mcp_link("/mcp");
    let served = serve_support::serve(server.router()).await;
    let base = served.url("");
    let python = serve_support::crate_dir().join("peers/explorer/.venv/bin/python");
    assert!(
        python.exists(),
        "Selenium is missing ({}): run `bash scripts/install-peers.sh`",
        python.display()
    );
    let shots = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("explorer-screenshots");
    let script = serve_support::crate_dir().join("tests/explorer/drive.py");
    let run = tokio::process::Command::new(&python)
        .arg(&script)
        .arg(base.trim_end_matches('/'))
        .arg(&shots)
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(180), run)
        .await
        .expect("the browser run ends within 3 minutes")
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the browser run failed ({}):\n{stdout}\n{stderr}\nscreenshots: {}",
        output.status,
        shots.display()
    );
    assert!(stdout.contains("steps passed"), "{stdout}");
    assert!(shots.join("01-loaded.png").exists());
}
