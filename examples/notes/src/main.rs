//! The notes service.
//!
//! ```text
//! notes serve   [--db notes.db] [--addr 127.0.0.1:3000] [--keys 'demo-key=ann:notes:admin;reader-key=bob']
//!               [--redis redis://127.0.0.1:6379/ --identity-secret-file notes.key] [--name notes-a]
//!               [--export-window-secs 60]
//!               [--oidc-issuer https://id.example [--public-url http://127.0.0.1:3000] [--roles-claim roles]]
//! notes replica --redis redis://127.0.0.1:6379/ --identity-secret-file notes.key [--db notes.db] [--name notes-b]
//! notes call    --redis redis://127.0.0.1:6379/ --identity-secret-file notes.key --op notes.create
//!               [--input '{"title":"milk"}'] [--as 'ann:notes:admin']
//! notes export-client typescript <dir>
//! ```
//!
//! `serve` runs the axum app (own routes, API-key auth, opkit at `/api` and `/mcp`) and,
//! with `--redis`, also serves the operations over the Redis call protocol. `replica` only
//! serves over Redis: start several, with the same `--db`, and they share the notes. `call`
//! calls one operation over Redis as the identity `--as` gives (`id[:scope,scope..]`;
//! anonymous without it) and prints the envelope. `export-client typescript <dir>` writes
//! the TypeScript client of the operations to `<dir>/index.ts` (see
//! `opkit_adapters::client::typescript`; the committed one is `client/index.ts`). Over Redis every identity is signed with
//! the secret in `--identity-secret-file`, the same file for every process (see
//! `opkit_example_notes::bus`): a request that states an identity without its signature is
//! refused.
//! With `--oidc-issuer`, `serve` signs callers in with OAuth access tokens of that OpenID
//! provider instead of API keys (see `app::app_with_oidc`): tokens for the resource
//! `<public-url>/api` (HTTP) or `<public-url>/mcp` (MCP), with the scope `notes:admin` for
//! deleting; `--public-url` defaults to `http://<addr>`.
//! Both print one line on stdout when ready (`listening on http://<addr>`, `serving over
//! redis as <name>`).

use opkit_example_notes::{app, bus, db::Db, registry};
use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

const USAGE: &str = "usage: notes (serve | replica | call | export-client typescript DIR) [--db PATH] [--addr ADDR] [--keys SPEC] [--redis URL --identity-secret-file PATH] [--name NAME] [--export-window-secs N] [--oidc-issuer URL [--public-url URL] [--roles-claim CLAIM]] [--op ID [--input JSON] [--as ID:SCOPES]]";

/// The keys of `--identity-secret-file`, which the call protocol needs.
fn identity_keys(
    options: &HashMap<String, String>,
) -> Result<opkit::protocol::IdentityKeys, String> {
    let path = options.get("identity-secret-file").ok_or_else(|| {
        format!(
            "the call protocol needs --identity-secret-file PATH: a secret of {} bytes or more, the same file for every notes process (make one with `head -c 32 /dev/urandom > notes.key`); identities on the bus are signed with it\n{USAGE}",
            bus::MIN_SECRET_BYTES
        )
    })?;
    bus::read_identity_keys(std::path::Path::new(path))
}

/// `notes call`: one call over Redis, its envelope printed.
async fn call(options: &HashMap<String, String>) -> Result<(), Box<dyn std::error::Error>> {
    let url = options
        .get("redis")
        .ok_or_else(|| format!("`call` needs --redis\n{USAGE}"))?;
    let op = options
        .get("op")
        .ok_or_else(|| format!("`call` needs --op\n{USAGE}"))?;
    let input: serde_json::Value =
        serde_json::from_str(options.get("input").map_or("{}", String::as_str))
            .map_err(|error| format!("--input is not JSON: {error}"))?;
    let mut ctx = opkit::OperationContext::new();
    if let Some(who) = options.get("as") {
        let (id, scopes) = who.split_once(':').unwrap_or((who, ""));
        let scopes = scopes.split(',').filter(|scope| !scope.is_empty());
        ctx = ctx.with_identity(opkit::Identity::new(id).with_scopes(scopes));
    }
    let caller = bus::caller(url, identity_keys(options)?).await?;
    let envelope = caller.call(op, input, &ctx).await?;
    ready(&serde_json::to_string(&envelope)?);
    Ok(())
}

/// `notes export-client typescript <dir>`: the operations' TypeScript client, written to
/// `<dir>/index.ts`. The operations' specs need no database: the registry's inventory is
/// read without opening one.
fn export_client(args: &[String]) -> Result<(), Box<dyn std::error::Error>> {
    let [language, dir] = args else {
        return Err(format!("`export-client` needs a language and a directory\n{USAGE}").into());
    };
    if language != "typescript" {
        return Err(
            format!("`export-client` writes `typescript`, not `{language}`\n{USAGE}").into(),
        );
    }
    let client = opkit_adapters::client::typescript::TypeScriptClient::from_registry(
        &opkit::OperationRegistry::from_inventory(),
    );
    for what in client.unmapped() {
        eprintln!("not typed (written as `unknown`): {what}");
    }
    let path = client.write_to(std::path::Path::new(dir))?;
    ready(&format!("wrote {}", path.display()));
    Ok(())
}

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
    if mode == "export-client" {
        return export_client(rest);
    }
    let options = options(rest)?;
    if mode == "call" {
        return call(&options).await;
    }
    let get = |key: &str, default: &str| {
        options
            .get(key)
            .cloned()
            .unwrap_or_else(|| default.to_owned())
    };
    // Checked before anything is opened: serving the call protocol needs the secret.
    let keys = options
        .contains_key("redis")
        .then(|| identity_keys(&options))
        .transpose()?;
    let db = Db::open(&PathBuf::from(get("db", "notes.db")))?;
    let window = Duration::from_secs(get("export-window-secs", "60").parse()?);
    let name = get("name", "notes");
    let registry = registry(db, &name, window);
    // A replica that lacks a state refuses to start, naming it (here: never).
    registry.check_states()?;

    let _replica = match (options.get("redis"), keys) {
        (Some(url), Some(keys)) => Some(bus::serve(registry.clone(), url, keys).await?),
        _ => None,
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
