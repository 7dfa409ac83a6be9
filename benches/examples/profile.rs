//! A loop of one bench path for a profiler (callgrind or perf):
//! `cargo build --release --example profile && valgrind --tool=callgrind target/release/examples/profile tiny 20000`.
//! Paths: `tiny`, `medium`, `tiny-floor`, `medium-floor` (the JSON floor), (`registry.execute`), `typed` (`add::call`), `stream` (`registry.subscribe`), `typed-stream` (`items::subscribe`), `typed-middleware` (`add::call` through one no-op middleware), `memory` (call
//! protocol round trip over `MemoryPubSub`), `mcp` and `mcp-rmcp` (`tools/call` in process:
//! opkit's handler and the equal-work rmcp server, with CPU and allocations per call),
//! `mcp-pair` (the two in one process, in alternating batches: their ratio), `http`,
//! `http-plain` (`http` without the compression layer), `http-axum`, `http-medium`,
//! `http-axum-medium` (`POST` of the tiny or medium input through
//! `HttpServer::router` and the equal-work axum + `jsonschema` router, in process: everything
//! the server does per request but hyper's connection work, which both share), `mcp-http` and
//! `mcp-http-rmcp` (`tools/call` on one legacy Streamable HTTP session, through opkit's
//! `McpServer::try_router` and the equal-work rmcp server's `StreamableHttpService`),
//! `mcp-http-modern` and `mcp-http-modern-rmcp` (the same in the stateless 2026-07-28 era),
//! `http-tcp` and `http-tcp-axum-serve` (one router, `HttpServer::router` without compression,
//! served over loopback by opkit's accept loop, `serve_router`, and by `axum::serve`, a
//! `reqwest` client sending one `POST` at a time on one kept-alive connection: the
//! difference is the accept loop's work per request), `sse`, `sse-compact` and `sse-axum`
//! (one subscription of 1,000 tiny items per round through `HttpServer::router`, in opkit's
//! envelope and compact encodings, and through an axum `Sse` handler, the body read to its
//! end in process: the figures per call are per 1,000 items, so µs read as ns per item).
//!
//! The transports, each with its raw baseline, `n` calls in flight (the third argument, 1
//! unless given), every side on this one thread: `ws`, `ws-raw` (a `WsHub` with a serving and
//! a calling `WsSpoke`, and `opkit_benches::ws_relay`), `redis`, `redis-raw` (`REDIS_URL`;
//! `RedisPubSub` and `opkit_benches::redis_stream`), `cluster`, `cluster-raw`
//! (`REDIS_CLUSTER_NODES`, comma-separated; `opkit_benches::redis_cluster`). After 500 calls
//! to warm up, each prints the CPU time the thread spent per call (user and kernel, from
//! `/proc/thread-self/schedstat`: every side of the call but Redis itself), which moves much
//! less with the machine's load than the rate does, and the heap allocations and bytes
//! allocated per call (a counting global allocator: these do not move with the load at all):
//! `target/release/examples/profile ws 20000 8`.
//!
//! Under valgrind, rustix's vDSO lookup faults; built with its libc backend, in a target
//! directory of its own (the flag rebuilds everything), callgrind runs every path, and the
//! difference of two runs of different lengths is the instructions per call, a figure the
//! machine's load does not move: `RUSTFLAGS="--cfg rustix_use_libc"
//! CARGO_TARGET_DIR=<dir> cargo build --release --example profile`, then
//! `valgrind --tool=callgrind <dir>/release/examples/profile mcp 2000` and `... mcp 4000`.

use futures::StreamExt;
use opkit::prelude::*;
use opkit::protocol::{CallHandler, MemoryPubSub, PendingRequestMap, PubSub};
use opkit_benches::*;
use serde::Deserialize;
use serde_json::json;
use std::sync::Arc;

/// Counts the heap allocations and their bytes, so the transport paths can print them per call.
mod counting {
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

    pub static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);
    pub static BYTES: AtomicU64 = AtomicU64::new(0);
    /// Off for a path that times calls rather than counts their allocations (`mcp-pair`):
    /// the counters' read-modify-writes would be timed with them.
    pub static ON: AtomicBool = AtomicBool::new(true);

    pub struct Counting;

    // SAFETY: every call is passed on to `System` unchanged; the counters are plain atomics.
    unsafe impl GlobalAlloc for Counting {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            if ON.load(Ordering::Relaxed) {
                ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
                BYTES.fetch_add(layout.size() as u64, Ordering::Relaxed);
            }
            // SAFETY: the caller's contract for `alloc` is passed on.
            unsafe { System.alloc(layout) }
        }
        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            // SAFETY: `ptr` was allocated by `System` with `layout`.
            unsafe { System.dealloc(ptr, layout) }
        }
        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            if ON.load(Ordering::Relaxed) {
                ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
                BYTES.fetch_add(new_size as u64, Ordering::Relaxed);
            }
            // SAFETY: the caller's contract for `realloc` is passed on.
            unsafe { System.realloc(ptr, layout, new_size) }
        }
    }

    /// Allocations and bytes allocated so far.
    pub fn now() -> (u64, u64) {
        (
            ALLOCATIONS.load(Ordering::Relaxed),
            BYTES.load(Ordering::Relaxed),
        )
    }
}

#[global_allocator]
static ALLOCATOR: counting::Counting = counting::Counting;

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().unwrap_or_else(|| "tiny".to_owned());
    let rounds: usize = args.next().and_then(|n| n.parse().ok()).unwrap_or(10_000);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let registry = OperationRegistry::from_inventory();
    let ctx = OperationContext::default();
    rt.block_on(async {
        match path.as_str() {
            "tiny" => {
                for _ in 0..rounds {
                    let out = registry.execute(add::ID, tiny_json(), &ctx).await;
                    std::hint::black_box(out.expect("execute"));
                }
            }
            "typed" => {
                for _ in 0..rounds {
                    let out = add::call(&ctx, 2, 40).await;
                    std::hint::black_box(out.expect("typed call"));
                }
            }
            "typed-middleware" => {
                let ctx = OperationRegistry::from_inventory()
                    .with_middleware(opkit::middleware::from_fn(
                        |call, next: opkit::middleware::Next| next.run(call),
                    ))
                    .context();
                for _ in 0..rounds {
                    let out = add::call(&ctx, 2, 40).await;
                    std::hint::black_box(out.expect("typed call"));
                }
            }
            "tiny-floor" => {
                for _ in 0..rounds {
                    let input = tiny_json();
                    let input = AddIn::deserialize(&input).expect("input");
                    let output = serde_json::to_value(add(input.a, input.b).await).expect("output");
                    std::hint::black_box(output);
                }
            }
            "medium-floor" => {
                for _ in 0..rounds {
                    let input = medium_json();
                    let input = MediumIn::deserialize(&input).expect("input");
                    let output = serde_json::to_value(medium(Input(input)).await).expect("output");
                    std::hint::black_box(output);
                }
            }
            "medium" => {
                for _ in 0..rounds {
                    let out = registry.execute(medium::ID, medium_json(), &ctx).await;
                    std::hint::black_box(out.expect("execute"));
                }
            }
            "stream" => {
                let mut items = registry
                    .subscribe(items::ID, json!({"count": rounds}), &ctx)
                    .await
                    .expect("subscribe");
                while let Some(item) = items.next().await {
                    std::hint::black_box(item.expect("item"));
                }
            }
            "typed-stream" => {
                let mut items = std::pin::pin!(items::subscribe(&ctx, rounds as u32));
                while let Some(item) = items.next().await {
                    std::hint::black_box(item.expect("item"));
                }
            }
            "memory" => {
                let bus: Arc<dyn PubSub> = Arc::new(MemoryPubSub::new());
                let _handle = CallHandler::new(registry.clone(), bus.clone())
                    .spawn()
                    .await
                    .expect("handler");
                let map = PendingRequestMap::connect(bus).await.expect("caller");
                for _ in 0..rounds {
                    let out = map.call(add::ID, tiny_json(), &ctx).await;
                    std::hint::black_box(out.expect("call"));
                }
            }
            "mcp" | "mcp-rmcp" => mcp::run(&path, rounds, registry).await,
            "mcp-pair" => mcp::pair(rounds, registry).await,
            "mcp-http" | "mcp-http-rmcp" | "mcp-http-modern" | "mcp-http-modern-rmcp" => {
                mcp_http::run(&path, rounds, registry).await
            }
            "http" | "http-plain" | "http-axum" | "http-medium" | "http-axum-medium" => {
                http::run(&path, rounds, registry).await
            }
            "http-tcp" | "http-tcp-axum-serve" => http_tcp::run(&path, rounds, registry).await,
            "sse" | "sse-compact" | "sse-axum" => sse::run(&path, rounds, registry).await,
            "sizes" => {
                let execute = registry.execute(add::ID, tiny_json(), &ctx);
                println!("execute future: {} bytes", std::mem::size_of_val(&execute));
                let typed = add::call(&ctx, 2, 40);
                println!("typed call future: {} bytes", std::mem::size_of_val(&typed));
                let map = PendingRequestMap::connect(Arc::new(MemoryPubSub::new()))
                    .await
                    .expect("caller");
                let call = map.call(add::ID, tiny_json(), &ctx);
                println!(
                    "call protocol call future: {} bytes",
                    std::mem::size_of_val(&call)
                );
                mcp::sizes(registry.clone()).await;
            }
            "ws" | "ws-raw" | "redis" | "redis-raw" | "cluster" | "cluster-raw" => {
                let in_flight: usize = args.next().and_then(|n| n.parse().ok()).unwrap_or(1);
                transports::run(&path, rounds, in_flight, registry).await;
            }
            other => panic!("unknown path {other}"),
        }
    });
}

/// The transport paths: `rounds` calls of `bench.add`, `in_flight` at a time.
mod transports {
    use futures::StreamExt;
    use opkit::prelude::*;
    use opkit::protocol::{CallHandler, PendingRequestMap, PubSub};
    use opkit_adapters::redis::{RedisOptions, RedisPubSub};
    use opkit_adapters::websocket::{SpokeGrant, StaticTokens, WsHub, WsSpoke};
    use opkit_benches::*;
    use std::future::Future;
    use std::sync::Arc;

    pub async fn run(path: &str, rounds: usize, in_flight: usize, registry: OperationRegistry) {
        match path {
            "ws" => {
                let tokens = StaticTokens::new()
                    .with_token("serving-token", SpokeGrant::service("serving"))
                    .with_token("calling-token", SpokeGrant::new("calling"));
                let hub = WsHub::bind("127.0.0.1:0", tokens).await.expect("hub");
                let serving = Arc::new(
                    WsSpoke::connect(&hub.url(), "serving-token")
                        .await
                        .expect("serving spoke"),
                );
                let _handle = CallHandler::new(registry, serving)
                    .spawn()
                    .await
                    .expect("handler");
                let calling = Arc::new(
                    WsSpoke::connect(&hub.url(), "calling-token")
                        .await
                        .expect("calling spoke"),
                );
                let map = PendingRequestMap::connect(calling).await.expect("caller");
                opkit_calls(map, rounds, in_flight).await;
            }
            "ws-raw" => {
                let hub = ws_relay::spawn_hub().await;
                ws_relay::spawn_server(hub).await;
                let caller = Arc::new(ws_relay::RelayCaller::connect(hub).await);
                calls(rounds, in_flight, || {
                    let caller = caller.clone();
                    async move { assert_eq!(caller.add(2, 40).await, 42) }
                })
                .await;
            }
            "redis" | "cluster" => {
                let url = match path {
                    "redis" => std::env::var("REDIS_URL").expect("REDIS_URL"),
                    _ => format!(
                        "redis+cluster://{}/",
                        std::env::var("REDIS_CLUSTER_NODES")
                            .expect("REDIS_CLUSTER_NODES")
                            .split(',')
                            .map(|node| node.trim_start_matches("redis://").trim_end_matches('/'))
                            .collect::<Vec<_>>()
                            .join(",")
                    ),
                };
                let options = RedisOptions::default().with_prefix("opkit-profile:");
                let connect = || async {
                    let bus: Arc<dyn PubSub> = Arc::new(
                        RedisPubSub::connect_with(&url, options.clone())
                            .await
                            .expect("redis"),
                    );
                    bus
                };
                let _handle = CallHandler::new(registry, connect().await)
                    .spawn()
                    .await
                    .expect("handler");
                let map = PendingRequestMap::connect(connect().await)
                    .await
                    .expect("caller");
                opkit_calls(map, rounds, in_flight).await;
            }
            "redis-raw" => {
                let url = std::env::var("REDIS_URL").expect("REDIS_URL");
                let stream = "raw-profile:requests";
                redis_stream::spawn_worker(&url, stream).await;
                let caller = Arc::new(redis_stream::StreamCaller::connect(&url, stream).await);
                calls(rounds, in_flight, || {
                    let caller = caller.clone();
                    async move { assert_eq!(caller.add(2, 40).await, 42) }
                })
                .await;
            }
            "cluster-raw" => {
                let nodes: Vec<String> = std::env::var("REDIS_CLUSTER_NODES")
                    .expect("REDIS_CLUSTER_NODES")
                    .split(',')
                    .map(str::to_owned)
                    .collect();
                let stream = "raw-profile";
                redis_cluster::spawn_worker(&nodes, stream).await;
                let caller = Arc::new(redis_cluster::ClusterCaller::connect(&nodes, stream).await);
                calls(rounds, in_flight, || {
                    let caller = caller.clone();
                    async move { assert_eq!(caller.add(2, 40).await, 42) }
                })
                .await;
            }
            _ => unreachable!("a transport path"),
        }
    }

    async fn opkit_calls(map: PendingRequestMap, rounds: usize, in_flight: usize) {
        calls(rounds, in_flight, || {
            let map = map.clone();
            async move {
                let ctx = OperationContext::default();
                let envelope = map.call(add::ID, tiny_json(), &ctx).await.expect("call");
                std::hint::black_box(envelope);
            }
        })
        .await;
    }

    pub async fn calls<F, Fut>(rounds: usize, in_flight: usize, call: F)
    where
        F: Fn() -> Fut,
        Fut: Future<Output = ()>,
    {
        let run = |count: usize| {
            futures::stream::iter(0..count)
                .map(|_| call())
                .buffer_unordered(in_flight)
                .for_each(|()| async {})
        };
        run(500).await;
        let cpu = thread_cpu_ns();
        let allocated = crate::counting::now();
        let started = std::time::Instant::now();
        run(rounds).await;
        let elapsed = started.elapsed();
        let cpu = thread_cpu_ns() - cpu;
        let (allocations, bytes) = crate::counting::now();
        let (allocations, bytes) = (allocations - allocated.0, bytes - allocated.1);
        println!(
            "calls={rounds} in_flight={in_flight} calls_per_s={:.0} cpu_us_per_call={:.2} allocations_per_call={:.1} bytes_per_call={:.0}",
            rounds as f64 / elapsed.as_secs_f64(),
            cpu as f64 / rounds as f64 / 1000.0,
            allocations as f64 / rounds as f64,
            bytes as f64 / rounds as f64
        );
    }

    /// The CPU time this thread has run so far, in nanoseconds.
    fn thread_cpu_ns() -> u64 {
        opkit_benches::schedstat_run_ns(std::path::Path::new("/proc/thread-self/schedstat"))
            .unwrap_or(0)
    }
}

/// `tools/call` in process, one at a time, as `compare`'s `mcp_call_tool` rows: `mcp`
/// (opkit's `McpHandler` serving the registry) and `mcp-rmcp` (the equal-work rmcp server,
/// checking the arguments against the input schema), with the CPU time and allocations per
/// call of the transport paths.
mod mcp {
    use opkit::prelude::*;
    use opkit_benches::*;
    use rmcp::ServerHandler;
    use rmcp::model::{CallToolRequestParams, JsonObject, NumberOrString};
    use rmcp::service::RequestContext;

    pub async fn run(path: &str, rounds: usize, registry: OperationRegistry) {
        match path {
            "mcp" => {
                let handler = opkit_adapters::mcp_server::McpServer::new(registry).handler();
                bench(handler, rounds).await;
            }
            _ => bench(rmcp_checked::RmcpChecked::default(), rounds).await,
        }
    }

    /// The size of one `tools/call` future of each side: what rmcp boxes for every request.
    pub async fn sizes(registry: OperationRegistry) {
        let opkit = opkit_adapters::mcp_server::McpServer::new(registry).handler();
        println!("MCP call_tool future, opkit: {} bytes", size(opkit).await);
        let rmcp = rmcp_checked::RmcpChecked::default();
        println!(
            "MCP call_tool future, rmcp + check: {} bytes",
            size(rmcp).await
        );
    }

    async fn size<S: ServerHandler>(service: S) -> usize {
        let (running, _client) = opkit_benches::mcp_session::initialized(service).await;
        let context = RequestContext::new(NumberOrString::Number(1), running.peer().clone());
        let params = CallToolRequestParams::new("bench.add");
        let call = std::mem::size_of_val(&running.service().call_tool(params, context));
        let context = RequestContext::new(NumberOrString::Number(1), running.peer().clone());
        let request = rmcp::model::ClientRequest::CallToolRequest(
            rmcp::model::CallToolRequest::new(CallToolRequestParams::new("bench.add")),
        );
        let any = std::mem::size_of_val(&rmcp::Service::handle_request(
            running.service(),
            request,
            context,
        ));
        println!("  handle_request future (what rmcp spawns per request): {any} bytes");
        call
    }

    /// `mcp-pair`: opkit's handler and the equal-work rmcp server in one process, timed in
    /// alternating batches of 200 calls as `compare`'s rows time them (each batch's inputs made
    /// before its clock starts, its results dropped after it stops). This machine has slow
    /// and fast stretches seconds long, which put two benches run one after the other in
    /// different ones; alternated, both sides share them, and the ratio of the sums (and of
    /// the medians of the batches) is steadier than that of two medians taken apart.
    pub async fn pair(rounds: usize, registry: OperationRegistry) {
        crate::counting::ON.store(false, std::sync::atomic::Ordering::Relaxed);
        let handler = opkit_adapters::mcp_server::McpServer::new(registry).handler();
        let (opkit, _opkit_client) = opkit_benches::mcp_session::initialized(handler).await;
        let checked = rmcp_checked::RmcpChecked::default();
        let (rmcp, _rmcp_client) = opkit_benches::mcp_session::initialized(checked).await;
        const BATCH: usize = 200;
        let (mut opkit_ns, mut rmcp_ns) = (Vec::new(), Vec::new());
        for round in 0..(rounds / BATCH).max(1) + 5 {
            let opkit_batch = batch(&opkit, BATCH).await;
            let rmcp_batch = batch(&rmcp, BATCH).await;
            // The first rounds warm both up.
            if round >= 5 {
                opkit_ns.push(opkit_batch);
                rmcp_ns.push(rmcp_batch);
            }
        }
        let per_call = |ns: &[f64]| ns.iter().sum::<f64>() / (ns.len() * BATCH) as f64;
        let median = |ns: &mut Vec<f64>| {
            ns.sort_by(f64::total_cmp);
            ns[ns.len() / 2] / BATCH as f64
        };
        let (opkit_mean, rmcp_mean) = (per_call(&opkit_ns), per_call(&rmcp_ns));
        let (opkit_median, rmcp_median) = (median(&mut opkit_ns), median(&mut rmcp_ns));
        println!(
            "batches={} opkit_ns={opkit_mean:.1} rmcp_ns={rmcp_mean:.1} ratio={:.3} median_opkit_ns={opkit_median:.1} median_rmcp_ns={rmcp_median:.1} median_ratio={:.3}",
            opkit_ns.len(),
            opkit_mean / rmcp_mean,
            opkit_median / rmcp_median,
        );
    }

    /// One tiny `bench.add` call's parameters and request context on `peer`.
    fn tiny_call(
        peer: &rmcp::Peer<rmcp::service::RoleServer>,
    ) -> (
        CallToolRequestParams,
        RequestContext<rmcp::service::RoleServer>,
    ) {
        let serde_json::Value::Object(arguments) = tiny_json() else {
            panic!("object input")
        };
        let params = CallToolRequestParams::new("bench.add")
            .with_arguments(JsonObject::from_iter(arguments));
        (
            params,
            RequestContext::new(NumberOrString::Number(1), peer.clone()),
        )
    }

    /// The time `count` calls take on `running`, in nanoseconds.
    async fn batch<S: ServerHandler>(
        running: &rmcp::service::RunningService<rmcp::service::RoleServer, S>,
        count: usize,
    ) -> f64 {
        let handler = running.service();
        let inputs: Vec<_> = (0..count).map(|_| tiny_call(running.peer())).collect();
        let mut results = Vec::with_capacity(count);
        let started = std::time::Instant::now();
        for (params, context) in inputs {
            results.push(handler.call_tool(params, context).await.expect("call"));
        }
        let elapsed = started.elapsed();
        drop(std::hint::black_box(results));
        elapsed.as_nanos() as f64
    }

    async fn bench<S: ServerHandler>(service: S, rounds: usize) {
        let (running, _client) = opkit_benches::mcp_session::initialized(service).await;
        let peer = running.peer().clone();
        let handler = running.service();
        super::transports::calls(rounds, 1, || {
            let (params, context) = tiny_call(&peer);
            async move {
                let response = handler.call_tool(params, context).await.expect("call");
                std::hint::black_box(response);
            }
        })
        .await;
    }
}

/// `tools/call` over Streamable HTTP on one legacy (2025-11-25) session, one `POST` at a time
/// through the router, no sockets, as `serving`'s `mcp_legacy` rows: `mcp-http` (opkit's
/// `McpServer` routes, mounted as `serve_http` mounts them) and `mcp-http-rmcp` (the
/// equal-work rmcp server on rmcp's `StreamableHttpService`, mounted at `/mcp`).
mod mcp_http {
    use axum::body::Body;
    use axum::http::Request;
    use opkit::prelude::*;
    use opkit_benches::*;
    use serde_json::json;
    use std::sync::Arc;
    use tower::ServiceExt;

    /// The legacy era's protocol revision (one session).
    const LEGACY: &str = "2025-11-25";
    /// The stateless era's (each request carries its version and capabilities).
    const MODERN: &str = "2026-07-28";

    pub async fn run(path: &str, rounds: usize, registry: OperationRegistry) {
        let modern = path.starts_with("mcp-http-modern");
        let version = if modern { MODERN } else { LEGACY };
        let mut config = rmcp::transport::StreamableHttpServerConfig::default();
        config.legacy_session_mode = !modern;
        // Mounted as `serve_http` and the serving bench's rmcp side mount them.
        let router = if !path.ends_with("-rmcp") {
            let server = opkit_adapters::mcp_server::McpServer::new(registry).http_config(config);
            server
                .try_router_at("/mcp")
                .expect("router")
                .merge(server.well_known_router())
        } else {
            use rmcp::transport::streamable_http_server::StreamableHttpService;
            use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
            let service = StreamableHttpService::new(
                || Ok(rmcp_checked::RmcpChecked::default()),
                Arc::new(LocalSessionManager::default()),
                config,
            );
            axum::Router::new().nest_service("/mcp", service)
        };
        let session = if modern {
            None
        } else {
            let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": LEGACY, "capabilities": {},
                "clientInfo": {"name": "bench", "version": "0"}}});
            let response = post(&router, &initialize, None, LEGACY).await;
            let session = response.headers()["mcp-session-id"]
                .to_str()
                .expect("session id")
                .to_owned();
            body(response).await;
            let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
            body(post(&router, &initialized, Some(&session), LEGACY).await).await;
            Some(session)
        };
        let mut params = json!({"name": "bench.add", "arguments": tiny_json()});
        if modern {
            params["_meta"] = json!({
                "io.modelcontextprotocol/protocolVersion": MODERN,
                "io.modelcontextprotocol/clientCapabilities": {},
            });
        }
        let ids = std::cell::Cell::new(0);
        super::transports::calls(rounds, 1, || {
            ids.set(ids.get() + 1);
            let call = json!({"jsonrpc": "2.0", "id": ids.get(), "method": "tools/call",
                "params": params});
            let router = router.clone();
            let session = session.clone();
            async move {
                let body = body(post(&router, &call, session.as_deref(), version).await).await;
                assert!(body.windows(2).any(|w| w == b"42"), "{body:?}");
                std::hint::black_box(body);
            }
        })
        .await;
    }

    async fn post(
        router: &axum::Router,
        message: &serde_json::Value,
        session: Option<&str>,
        version: &str,
    ) -> axum::response::Response {
        let mut request = Request::post("/mcp")
            .header("host", "127.0.0.1")
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .header("mcp-protocol-version", version);
        if let Some(session) = session {
            request = request.header("mcp-session-id", session);
        }
        if version == MODERN {
            request = request
                .header("mcp-method", "tools/call")
                .header("mcp-name", "bench.add");
        }
        let request = request
            .body(Body::from(message.to_string()))
            .expect("request");
        let response = router.clone().oneshot(request).await.expect("infallible");
        assert!(response.status().is_success(), "{}", response.status());
        response
    }

    async fn body(response: axum::response::Response) -> bytes::Bytes {
        axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .expect("body")
    }
}

/// The accept loops: one router over loopback, served by opkit's `serve_router` (the loop
/// `HttpServer::serve` runs: a header-read timeout, a connection limit, each request given the
/// peer's address) or by `axum::serve`, on this thread as the client is.
mod http_tcp {
    use opkit::prelude::*;
    use opkit_adapters::http_server::{ConnectionLimits, HttpServer, serve_router};
    use opkit_benches::*;

    pub async fn run(path: &str, rounds: usize, registry: OperationRegistry) {
        let router = HttpServer::new(registry).compression(false).router();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let url = format!(
            "http://{}/ops/bench.add",
            listener.local_addr().expect("address")
        );
        let server = if path == "http-tcp" {
            tokio::spawn(async move {
                serve_router(
                    listener,
                    router,
                    ConnectionLimits::default(),
                    std::future::pending(),
                )
                .await
                .expect("serves");
            })
        } else {
            use axum::serve::ListenerExt;
            let listener = listener.tap_io(|tcp| {
                let _ = tcp.set_nodelay(true);
            });
            tokio::spawn(async move { axum::serve(listener, router).await.expect("serves") })
        };
        let client = reqwest::Client::builder()
            .tcp_nodelay(true)
            .pool_max_idle_per_host(1)
            .build()
            .expect("client");
        let body = serde_json::to_vec(&tiny_json()).expect("body");
        super::transports::calls(rounds, 1, || {
            let request = client
                .post(&url)
                .header("content-type", "application/json")
                .body(body.clone());
            async move {
                let response = request.send().await.expect("the server answers");
                assert!(response.status().is_success(), "{}", response.status());
                std::hint::black_box(response.bytes().await.expect("body"));
            }
        })
        .await;
        server.abort();
    }
}

/// The HTTP paths: one `POST` at a time through the router, no sockets; with `GZIP` set in
/// the environment, each request says `Accept-Encoding: gzip`.
mod sse {
    use axum::body::Body;
    use axum::http::Request;
    use opkit::prelude::*;
    use opkit_benches::*;
    use tower::ServiceExt;

    /// Items per subscription.
    const ITEMS: u32 = 1_000;

    pub async fn run(path: &str, rounds: usize, registry: OperationRegistry) {
        use axum::response::sse::{Event, Sse};
        use futures::StreamExt;
        let (router, request): (axum::Router, fn() -> Request<Body>) = match path {
            "sse-axum" => (
                axum::Router::new().route(
                    "/items",
                    axum::routing::get(|| async {
                        Sse::new(item_stream(ITEMS).map(|item| {
                            Event::default()
                                .json_data(item)
                                .map_err(|error| std::io::Error::other(error.to_string()))
                        }))
                    }),
                ),
                || Request::get("/items").body(Body::empty()).expect("request"),
            ),
            _ => (
                opkit_adapters::http_server::HttpServer::new(registry).router(),
                if path == "sse" {
                    || subscribe("text/event-stream")
                } else {
                    || subscribe("text/event-stream; opkit=data")
                },
            ),
        };
        super::transports::calls(rounds, 1, || {
            let router = router.clone();
            async move {
                let response = router.oneshot(request()).await.expect("infallible");
                assert!(response.status().is_success(), "{}", response.status());
                let mut frames = response.into_body().into_data_stream();
                while let Some(frame) = frames.next().await {
                    std::hint::black_box(frame.expect("frame"));
                }
            }
        })
        .await;
    }

    fn subscribe(accept: &'static str) -> Request<Body> {
        Request::post("/ops/bench.items")
            .header("content-type", "application/json")
            .header("accept", accept)
            .body(Body::from(format!("{{\"count\":{ITEMS}}}")))
            .expect("request")
    }
}

mod http {
    use axum::body::Body;
    use axum::http::Request;
    use opkit::prelude::*;
    use opkit_benches::*;
    use tower::ServiceExt;

    pub async fn run(path: &str, rounds: usize, registry: OperationRegistry) {
        let (router, uri, body) = match path {
            "http" => (opkit_router(registry, true), "/ops/bench.add", tiny_json()),
            "http-plain" => (opkit_router(registry, false), "/ops/bench.add", tiny_json()),
            "http-medium" => (
                opkit_router(registry, true),
                "/ops/bench.medium",
                medium_json(),
            ),
            "http-axum" => (axum_peer::checked_router(), "/add", tiny_json()),
            _ => (axum_peer::checked_router(), "/medium", medium_json()),
        };
        let body = bytes::Bytes::from(serde_json::to_vec(&body).expect("body"));
        let gzip = std::env::var_os("GZIP").is_some();
        super::transports::calls(rounds, 1, || {
            let mut request = Request::post(uri).header("content-type", "application/json");
            if gzip {
                request = request.header("accept-encoding", "gzip");
            }
            let request = request.body(Body::from(body.clone())).expect("request");
            let router = router.clone();
            async move {
                let response = router.oneshot(request).await.expect("infallible");
                assert!(response.status().is_success(), "{}", response.status());
                let body = axum::body::to_bytes(response.into_body(), usize::MAX).await;
                std::hint::black_box(body.expect("body"));
            }
        })
        .await;
    }

    fn opkit_router(registry: OperationRegistry, compression: bool) -> axum::Router {
        opkit_adapters::http_server::HttpServer::new(registry)
            .compression(compression)
            .router()
    }
}
