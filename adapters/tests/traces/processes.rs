//! One trace across three processes: an HTTP request into process A, whose operation calls
//! `b.op` over a real `redis-server` on process B, whose operation calls `c_api.c_hello`,
//! imported (OpenAPI import) from process C's HTTP server. Every process writes its spans
//! as JSON lines to a file of its own; the test reads them all and checks that they form
//! one trace with the right parent links.
//!
//! The children are this test binary run again (`trace_child --ignored --exact`) with the
//! environment variables below; each prints `ADDR <socket address>` when it serves HTTP,
//! `READY` when it is up, and is killed by its PID when the test ends.
#![cfg(all(feature = "redis", feature = "http-server", feature = "openapi"))]

use crate::redis_support;

use opkit::prelude::*;
use opkit::protocol::{CallHandler, PendingRequestMap};
use opkit_adapters::http_server::HttpServer;
use opkit_adapters::openapi::{OpenApiImporter, OpenApiOptions};
use opkit_adapters::redis::{RedisOptions, RedisPubSub};
use opkit_testkit::dir::TempDir;
use opkit_testkit::process::ChildGuard;
use opkit_testkit::rerun::test_name;
use opkit_testkit::trace::{JsonSpans, assert_parent, find, parse_lines};
use redis_support::RedisServer;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tracing_subscriber::layer::SubscriberExt;

const ROLE_VAR: &str = "OPKIT_TEST_TRACE_ROLE";
const SPANS_VAR: &str = "OPKIT_TEST_TRACE_SPANS";
const REDIS_VAR: &str = "OPKIT_TEST_TRACE_REDIS_URL";
const UPSTREAM_VAR: &str = "OPKIT_TEST_TRACE_UPSTREAM";
const PREFIX: &str = "trace:";
const INCOMING: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

/// A child process (killed by its PID when dropped) and the address it serves HTTP on.
struct ChildProcess {
    _child: ChildGuard,
    addr: Option<String>,
}

fn spawn(role: &str, spans: &Path, env: &[(&str, String)]) -> ChildProcess {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .arg(test_name(module_path!(), "trace_child"))
        .args(["--ignored", "--exact", "--nocapture"])
        .env(ROLE_VAR, role)
        .env(SPANS_VAR, spans)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    for (key, value) in env {
        command.env(key, value);
    }
    let mut child = ChildGuard::new(command.spawn().unwrap());
    let stdout = child.child_mut().and_then(|child| child.stdout.take());
    let mut lines = BufReader::new(stdout.unwrap()).lines();
    let mut addr = None;
    for line in lines.by_ref() {
        let line = line.unwrap();
        if let Some(found) = line.strip_prefix("ADDR ") {
            addr = Some(found.trim().to_owned());
        }
        if line.trim() == "READY" {
            break;
        }
    }
    // Keep draining stdout so the child never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    ChildProcess {
        _child: child,
        addr,
    }
}

fn spans_in(path: &Path) -> Vec<Value> {
    parse_lines(&std::fs::read_to_string(path).unwrap_or_default())
}

#[test]
fn one_trace_spans_http_redis_a_replica_and_an_imported_api() {
    let redis = RedisServer::start();
    let dir = TempDir::new("trace");
    let file = |name: &str| -> PathBuf { dir.join(format!("{name}.jsonl")) };
    let c = spawn("c", &file("c"), &[]);
    let c_url = format!("http://{}", c.addr.clone().unwrap());
    let b = spawn(
        "b",
        &file("b"),
        &[(REDIS_VAR, redis.url()), (UPSTREAM_VAR, c_url)],
    );
    let a = spawn("a", &file("a"), &[(REDIS_VAR, redis.url())]);
    let a_url = format!("http://{}/ops/a.front", a.addr.clone().unwrap());

    let runtime = tokio::runtime::Runtime::new().unwrap();
    let body: Value = runtime.block_on(async {
        reqwest::Client::new()
            .post(&a_url)
            .header("traceparent", INCOMING)
            .header("tracestate", "vendor=1")
            .json(&json!({"name": "ada"}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    });
    assert_eq!(body["data"], "hello ada", "{body}");

    // Spans are written as they close; wait (bounded) for the last ones.
    let deadline = Instant::now() + Duration::from_secs(10);
    let (a_spans, b_spans, c_spans) = loop {
        let spans = (
            spans_in(&file("a")),
            spans_in(&file("b")),
            spans_in(&file("c")),
        );
        if (spans.0.len() >= 3 && spans.1.len() >= 4 && spans.2.len() >= 2)
            || Instant::now() > deadline
        {
            break spans;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    drop((a, b, c));

    // A: HTTP server span → client span of the call over Redis (a served call has one span,
    // the server's).
    let a_http = find(&a_spans, "http_server", "a.front");
    let a_client = find(&a_spans, "pending", "b.op");
    // B: call handler → nested execute of the import → its HTTP client span.
    let b_server = find(&b_spans, "call_handler", "b.op");
    let b_import = find(&b_spans, "execute", "c_api.c_hello");
    let b_client = find(&b_spans, "openapi", "c_api.c_hello");
    // C: HTTP server span.
    let c_http = find(&c_spans, "http_server", "c.hello");

    assert_eq!(a_http["trace_id"], "0af7651916cd43dd8448eb211c80319c");
    assert_eq!(a_http["parent_span_id"], "b7ad6b7169203331");
    let chain = [a_http, a_client, b_server, b_import, b_client, c_http];
    for pair in chain.windows(2) {
        assert_parent(pair[1], pair[0]);
    }
    for span in chain {
        assert_eq!(span["opkit.outcome"], "ok", "{span}");
    }
    assert_eq!(a_http["otel.kind"], "server");
    assert_eq!(a_client["otel.kind"], "client");
    assert_eq!(b_server["otel.kind"], "server");
    assert_eq!(b_client["otel.kind"], "client");
    assert_eq!(c_http["otel.kind"], "server");
    assert_eq!(b_server["opkit.request_id"], a_client["opkit.request_id"]);
    let processes: Vec<&Value> = chain.iter().map(|span| &span["process"]).collect();
    assert_eq!(processes, ["a", "a", "b", "b", "b", "c"]);
}

/// The body of a child process (see the module docs); does nothing when run by hand.
#[test]
#[ignore = "a child process of one_trace_spans_http_redis_a_replica_and_an_imported_api"]
fn trace_child() {
    let Ok(role) = std::env::var(ROLE_VAR) else {
        return;
    };
    let spans = std::fs::File::create(std::env::var(SPANS_VAR).unwrap()).unwrap();
    let subscriber = tracing_subscriber::registry().with(JsonSpans::new(spans, &role));
    tracing::subscriber::set_global_default(subscriber).unwrap();
    tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(async move {
            match role.as_str() {
                "a" => process_a().await,
                "b" => process_b().await,
                _ => process_c().await,
            }
        });
}

async fn bus() -> Arc<RedisPubSub> {
    let url = std::env::var(REDIS_VAR).unwrap();
    Arc::new(
        RedisPubSub::connect_with(&url, RedisOptions::default().with_prefix(PREFIX))
            .await
            .unwrap(),
    )
}

async fn serve_http(registry: OperationRegistry) -> ! {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    println!("ADDR {}", listener.local_addr().unwrap());
    println!("READY");
    HttpServer::new(registry).serve(listener).await.unwrap();
    unreachable!("the server runs until the process is killed")
}

fn name_input() -> Value {
    json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]})
}

/// A: `a.front` over HTTP, calling `b.op` over Redis.
async fn process_a() {
    let map = PendingRequestMap::connect(bus().await).await.unwrap();
    let registry = OperationRegistry::new();
    registry
        .register(
            OperationSpec::new("a", "front", OperationKind::Query).input_schema(name_input()),
            Handler::unary(move |input, ctx: OperationContext| {
                let map = map.clone();
                async move {
                    let envelope = map.call("b.op", input, &ctx.child()).await?;
                    Ok(envelope.data)
                }
            }),
        )
        .unwrap();
    serve_http(registry).await;
}

/// B: serves `b.op` over Redis; it calls `c_api.c_hello`, imported from C's HTTP server.
async fn process_b() {
    let upstream = std::env::var(UPSTREAM_VAR).unwrap();
    let import = OpenApiImporter::new(OpenApiOptions::new("c_api").base_url(&upstream))
        .import_url(&format!("{upstream}/openapi.json"))
        .await
        .unwrap();
    let registry = OperationRegistry::new();
    import.register_into(&registry).unwrap();
    registry
        .register(
            OperationSpec::new("b", "op", OperationKind::Query).input_schema(name_input()),
            Handler::unary(|input, ctx: OperationContext| async move {
                let envelope = ctx.env().call("c_api.c_hello", input).await?;
                Ok(envelope.data)
            }),
        )
        .unwrap();
    let _handler = CallHandler::new(registry, bus().await)
        .spawn()
        .await
        .unwrap();
    println!("READY");
    std::future::pending::<()>().await;
}

/// C: `c.hello` over HTTP.
async fn process_c() {
    let registry = OperationRegistry::new();
    registry
        .register(
            OperationSpec::new("c", "hello", OperationKind::Query)
                .input_schema(name_input())
                .output_schema(json!({"type": "string"})),
            Handler::unary(|input, _ctx| async move {
                Ok(json!(format!(
                    "hello {}",
                    input["name"].as_str().unwrap_or("?")
                )))
            }),
        )
        .unwrap();
    serve_http(registry).await;
}
