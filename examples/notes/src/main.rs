//! The notes service.
//!
//! ```text
//! notes serve   [--db notes.db] [--addr 127.0.0.1:3000] [--keys 'demo-key=ann:notes:admin;reader-key=bob']
//!               [--redis redis://127.0.0.1:6379/] [--name notes-a] [--export-window-secs 60]
//!               [--oidc-issuer https://id.example [--public-url http://127.0.0.1:3000] [--roles-claim roles]]
//! notes replica --redis redis://127.0.0.1:6379/ [--db notes.db] [--name notes-b]
//! ```
//!
//! `serve` runs the axum app (own routes, API-key auth, opkit at `/api` and `/mcp`) and,
//! with `--redis`, also serves the operations over the Redis call protocol. `replica` only
//! serves over Redis: start several, with the same `--db`, and they share the notes.
//! With `--oidc-issuer`, `serve` signs callers in with OAuth access tokens of that OpenID
//! provider instead of API keys (see `app::app_with_oidc`): tokens for the resource
//! `<public-url>/api` (HTTP) or `<public-url>/mcp` (MCP), with the scope `notes:admin` for
//! deleting; `--public-url` defaults to `http://<addr>`.
//! Both print one line on stdout when ready (`listening on http://<addr>`, `serving over
//! redis as <name>`).

use opkit::protocol::CallHandler;
use opkit_adapters::redis::RedisPubSub;
use opkit_example_notes::{app, db::Db, registry};
use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

const USAGE: &str = "usage: notes (serve | replica) [--db PATH] [--addr ADDR] [--keys SPEC] [--redis URL] [--name NAME] [--export-window-secs N] [--oidc-issuer URL [--public-url URL] [--roles-claim CLAIM]]";

fn options(args: &[String]) -> Result<HashMap<String, String>, String> {
    let mut options = HashMap::new();
    let mut rest = args.iter();
    while let Some(flag) = rest.next() {
        let key = flag
            .strip_prefix("--")
            .ok_or_else(|| format!("unexpected argument `{flag}`\n{USAGE}"))?;
        let value = rest
            .next()
            .ok_or_else(|| format!("`{flag}` needs a value\n{USAGE}"))?;
        options.insert(key.to_owned(), value.clone());
    }
    Ok(options)
}

fn ready(line: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{line}");
    let _ = stdout.flush();
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        .init();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((mode, rest)) = args.split_first() else {
        return Err(USAGE.into());
    };
    let options = options(rest)?;
    let get = |key: &str, default: &str| {
        options
            .get(key)
            .cloned()
            .unwrap_or_else(|| default.to_owned())
    };
    let db = Db::open(&PathBuf::from(get("db", "notes.db")))?;
    let window = Duration::from_secs(get("export-window-secs", "60").parse()?);
    let name = get("name", "notes");
    let registry = registry(db, &name, window);
    // A replica that lacks a state refuses to start, naming it (here: never).
    registry.check_states()?;

    let _replica = match options.get("redis") {
        Some(url) => {
            let bus = Arc::new(RedisPubSub::connect(url).await?);
            Some(CallHandler::new(registry.clone(), bus).spawn().await?)
        }
        None => None,
    };
    match mode.as_str() {
        "serve" => {
            let keys = app::ApiKeys::parse(&get("keys", "demo-key=ann:notes:admin;reader-key=bob"));
            let listener = tokio::net::TcpListener::bind(get("addr", "127.0.0.1:3000")).await?;
            let addr = listener.local_addr()?;
            let router = match options.get("oidc-issuer") {
                Some(issuer) => {
                    let oidc = app::Oidc {
                        issuer: issuer.clone(),
                        public_url: get("public-url", &format!("http://{addr}")),
                        roles_claim: options.get("roles-claim").cloned(),
                    };
                    app::app_with_oidc(&registry, &oidc, &name)?
                }
                None => app::app(&registry, keys, &name),
            };
            ready(&format!("listening on http://{addr}"));
            if options.contains_key("oidc-issuer") {
                eprintln!(
                    "explorer: http://{addr}/api/explorer  (bearer access token of the OpenID provider)"
                );
            } else {
                eprintln!("explorer: http://{addr}/api/explorer  (API key: demo-key)");
            }
            // The app's routes and opkit's, behind the header-read timeout and connection
            // limit of opkit's accept loop.
            let limits = opkit_adapters::http_server::ConnectionLimits::default();
            opkit_adapters::http_server::serve_router(listener, router, limits, async {
                let _ = tokio::signal::ctrl_c().await;
            })
            .await?;
        }
        "replica" => {
            if _replica.is_none() {
                return Err(format!("`replica` needs --redis\n{USAGE}").into());
            }
            ready(&format!("serving over redis as {name}"));
            tokio::signal::ctrl_c().await?;
        }
        other => return Err(format!("unknown mode `{other}`\n{USAGE}").into()),
    }
    Ok(())
}
