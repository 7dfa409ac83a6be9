//! The call protocol across processes over WebSocket: this program runs a hub, starts two
//! serving spokes (the same binary, run as `hub_spoke serve <url> <token> <name>`), then
//! connects as a calling spoke: calls spread over both spokes, a subscription, access rules
//! checked by the spoke that runs the operation, a refused token, and a spoke that drops.
//!
//! ```sh
//! cargo run -p opkit-adapters --features websocket --example hub_spoke
//! ```

use futures::StreamExt;
use opkit::prelude::*;
use opkit::protocol::{CallHandler, PendingRequestMap};
use opkit_adapters::websocket::{SpokeGrant, StaticTokens, WsHub, WsSpoke};
use serde_json::json;
use std::collections::BTreeMap;
use std::error::Error;
use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

type Result<T> = std::result::Result<T, Box<dyn Error>>;

/// A serving spoke's operations; every answer says which spoke served it.
fn registry(name: &str) -> Result<OperationRegistry> {
    let registry = OperationRegistry::new();
    let who = name.to_owned();
    registry.register(
        OperationSpec::new("math", "add", OperationKind::Query).description("Adds two integers."),
        Handler::unary(move |input, _ctx| {
            let who = who.clone();
            async move {
                let sum = input["a"].as_i64().unwrap_or(0) + input["b"].as_i64().unwrap_or(0);
                Ok(json!({"sum": sum, "servedBy": who}))
            }
        }),
    )?;
    let who = name.to_owned();
    registry.register(
        OperationSpec::new("clock", "ticks", OperationKind::Subscription),
        Handler::stream(move |input, _ctx| {
            let (who, count) = (who.clone(), input["count"].as_u64().unwrap_or(3));
            futures::stream::iter(
                (1..=count).map(move |tick| Ok(json!({"tick": tick, "servedBy": who.clone()}))),
            )
        }),
    )?;
    registry.register(
        OperationSpec::new("admin", "stats", OperationKind::Query)
            .access(AccessRule::scopes(["admin:read"])),
        Handler::unary(|_input, ctx| async move {
            Ok(json!({"askedBy": ctx.identity().map(|identity| identity.id.clone())}))
        }),
    )?;
    Ok(registry)
}

/// A serving spoke: runs until its parent goes away (its stdin closes).
async fn serve(url: &str, token: &str, name: &str) -> Result<()> {
    let spoke = Arc::new(WsSpoke::connect(url, token).await?);
    let _handler = CallHandler::new(registry(name)?, spoke).spawn().await?;
    println!("[{name}] connected to {url}, serving math.add, clock.ticks and admin.stats");
    tokio::task::spawn_blocking(|| {
        let _ = std::io::stdin().read_to_end(&mut Vec::new());
    })
    .await?;
    Ok(())
}

/// Kills the child processes it holds when dropped.
struct Processes(Vec<Child>);

impl Drop for Processes {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

#[tokio::main]
async fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("serve") {
        return serve(&args[2], &args[3], &args[4]).await;
    }
    let tokens = StaticTokens::new()
        .with_token(
            "service-token",
            SpokeGrant::new("math-service").serving(["math.add", "clock.ticks", "admin.stats"]),
        )
        .with_token("web-token", SpokeGrant::new("web"));
    let hub = WsHub::bind("127.0.0.1:0", tokens).await?;
    println!("hub listening on {}", hub.url());

    let mut processes = Processes(Vec::new());
    for name in ["spoke-a", "spoke-b"] {
        processes.0.push(
            Command::new(std::env::current_exe()?)
                .args(["serve", &hub.url(), "service-token", name])
                .stdin(Stdio::piped())
                .spawn()?,
        );
    }
    let started = Instant::now();
    while hub.operations().get("math.add").map_or(0, Vec::len) < 2 {
        if started.elapsed() > Duration::from_secs(20) {
            return Err("the serving spokes did not come up".into());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    println!("operations announced to the hub: {:?}", hub.operations());

    let web = Arc::new(WsSpoke::connect(&hub.url(), "web-token").await?);
    let map = PendingRequestMap::connect(web).await?;
    let ctx = OperationContext::default().with_timeout(Duration::from_secs(5));

    println!("\n10 calls, spread over the serving spokes:");
    let mut per_spoke: BTreeMap<String, usize> = BTreeMap::new();
    for a in 0..10 {
        let data = map
            .call("math.add", json!({"a": a, "b": 100}), &ctx)
            .await?
            .data;
        println!("  {data}");
        *per_spoke
            .entry(data["servedBy"].as_str().unwrap_or("?").to_owned())
            .or_default() += 1;
    }
    println!("per spoke: {per_spoke:?}");

    println!("\na subscription:");
    let mut ticks = map
        .subscribe("clock.ticks", json!({"count": 3}), &ctx)
        .await?;
    while let Some(item) = ticks.next().await {
        println!("  {}", item?.data);
    }

    println!("\naccess rules, checked by the spoke that runs the operation:");
    let bob = ctx.clone().with_identity(Identity::new("bob"));
    println!(
        "  bob: {:?}",
        map.call("admin.stats", json!({}), &bob)
            .await
            .map(|e| e.data)
    );
    let ann = ctx
        .clone()
        .with_identity(Identity::new("ann").with_scopes(["admin:read"]));
    println!(
        "  ann (admin:read): {}",
        map.call("admin.stats", json!({}), &ann).await?.data
    );

    println!("\na spoke with a wrong token:");
    println!(
        "  {:?}",
        WsSpoke::connect(&hub.url(), "guessed").await.map(|_| ())
    );

    println!("\nthe serving spokes stop:");
    drop(processes);
    let error = map.call("math.add", json!({"a": 1, "b": 1}), &ctx).await;
    println!("  a call now: {:?}", error.map(|envelope| envelope.data));
    Ok(())
}
