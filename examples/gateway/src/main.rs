//! The gateway binary:
//!
//! ```text
//! gateway --config gateway.toml [--addr 127.0.0.1:8080]
//! ```
//!
//! Prints `listening on http://<addr>` once it serves, and `refreshed` after each refresh
//! that `SIGHUP` asks for (one line per source before it, naming what changed or why the
//! source could not be refreshed). `SIGTERM` stops it and the MCP servers it started. A bad
//! configuration exits with status 2 and the error.

use opkit_example_gateway::Gateway;
use opkit_example_gateway::config::Config;
use std::io::Write;
use std::path::PathBuf;

const USAGE: &str = "usage: gateway --config PATH [--addr ADDR]";

fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

fn args() -> Result<(PathBuf, Option<String>), String> {
    let mut config = None;
    let mut addr = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--config" => config = args.next().map(PathBuf::from),
            "--addr" => addr = args.next(),
            _ => return Err(format!("unknown argument `{arg}`\n{USAGE}")),
        }
    }
    Ok((config.ok_or(USAGE)?, addr))
}

#[cfg(unix)]
async fn refresh_on_hangup(gateway: Gateway) -> std::io::Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut hangups = signal(SignalKind::hangup())?;
    tokio::spawn(async move {
        while hangups.recv().await.is_some() {
            for (namespace, outcome) in gateway.refresh().await {
                match outcome {
                    Ok(changes) => say(&format!(
                        "refreshed {namespace}: {} added, {} removed, {} replaced, {} unchanged",
                        changes.added, changes.removed, changes.replaced, changes.unchanged
                    )),
                    Err(error) => say(&format!("refresh of {namespace} failed: {error}")),
                }
            }
            say("refreshed");
        }
    });
    Ok(())
}

/// Resolves on `SIGTERM` or Ctrl-C.
async fn stopped() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        if let Ok(mut terms) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = terms.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}

#[cfg(not(unix))]
async fn refresh_on_hangup(_gateway: Gateway) -> std::io::Result<()> {
    Ok(())
}

async fn run(path: PathBuf, addr: Option<String>) -> Result<(), Box<dyn std::error::Error>> {
    let config = Config::load(&path)?;
    let addr = config.listen_addr(addr.as_deref())?;
    let gateway = Gateway::start(&config).await?;
    refresh_on_hangup(gateway.clone()).await?;
    let listener = tokio::net::TcpListener::bind(addr).await?;
    say(&format!("listening on http://{}", listener.local_addr()?));
    let serving = axum::serve(listener, gateway.router());
    tokio::select! {
        served = serving => served?,
        () = stopped() => {}
    }
    gateway.close();
    Ok(())
}

#[tokio::main]
async fn main() {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let (path, addr) = match args() {
        Ok(args) => args,
        Err(usage) => {
            eprintln!("{usage}");
            std::process::exit(2);
        }
    };
    if let Err(error) = run(path, addr).await {
        eprintln!("gateway: {error}");
        std::process::exit(2);
    }
}
