//! Serving benchmarks: real servers on loopback, driven by a load generator in the same run.
//!
//! Each path serves the same operation two ways, opkit and what a user would write instead,
//! and alternates them round by round so drift on the machine hits both alike:
//!
//! - `http_tiny`, `http_medium`: `POST /ops/<id>` of opkit's `HttpServer` vs a hand-written
//!   axum `Json<In> -> Json<Out>` handler, and vs the equal-work axum handler of issue 36
//!   (`axum_jsonschema`: the body as a `Value`, checked against the operation's input schema
//!   with a compiled `jsonschema` validator, a 400 naming the violations when it does not
//!   match, then deserialized), all on their usual serve loop (`HttpServer::serve` and
//!   `axum::serve`, `TCP_NODELAY` on each);
//! - `http_tiny_gzip`, `http_medium_gzip`: the same requests saying `Accept-Encoding: gzip`, as
//!   browsers, Python's `requests` and Node's `fetch` do by default: opkit's `HttpServer` (its
//!   compression on, as by default) vs the equal-work axum handler under tower-http's
//!   `CompressionLayer` (`axum_jsonschema_gzip`, what an axum user adds for it) and without
//!   one (`axum_jsonschema`), and opkit compressing from tower-http's minimum size, 32 bytes,
//!   as before issue 48 (`opkit_min_32`); `http_list_gzip`: a list answer of ~18 KB
//!   (`bench.list`, 64 records), gzipped whole by opkit with a deflate state kept per thread
//!   and streamed through a new one per response by tower-http's `CompressionLayer`, and
//!   opkit with its compression off (`opkit_uncompressed`, against `axum_jsonschema`);
//! - `mcp_modern`, `mcp_legacy`: `tools/call` over Streamable HTTP of opkit's `McpServer` vs an
//!   rmcp `#[tool]` server on `StreamableHttpService` (and vs `rmcp_jsonschema`, the same with
//!   the arguments checked against the input schema first: the equal-work peer of issue 36),
//!   called through one MCP client connection (opkit's MCP import, the same for both) or as
//!   raw JSON-RPC POSTs, in the stateless 2026-07-28 era and in the legacy era (one session,
//!   every call on it);
//! - `ws_inflight_<n>`, `redis_inflight_<n>` (issue 36): throughput under concurrency, `n` = 1,
//!   8 and 64 calls in flight from one caller, of opkit's call protocol vs its raw baseline:
//!   over WebSocket a `WsHub` with a serving `WsSpoke` vs a raw tokio-tungstenite relay through
//!   a hub (`opkit_benches::ws_relay`); over Redis (`REDIS_URL`, skipped without it) a
//!   `RedisPubSub` vs a raw redis-rs stream and consumer group (`opkit_benches::redis_stream`).
//!   The hub, the serving side and the workers run on the server runtime, the caller on the
//!   load generator's;
//! - `cluster_inflight_<n>` (issue 49): the same over a Redis Cluster (`REDIS_CLUSTER_NODES`,
//!   skipped without it): `RedisPubSub` on the cluster vs a raw redis-rs cluster stream and
//!   consumer group with sharded pub/sub replies (`opkit_benches::redis_cluster`);
//! - `sse`: one subscription of 20 000 tiny items over SSE, opkit's full envelope and its
//!   compact `data` encoding vs an axum `Sse` handler sending each item as JSON.
//!
//! The server runs on a runtime with one worker thread, the load generator on another: one
//! core per side on a 2-core machine. Each line printed is one round:
//! `serving <path> <side> rps=<calls or items per second> p50_us=.. p99_us=.. bytes=..`;
//! `benches/report.py` turns the lines into the serving table of `docs/benchmarks.md`.
//!
//! `ROUNDS` (default 3), `SERVING_FILTER` (a substring of the path) and `SERVING_SIDE` (one
//! side's name, for a profile) shorten a run.

use opkit::OperationRegistry;
use opkit::protocol::{CallHandler, PendingRequestMap, PubSub};
use opkit_adapters::http_server::HttpServer;
use opkit_adapters::mcp::{McpConnection, McpLifecycle, McpOptions};
use opkit_adapters::mcp_server::McpServer;
use opkit_adapters::redis::{RedisOptions, RedisPubSub};
use opkit_adapters::websocket::{SpokeGrant, StaticTokens, WsHub, WsSpoke};
use opkit_benches::*;
use serde_json::json;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tokio::net::TcpListener;
use tokio::runtime::Runtime;

fn main() {
    let rounds: usize = std::env::var("ROUNDS")
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(3);
    let filter = std::env::var("SERVING_FILTER").unwrap_or_default();
    let side_filter = std::env::var("SERVING_SIDE").ok();
    let server = single_worker("server");
    let client = single_worker("client");
    for path in PATHS {
        if !path.name.contains(filter.as_str()) {
            continue;
        }
        let sides = (path.start)(&server);
        for _ in 0..rounds {
            for side in &sides {
                if side_filter.as_deref().is_some_and(|only| only != side.name) {
                    continue;
                }
                let sample = client.block_on((path.drive)(side.address, side.variant));
                println!(
                    "serving {} {} rps={:.1} p50_us={:.1} p99_us={:.1} bytes={:.1} server_cpu_us={:.2} client_cpu_us={:.2}",
                    path.name,
                    side.name,
                    sample.rate,
                    micros(sample.p50),
                    micros(sample.p99),
                    sample.bytes_per_item,
                    micros(sample.server_cpu),
                    micros(sample.client_cpu)
                );
            }
        }
    }
}

/// A tokio runtime with one worker thread.
fn single_worker(name: &str) -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name(name)
        .enable_all()
        .build()
        .expect("runtime")
}

fn micros(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e6
}

/// One benchmarked path: how to start its servers, and how to drive one of them.
struct Path {
    name: &'static str,
    start: fn(&Runtime) -> Vec<Side>,
    drive: fn(SocketAddr, Variant) -> futures::future::BoxFuture<'static, Sample>,
}

/// One side of a path: a server listening on `address`.
struct Side {
    name: &'static str,
    address: SocketAddr,
    variant: Variant,
}

/// What the load generator sends to a side.
#[derive(Clone, Copy)]
enum Variant {
    OpkitTiny,
    OpkitMedium,
    AxumTiny,
    AxumMedium,
    /// One of the four above, its requests saying `Accept-Encoding: gzip`.
    Gzip(Http),
    /// Through opkit's MCP client (one connection: a session in the legacy era).
    Mcp(McpLifecycle),
    /// Raw JSON-RPC POSTs, `CALLERS` connections (`SESSION_CALLERS` on one session in the
    /// legacy era).
    McpRaw(McpLifecycle),
    OpkitSse,
    OpkitSseCompact,
    AxumSse,
    /// A calling `WsSpoke` and `PendingRequestMap`, this many calls in flight.
    WsOpkit(usize),
    /// A raw relay caller, this many calls in flight.
    WsRaw(usize),
    /// A calling `RedisPubSub` (prefix by calls in flight) and `PendingRequestMap`.
    RedisOpkit(usize),
    /// A raw stream caller (stream by calls in flight).
    RedisRaw(usize),
    /// A calling `RedisPubSub` on the cluster (prefix by calls in flight) and
    /// `PendingRequestMap`.
    ClusterOpkit(usize),
    /// A raw cluster stream caller (stream by calls in flight).
    ClusterRaw(usize),
}

/// The plain HTTP variants, for [`Variant::Gzip`].
#[derive(Clone, Copy)]
enum Http {
    OpkitTiny,
    OpkitMedium,
    OpkitList,
    AxumTiny,
    AxumMedium,
    AxumList,
}

/// The outcome of one round.
struct Sample {
    /// Calls (or stream items) per second.
    rate: f64,
    /// Latency percentiles of the calls; for the SSE path (one subscription per round), the
    /// time to the response headers and the time to the stream's end.
    p50: Duration,
    p99: Duration,
    /// Response bytes per item (SSE), per response on the wire (the HTTP paths), else 0.
    bytes_per_item: f64,
    /// CPU time the server runtime's threads spent per call (user + system, from
    /// `/proc`, in nanoseconds): what the side costs whatever else runs on the machine.
    server_cpu: Duration,
    /// The same for the load generator's threads: a caller whose own cost per call bounds
    /// the rate shows here (its thread near one call's worth of CPU per call at the rate).
    client_cpu: Duration,
}

/// CPU time so far of this process's threads named `server` (the server runtime's).
fn server_cpu() -> Duration {
    cpu_of(|name| name == "server")
}

/// CPU time so far of this process's other threads: the load generator (the runtime named
/// `client` and the main thread driving it).
fn client_cpu() -> Duration {
    cpu_of(|name| name != "server")
}

/// CPU time so far of this process's threads whose name `pick`s: the time each ran on a CPU
/// (user and kernel), in nanoseconds, from `/proc/self/task/<tid>/schedstat` (`stat`'s
/// utime and stime count 10 ms ticks: a step of 0.5 µs per call at 20,000 calls a round).
fn cpu_of(pick: impl Fn(&str) -> bool) -> Duration {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return Duration::ZERO;
    };
    let nanos: u64 = tasks
        .flatten()
        .filter_map(|task| {
            let name = std::fs::read_to_string(task.path().join("comm")).ok()?;
            pick(name.trim_end()).then_some(())?;
            schedstat_run_ns(&task.path().join("schedstat"))
        })
        .sum();
    Duration::from_nanos(nanos)
}

const PATHS: &[Path] = &[
    Path {
        name: "http_tiny",
        start: http_servers,
        drive: |address, variant| Box::pin(http_load(address, variant)),
    },
    Path {
        name: "http_medium",
        start: http_servers_medium,
        drive: |address, variant| Box::pin(http_load(address, variant)),
    },
    Path {
        name: "http_tiny_gzip",
        start: |rt| http_gzip_sides(rt, Http::OpkitTiny, Http::AxumTiny),
        drive: |address, variant| Box::pin(http_load(address, variant)),
    },
    Path {
        name: "http_medium_gzip",
        start: |rt| http_gzip_sides(rt, Http::OpkitMedium, Http::AxumMedium),
        drive: |address, variant| Box::pin(http_load(address, variant)),
    },
    Path {
        name: "http_list_gzip",
        start: |rt| http_gzip_sides(rt, Http::OpkitList, Http::AxumList),
        drive: |address, variant| Box::pin(http_load(address, variant)),
    },
    Path {
        name: "mcp_modern",
        start: |rt| mcp_servers(rt, McpLifecycle::Modern),
        drive: |address, variant| Box::pin(mcp_load(address, variant)),
    },
    Path {
        name: "mcp_legacy",
        start: |rt| mcp_servers(rt, McpLifecycle::Legacy),
        drive: |address, variant| Box::pin(mcp_load(address, variant)),
    },
    Path {
        name: "sse",
        start: sse_servers,
        drive: |address, variant| Box::pin(sse_load(address, variant)),
    },
    Path {
        name: "ws_inflight_1",
        start: |rt| ws_servers(rt, 1),
        drive: |address, variant| Box::pin(ws_load(address, variant)),
    },
    Path {
        name: "ws_inflight_8",
        start: |rt| ws_servers(rt, 8),
        drive: |address, variant| Box::pin(ws_load(address, variant)),
    },
    Path {
        name: "ws_inflight_64",
        start: |rt| ws_servers(rt, 64),
        drive: |address, variant| Box::pin(ws_load(address, variant)),
    },
    Path {
        name: "redis_inflight_1",
        start: |rt| redis_servers(rt, 1),
        drive: |address, variant| Box::pin(redis_load(address, variant)),
    },
    Path {
        name: "redis_inflight_8",
        start: |rt| redis_servers(rt, 8),
        drive: |address, variant| Box::pin(redis_load(address, variant)),
    },
    Path {
        name: "redis_inflight_64",
        start: |rt| redis_servers(rt, 64),
        drive: |address, variant| Box::pin(redis_load(address, variant)),
    },
    Path {
        name: "cluster_inflight_1",
        start: |rt| cluster_servers(rt, 1),
        drive: |_, variant| Box::pin(cluster_load(variant)),
    },
    Path {
        name: "cluster_inflight_8",
        start: |rt| cluster_servers(rt, 8),
        drive: |_, variant| Box::pin(cluster_load(variant)),
    },
    Path {
        name: "cluster_inflight_64",
        start: |rt| cluster_servers(rt, 64),
        drive: |_, variant| Box::pin(cluster_load(variant)),
    },
];

/// Concurrent callers of the unary paths (64 on the legacy MCP session).
const CALLERS: usize = 32;
/// Concurrent callers, and connections, on one legacy MCP session.
const SESSION_CALLERS: usize = 64;
/// Calls per round of the HTTP paths.
const HTTP_CALLS: usize = 20_000;
/// Calls per round of the MCP paths through the SDK client.
const MCP_CALLS: usize = 5_000;
/// Calls per round of the MCP paths as raw JSON-RPC.
const MCP_RAW_CALLS: usize = 10_000;
/// Calls per round of the WebSocket and Redis paths.
const RELAY_CALLS: usize = 5_000;
/// Items of the SSE subscription.
const SSE_ITEMS: u32 = 20_000;

fn registry() -> OperationRegistry {
    OperationRegistry::from_inventory()
}

/// Binds a loopback listener on the server runtime and spawns `serve` on it.
fn spawn_server<F, Fut>(rt: &Runtime, serve: F) -> SocketAddr
where
    F: FnOnce(TcpListener) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let listener = rt
        .block_on(TcpListener::bind("127.0.0.1:0"))
        .expect("bind a loopback port");
    let address = listener.local_addr().expect("address");
    let _entered = rt.enter();
    rt.spawn(serve(listener));
    address
}

/// `axum::serve` as a user writes it, with `TCP_NODELAY` on each connection (as opkit's
/// serve loop sets it), so Nagle's algorithm does not decide the comparison.
async fn axum_serve(listener: TcpListener, router: axum::Router) {
    use axum::serve::ListenerExt;
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    axum::serve(listener, router).await.expect("axum serve");
}

// ---------------------------------------------------------------------------------------------
// HTTP

/// opkit's `HttpServer` on the bench registry, as `configure` sets it, served by its own loop.
fn spawn_opkit(rt: &Runtime, configure: fn(HttpServer) -> HttpServer) -> SocketAddr {
    spawn_server(rt, move |listener| async move {
        configure(HttpServer::new(registry()))
            .serve(listener)
            .await
            .expect("opkit serve");
    })
}

/// The equal-work axum handler (`axum_peer::checked_router`) under `layer`.
fn spawn_checked<L>(rt: &Runtime, layer: L) -> SocketAddr
where
    L: FnOnce(axum::Router) -> axum::Router,
{
    let router = layer(axum_peer::checked_router());
    spawn_server(rt, |listener| axum_serve(listener, router))
}

fn http_sides(rt: &Runtime, opkit: Variant, axum: Variant) -> Vec<Side> {
    let served = spawn_opkit(rt, |server| server);
    let hand_written = spawn_server(rt, |listener| axum_serve(listener, axum_peer::router()));
    let checked = spawn_checked(rt, |router| router);
    vec![
        Side {
            name: "opkit",
            address: served,
            variant: opkit,
        },
        Side {
            name: "axum",
            address: hand_written,
            variant: axum,
        },
        // The same routes as `axum`, so the same requests.
        Side {
            name: "axum_jsonschema",
            address: checked,
            variant: axum,
        },
    ]
}

fn http_servers(rt: &Runtime) -> Vec<Side> {
    http_sides(rt, Variant::OpkitTiny, Variant::AxumTiny)
}

fn http_servers_medium(rt: &Runtime) -> Vec<Side> {
    http_sides(rt, Variant::OpkitMedium, Variant::AxumMedium)
}

/// The `*_gzip` paths: opkit as served by default, the equal-work axum handler under
/// tower-http's `CompressionLayer` (its defaults) and without it; for the tiny and medium
/// answers (under 1,400 bytes) also opkit compressing from 32 bytes, for the list opkit
/// with its compression off (the list's serving without gzip, against the axum handler's).
fn http_gzip_sides(rt: &Runtime, opkit: Http, axum: Http) -> Vec<Side> {
    let served = spawn_opkit(rt, |server| server);
    let (other, other_address) = match opkit {
        Http::OpkitList => (
            "opkit_uncompressed",
            spawn_opkit(rt, |server| server.compression(false)),
        ),
        _ => (
            "opkit_min_32",
            spawn_opkit(rt, |server| server.compression_min_size(32)),
        ),
    };
    let compressed = spawn_checked(rt, |router| {
        router.layer(tower_http::compression::CompressionLayer::new())
    });
    let checked = spawn_checked(rt, |router| router);
    vec![
        Side {
            name: "opkit",
            address: served,
            variant: Variant::Gzip(opkit),
        },
        Side {
            name: other,
            address: other_address,
            variant: Variant::Gzip(opkit),
        },
        Side {
            name: "axum_jsonschema_gzip",
            address: compressed,
            variant: Variant::Gzip(axum),
        },
        Side {
            name: "axum_jsonschema",
            address: checked,
            variant: Variant::Gzip(axum),
        },
    ]
}

async fn http_load(address: SocketAddr, variant: Variant) -> Sample {
    let (http, gzip) = match variant {
        Variant::OpkitTiny => (Http::OpkitTiny, false),
        Variant::OpkitMedium => (Http::OpkitMedium, false),
        Variant::AxumTiny => (Http::AxumTiny, false),
        Variant::AxumMedium => (Http::AxumMedium, false),
        Variant::Gzip(http) => (http, true),
        _ => unreachable!("an HTTP variant"),
    };
    let (path, body) = match http {
        Http::OpkitTiny => ("/ops/bench.add", tiny_json()),
        Http::OpkitMedium => ("/ops/bench.medium", medium_json()),
        Http::OpkitList => ("/ops/bench.list", list_json()),
        Http::AxumTiny => ("/add", tiny_json()),
        Http::AxumMedium => ("/medium", medium_json()),
        Http::AxumList => ("/list", list_json()),
    };
    let client = load_client(CALLERS);
    let url = format!("http://{address}{path}");
    let body = Arc::new(serde_json::to_vec(&body).expect("body"));
    let call = move || {
        let request = client
            .post(&url)
            .header("content-type", "application/json")
            .body((*body).clone());
        // The client decodes no encoding: the bytes read are the bytes sent.
        let request = if gzip {
            request.header("accept-encoding", "gzip")
        } else {
            request
        };
        async move {
            let response = request.send().await.expect("send");
            assert!(response.status().is_success(), "{}", response.status());
            response.bytes().await.expect("body").len()
        }
    };
    let size = call().await;
    let mut sample = load(CALLERS, HTTP_CALLS, move || {
        let call = call();
        async move {
            call.await;
        }
    })
    .await;
    sample.bytes_per_item = size as f64;
    sample
}

// ---------------------------------------------------------------------------------------------
// MCP

fn mcp_config(lifecycle: McpLifecycle) -> rmcp::transport::StreamableHttpServerConfig {
    let mut config = rmcp::transport::StreamableHttpServerConfig::default();
    config.legacy_session_mode = lifecycle == McpLifecycle::Legacy;
    config
}

fn mcp_servers(rt: &Runtime, lifecycle: McpLifecycle) -> Vec<Side> {
    let served = spawn_server(rt, move |listener| async move {
        McpServer::new(registry())
            .http_config(mcp_config(lifecycle))
            .serve_http(listener)
            .await
            .expect("opkit MCP serve");
    });
    let hand_written = spawn_rmcp(rt, lifecycle, rmcp_server::RmcpBench::default);
    let checked = spawn_rmcp(rt, lifecycle, rmcp_checked::RmcpChecked::default);
    vec![
        Side {
            name: "opkit",
            address: served,
            variant: Variant::McpRaw(lifecycle),
        },
        Side {
            name: "rmcp",
            address: hand_written,
            variant: Variant::McpRaw(lifecycle),
        },
        Side {
            name: "rmcp_jsonschema",
            address: checked,
            variant: Variant::McpRaw(lifecycle),
        },
        Side {
            name: "opkit_sdk_client",
            address: served,
            variant: Variant::Mcp(lifecycle),
        },
        Side {
            name: "rmcp_sdk_client",
            address: hand_written,
            variant: Variant::Mcp(lifecycle),
        },
    ]
}

/// An rmcp server made by `server` on `StreamableHttpService`, at `/mcp`.
fn spawn_rmcp<S: rmcp::ServerHandler>(
    rt: &Runtime,
    lifecycle: McpLifecycle,
    server: fn() -> S,
) -> SocketAddr {
    spawn_server(rt, move |listener| async move {
        use rmcp::transport::streamable_http_server::StreamableHttpService;
        use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
        let service = StreamableHttpService::new(
            move || Ok(server()),
            Arc::new(LocalSessionManager::default()),
            mcp_config(lifecycle),
        );
        axum_serve(listener, axum::Router::new().nest_service("/mcp", service)).await;
    })
}

async fn mcp_load(address: SocketAddr, variant: Variant) -> Sample {
    let lifecycle = match variant {
        Variant::McpRaw(lifecycle) => return mcp_raw_load(address, lifecycle).await,
        Variant::Mcp(lifecycle) => lifecycle,
        _ => unreachable!("an MCP variant"),
    };
    let connection = McpConnection::connect_http(
        &format!("http://{address}/mcp"),
        McpOptions::new("bench").lifecycle(lifecycle),
    )
    .await
    .expect("connect");
    let connection = Arc::new(connection);
    let sample = {
        let connection = connection.clone();
        load(CALLERS, MCP_CALLS, move || {
            let connection = connection.clone();
            async move {
                let ctx = opkit::OperationContext::default();
                let envelope = connection
                    .call_tool("bench.add", tiny_json(), &ctx)
                    .await
                    .expect("tools/call");
                assert_eq!(envelope.data, json!({"sum": 42}));
            }
        })
        .await
    };
    connection.close();
    sample
}

/// The protocol version of the legacy era's session.
const LEGACY_VERSION: &str = "2025-11-25";
/// The stateless era.
const MODERN_VERSION: &str = "2026-07-28";

/// `tools/call` of `bench.add` as raw JSON-RPC POSTs from `CALLERS` connections: in the
/// legacy era all on one session (one `initialize`), in the modern era each request
/// carrying its version and capabilities in `_meta`.
async fn mcp_raw_load(address: SocketAddr, lifecycle: McpLifecycle) -> Sample {
    let client = load_client(SESSION_CALLERS);
    let url = format!("http://{address}/mcp");
    let post = {
        let client = client.clone();
        let url = url.clone();
        move |body: &serde_json::Value| {
            client
                .post(&url)
                .header("accept", "application/json, text/event-stream")
                .header("content-type", "application/json")
                .body(body.to_string())
        }
    };
    let (version, session) = if lifecycle == McpLifecycle::Legacy {
        let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": LEGACY_VERSION, "capabilities": {},
            "clientInfo": {"name": "bench", "version": "0"}}});
        let response = post(&initialize)
            .header("mcp-protocol-version", LEGACY_VERSION)
            .send()
            .await
            .expect("initialize");
        let session = response.headers()["mcp-session-id"]
            .to_str()
            .expect("session id")
            .to_owned();
        response.bytes().await.expect("initialize result");
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let response = post(&initialized)
            .header("mcp-protocol-version", LEGACY_VERSION)
            .header("mcp-session-id", &session)
            .send()
            .await
            .expect("initialized");
        assert!(response.status().is_success(), "{}", response.status());
        (LEGACY_VERSION, Some(session))
    } else {
        (MODERN_VERSION, None)
    };
    let mut params = json!({"name": "bench.add", "arguments": tiny_json()});
    if session.is_none() {
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": MODERN_VERSION,
            "io.modelcontextprotocol/clientCapabilities": {},
        });
    }
    // JSON-RPC ids are unique within a session: each call takes the next one.
    let ids = Arc::new(AtomicUsize::new(1));
    let callers = if session.is_some() {
        SESSION_CALLERS
    } else {
        CALLERS
    };
    load(callers, MCP_RAW_CALLS, move || {
        let id = ids.fetch_add(1, Ordering::Relaxed);
        let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params});
        let mut request = post(&call)
            .header("mcp-protocol-version", version)
            .header("mcp-method", "tools/call")
            .header("mcp-name", "bench.add");
        if let Some(session) = &session {
            request = request.header("mcp-session-id", session);
        }
        async move {
            let response = request.send().await.expect("tools/call");
            assert!(response.status().is_success(), "{}", response.status());
            let body = response.bytes().await.expect("result");
            assert!(
                find(&body, b"42").is_some(),
                "{}",
                String::from_utf8_lossy(&body)
            );
        }
    })
    .await
}

// ---------------------------------------------------------------------------------------------
// SSE

fn sse_servers(rt: &Runtime) -> Vec<Side> {
    use axum::response::sse::{Event, Sse};
    use axum::routing::get;
    use futures::StreamExt;
    let served = spawn_server(rt, |listener| async move {
        HttpServer::new(registry())
            .serve(listener)
            .await
            .expect("opkit serve");
    });
    let router = axum::Router::new().route(
        "/items",
        get(|| async {
            Sse::new(item_stream(SSE_ITEMS).map(|item| {
                Event::default()
                    .json_data(item)
                    .map_err(|error| std::io::Error::other(error.to_string()))
            }))
        }),
    );
    let hand_written = spawn_server(rt, |listener| axum_serve(listener, router));
    vec![
        Side {
            name: "opkit",
            address: served,
            variant: Variant::OpkitSse,
        },
        Side {
            name: "opkit_compact",
            address: served,
            variant: Variant::OpkitSseCompact,
        },
        Side {
            name: "axum",
            address: hand_written,
            variant: Variant::AxumSse,
        },
    ]
}

async fn sse_load(address: SocketAddr, variant: Variant) -> Sample {
    use futures::StreamExt;
    let client = reqwest::Client::new();
    let request = match variant {
        Variant::OpkitSse | Variant::OpkitSseCompact => {
            let request = client
                .post(format!("http://{address}/ops/bench.items"))
                .header("content-type", "application/json")
                .body(json!({"count": SSE_ITEMS}).to_string());
            if matches!(variant, Variant::OpkitSseCompact) {
                request.header("accept", "text/event-stream; opkit=data")
            } else {
                request.header("accept", "text/event-stream")
            }
        }
        Variant::AxumSse => client.get(format!("http://{address}/items")),
        _ => unreachable!("an SSE variant"),
    };
    let (cpu_before, client_before) = (server_cpu(), client_cpu());
    let started = Instant::now();
    let response = request.send().await.expect("subscribe");
    assert!(response.status().is_success(), "{}", response.status());
    let first = started.elapsed();
    let mut body = response.bytes_stream();
    let mut bytes = 0usize;
    // Items are counted by their `"sum"` key (one per item event; `complete` has none). The
    // last bytes of a chunk are kept, so a key split across chunks is still found once.
    let mut items = 0usize;
    let mut carry: Vec<u8> = Vec::new();
    while let Some(chunk) = body.next().await {
        let chunk = chunk.expect("chunk");
        bytes += chunk.len();
        carry.extend_from_slice(&chunk);
        items += carry
            .windows(5)
            .filter(|window| window == b"\"sum\"")
            .count();
        let keep = carry.len().min(4);
        carry.drain(..carry.len() - keep);
    }
    let elapsed = started.elapsed();
    assert_eq!(items, SSE_ITEMS as usize, "every item arrives once");
    Sample {
        rate: items as f64 / elapsed.as_secs_f64(),
        p50: first,
        p99: elapsed,
        bytes_per_item: bytes as f64 / items as f64,
        server_cpu: server_cpu().saturating_sub(cpu_before) / items.max(1) as u32,
        client_cpu: client_cpu().saturating_sub(client_before) / items.max(1) as u32,
    }
}

/// Where `needle` first occurs in `haystack`.
fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

// ---------------------------------------------------------------------------------------------
// Throughput under concurrency: WebSocket and Redis (issue 36)

/// Keeps `keep` alive on the server runtime until the process ends (as the HTTP servers run).
fn keep_serving<T: Send + 'static>(rt: &Runtime, keep: T) {
    rt.spawn(async move {
        let _keep = keep;
        std::future::pending::<()>().await;
    });
}

/// The hub's tokens: one for the serving spoke, one for the caller's.
fn hub_tokens() -> StaticTokens {
    StaticTokens::new()
        .with_token("serving-token", SpokeGrant::service("serving"))
        .with_token("calling-token", SpokeGrant::new("calling"))
}

/// An opkit `WsHub` with a serving spoke, and a raw relay hub with its server.
fn ws_servers(rt: &Runtime, in_flight: usize) -> Vec<Side> {
    let opkit = rt.block_on(async {
        let hub = WsHub::bind("127.0.0.1:0", hub_tokens()).await.expect("hub");
        let serving = Arc::new(
            WsSpoke::connect(&hub.url(), "serving-token")
                .await
                .expect("serving spoke"),
        );
        let handle = CallHandler::new(registry(), serving.clone())
            .spawn()
            .await
            .expect("handler");
        let address = hub.local_addr();
        keep_serving(rt, (hub, serving, handle));
        address
    });
    let raw = rt.block_on(async {
        let hub = ws_relay::spawn_hub().await;
        ws_relay::spawn_server(hub).await;
        hub
    });
    vec![
        Side {
            name: "opkit",
            address: opkit,
            variant: Variant::WsOpkit(in_flight),
        },
        Side {
            name: "raw",
            address: raw,
            variant: Variant::WsRaw(in_flight),
        },
    ]
}

async fn ws_load(hub: SocketAddr, variant: Variant) -> Sample {
    match variant {
        Variant::WsOpkit(in_flight) => {
            let calling = Arc::new(
                WsSpoke::connect(&format!("ws://{hub}/"), "calling-token")
                    .await
                    .expect("calling spoke"),
            );
            let map = PendingRequestMap::connect(calling.clone())
                .await
                .expect("caller");
            let sample = opkit_calls(map, in_flight).await;
            calling.close();
            sample
        }
        Variant::WsRaw(in_flight) => {
            let caller = Arc::new(ws_relay::RelayCaller::connect(hub).await);
            load(in_flight, RELAY_CALLS, move || {
                let caller = caller.clone();
                async move { assert_eq!(caller.add(2, 40).await, 42) }
            })
            .await
        }
        _ => unreachable!("a WebSocket variant"),
    }
}

/// `RELAY_CALLS` calls of `bench.add` through `map`, `in_flight` at a time.
async fn opkit_calls(map: PendingRequestMap, in_flight: usize) -> Sample {
    load(in_flight, RELAY_CALLS, move || {
        let map = map.clone();
        async move {
            let ctx = opkit::OperationContext::default();
            let envelope = map.call(add::ID, tiny_json(), &ctx).await.expect("call");
            assert_eq!(envelope.data, json!({"sum": 42}));
        }
    })
    .await
}

/// The Redis server of `REDIS_URL` (`redis://<ip>:<port>/`), if set.
fn redis_address() -> Option<SocketAddr> {
    let url = std::env::var("REDIS_URL").ok()?;
    let rest = url.strip_prefix("redis://")?;
    rest.split('/').next()?.parse().ok()
}

/// The names of a path's opkit and raw sides: one per calls-in-flight count, so the servers
/// of the other paths (still running) never take its requests.
fn redis_prefix(in_flight: usize) -> String {
    format!("opkit-bench-{in_flight}:")
}

fn raw_stream(in_flight: usize) -> String {
    format!("raw-bench-{in_flight}:requests")
}

fn redis_options(in_flight: usize) -> RedisOptions {
    RedisOptions::default().with_prefix(redis_prefix(in_flight))
}

/// An opkit `CallHandler` over `RedisPubSub`, and a raw stream worker (none without
/// `REDIS_URL`).
fn redis_servers(rt: &Runtime, in_flight: usize) -> Vec<Side> {
    let Some(address) = redis_address() else {
        return Vec::new();
    };
    let url = format!("redis://{address}/");
    rt.block_on(async {
        let serving: Arc<dyn PubSub> = Arc::new(
            RedisPubSub::connect_with(&url, redis_options(in_flight))
                .await
                .expect("redis"),
        );
        let handle = CallHandler::new(registry(), serving)
            .spawn()
            .await
            .expect("handler");
        keep_serving(rt, handle);
        redis_stream::spawn_worker(&url, &raw_stream(in_flight)).await;
    });
    vec![
        Side {
            name: "opkit",
            address,
            variant: Variant::RedisOpkit(in_flight),
        },
        Side {
            name: "raw",
            address,
            variant: Variant::RedisRaw(in_flight),
        },
    ]
}

async fn redis_load(address: SocketAddr, variant: Variant) -> Sample {
    let url = format!("redis://{address}/");
    match variant {
        Variant::RedisOpkit(in_flight) => {
            let calling: Arc<dyn PubSub> = Arc::new(
                RedisPubSub::connect_with(&url, redis_options(in_flight))
                    .await
                    .expect("redis"),
            );
            let map = PendingRequestMap::connect(calling).await.expect("caller");
            opkit_calls(map, in_flight).await
        }
        Variant::RedisRaw(in_flight) => {
            let caller =
                Arc::new(redis_stream::StreamCaller::connect(&url, &raw_stream(in_flight)).await);
            load(in_flight, RELAY_CALLS, move || {
                let caller = caller.clone();
                async move { assert_eq!(caller.add(2, 40).await, 42) }
            })
            .await
        }
        _ => unreachable!("a Redis variant"),
    }
}

/// The nodes of the Redis Cluster of `REDIS_CLUSTER_NODES` (comma-separated `redis://`
/// URLs), if set.
fn cluster_nodes() -> Option<Vec<String>> {
    let nodes = std::env::var("REDIS_CLUSTER_NODES").ok()?;
    Some(nodes.split(',').map(str::to_owned).collect())
}

fn raw_cluster_name(in_flight: usize) -> String {
    format!("raw-bench-{in_flight}")
}

/// An opkit `CallHandler` over `RedisPubSub` on the cluster, and a raw cluster stream worker
/// (none without `REDIS_CLUSTER_NODES`).
fn cluster_servers(rt: &Runtime, in_flight: usize) -> Vec<Side> {
    let Some(nodes) = cluster_nodes() else {
        return Vec::new();
    };
    rt.block_on(async {
        let serving: Arc<dyn PubSub> = Arc::new(
            RedisPubSub::connect_cluster_with(&nodes, redis_options(in_flight))
                .await
                .expect("redis cluster"),
        );
        let handle = CallHandler::new(registry(), serving)
            .spawn()
            .await
            .expect("handler");
        keep_serving(rt, handle);
        redis_cluster::spawn_worker(&nodes, &raw_cluster_name(in_flight)).await;
    });
    // The address is not used: the sides find the cluster in `REDIS_CLUSTER_NODES`.
    let address = SocketAddr::from(([127, 0, 0, 1], 0));
    vec![
        Side {
            name: "opkit",
            address,
            variant: Variant::ClusterOpkit(in_flight),
        },
        Side {
            name: "raw",
            address,
            variant: Variant::ClusterRaw(in_flight),
        },
    ]
}

async fn cluster_load(variant: Variant) -> Sample {
    let nodes = cluster_nodes().expect("REDIS_CLUSTER_NODES");
    match variant {
        Variant::ClusterOpkit(in_flight) => {
            let calling: Arc<dyn PubSub> = Arc::new(
                RedisPubSub::connect_cluster_with(&nodes, redis_options(in_flight))
                    .await
                    .expect("redis cluster"),
            );
            let map = PendingRequestMap::connect(calling).await.expect("caller");
            opkit_calls(map, in_flight).await
        }
        Variant::ClusterRaw(in_flight) => {
            let caller = Arc::new(
                redis_cluster::ClusterCaller::connect(&nodes, &raw_cluster_name(in_flight)).await,
            );
            load(in_flight, RELAY_CALLS, move || {
                let caller = caller.clone();
                async move { assert_eq!(caller.add(2, 40).await, 42) }
            })
            .await
        }
        _ => unreachable!("a Redis Cluster variant"),
    }
}

// ---------------------------------------------------------------------------------------------
// The load generator

/// The load generator's HTTP client: keeps up to `connections` idle connections per server,
/// with `TCP_NODELAY`.
fn load_client(connections: usize) -> reqwest::Client {
    reqwest::Client::builder()
        .pool_max_idle_per_host(connections)
        .tcp_nodelay(true)
        .build()
        .expect("client")
}

/// Runs `total` calls made by `call`, `callers` at a time, and measures the rate and the
/// latency percentiles. Bounded: exactly `total` calls, then every caller stops.
async fn load<F, Fut>(callers: usize, total: usize, call: F) -> Sample
where
    F: Fn() -> Fut + Clone + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    // Warm up: connections, pools and sessions.
    for _ in 0..callers.min(8) {
        call().await;
    }
    let next = Arc::new(AtomicUsize::new(0));
    let (cpu_before, client_before) = (server_cpu(), client_cpu());
    let started = Instant::now();
    let tasks: Vec<_> = (0..callers)
        .map(|_| {
            let next = next.clone();
            let call = call.clone();
            tokio::spawn(async move {
                let mut latencies = Vec::with_capacity(total / callers + 1);
                while next.fetch_add(1, Ordering::Relaxed) < total {
                    let begun = Instant::now();
                    call().await;
                    latencies.push(begun.elapsed());
                }
                latencies
            })
        })
        .collect();
    let mut latencies = Vec::with_capacity(total);
    for task in tasks {
        latencies.extend(task.await.expect("caller"));
    }
    let elapsed = started.elapsed();
    let cpu = server_cpu().saturating_sub(cpu_before);
    let client = client_cpu().saturating_sub(client_before);
    latencies.sort_unstable();
    let at = |quantile: f64| {
        latencies[((latencies.len() as f64 * quantile) as usize).min(latencies.len() - 1)]
    };
    Sample {
        rate: latencies.len() as f64 / elapsed.as_secs_f64(),
        p50: at(0.5),
        p99: at(0.99),
        bytes_per_item: 0.0,
        server_cpu: cpu / latencies.len().max(1) as u32,
        client_cpu: client / latencies.len().max(1) as u32,
    }
}
