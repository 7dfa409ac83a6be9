//! The `serve` measurement: what serving an imported API costs. Import + register, then list
//! every tool over MCP (`tools/list`, page by page, on an in-memory pipe), then call every
//! operation once through the registry with `{}` (its input validator compiled and run; a
//! call that passes validation fails fast against `http://127.0.0.1:9`). With
//! `SERVE_OUTPUTS=1`, every operation's output validators are then compiled through the
//! registry (what its first reply would do). With `SERVE_DOCUMENT=1`, between the two, the OpenAPI document opkit's HTTP server would serve
//! for the registry is built and written (its size, time and the peak after it go to
//! stderr).
//!
//! Prints `ok <total ms> <peak kB> <operations> <tools listed> <pages> <list bytes>
//! <import+register ms> <list ms> <calls ms>`.

use opkit::{OperationContext, OperationRegistry};
use opkit_adapters::http_server::HttpServer;
use opkit_adapters::mcp_server::McpServer;
use opkit_adapters::openapi::{OpenApiImporter, OpenApiOptions};
use serde::Deserialize;
use serde::de::{DeserializeOwned, IgnoredAny};
use serde_json::{Value, json};
use std::time::Instant;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// A JSON-RPC answer (or a notification, without `id`).
#[derive(Deserialize)]
struct Answer<R> {
    id: Option<u64>,
    result: Option<R>,
    error: Option<Value>,
}

/// A `tools/list` result: the tools counted, not kept.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ToolsPage {
    tools: Vec<IgnoredAny>,
    next_cursor: Option<String>,
}

/// One JSON-RPC client over a pipe to the server.
struct Client {
    write: tokio::io::WriteHalf<tokio::io::DuplexStream>,
    read: BufReader<tokio::io::ReadHalf<tokio::io::DuplexStream>>,
    next_id: u64,
}

impl Client {
    async fn send(&mut self, message: Value) {
        let mut line = serde_json::to_vec(&message).expect("JSON");
        line.push(b'\n');
        self.write.write_all(&line).await.expect("write");
    }

    /// Sends a request and returns its result (read as `R`, which may skip what the bench
    /// does not need, as a client in another process would spend its own memory on it) and
    /// the size of the answer's line.
    async fn request<R: DeserializeOwned>(&mut self, method: &str, params: Value) -> (R, usize) {
        self.next_id += 1;
        let id = self.next_id;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        loop {
            let mut line = String::new();
            let read = self.read.read_line(&mut line).await.expect("read");
            assert!(read > 0, "the server closed the pipe");
            let answer: Answer<R> = serde_json::from_str(&line).expect("JSON-RPC line");
            if answer.id == Some(id) {
                if let Some(error) = answer.error {
                    panic!("{method} failed: {error}");
                }
                return (answer.result.expect("a result"), line.len());
            }
        }
    }
}

pub fn serve(path: &str, baseline_kb: u64, status_kb: fn(&str) -> u64) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let start = Instant::now();
        let text = std::fs::read_to_string(path).expect("read the document");
        let import =
            OpenApiImporter::new(OpenApiOptions::new("api").base_url("http://127.0.0.1:9"))
                .import_str(&text)
                .expect("import");
        drop(text);
        let registry = OperationRegistry::new();
        // Ids over MCP's 128 characters (some of Microsoft Graph's) are served under the
        // shortened names the MCP server gives them.
        let mut ids = Vec::with_capacity(import.operations.len());
        for (spec, handler) in import.into_pairs() {
            let id = spec.id();
            registry.register_lazy(spec, handler).expect("register");
            ids.push(id);
        }
        let imported_ms = start.elapsed().as_secs_f64() * 1000.0;
        let imported_peak = status_kb("VmHWM:").saturating_sub(baseline_kb);

        let listing = Instant::now();
        let (client_end, server_end) = tokio::io::duplex(1 << 20);
        let (server_read, server_write) = tokio::io::split(server_end);
        let server = McpServer::new(registry.clone());
        if let Err(error) = server.check() {
            println!("error the MCP server refuses the registry: {error}");
            return;
        }
        let server = tokio::spawn(server.serve_io(server_read, server_write));
        let (read, write) = tokio::io::split(client_end);
        let mut client = Client {
            write,
            read: BufReader::new(read),
            next_id: 0,
        };
        client
            .request::<IgnoredAny>(
                "initialize",
                json!({"protocolVersion": "2025-06-18", "capabilities": {},
                    "clientInfo": {"name": "bench", "version": "0"}}),
            )
            .await;
        client
            .send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        let (mut tools, mut pages, mut bytes) = (0usize, 0usize, 0usize);
        let mut cursor: Option<String> = None;
        loop {
            let params = match cursor.take() {
                Some(cursor) => json!({"cursor": cursor}),
                None => json!({}),
            };
            let (page, size): (ToolsPage, usize) = client.request("tools/list", params).await;
            pages += 1;
            bytes += size;
            tools += page.tools.len();
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        drop(client);
        let _ = server.await;
        let list_ms = listing.elapsed().as_secs_f64() * 1000.0;
        let listed_peak = status_kb("VmHWM:").saturating_sub(baseline_kb);

        // The OpenAPI document opkit's HTTP server serves for the registry, built and
        // written once.
        // Only with `SERVE_DOCUMENT=1`: it is not part of the serving targets.
        let documenting = Instant::now();
        let document_bytes = if std::env::var_os("SERVE_DOCUMENT").is_some() {
            let document = HttpServer::new(registry.clone()).openapi();
            serde_json::to_vec(&document).map_or(0, |text| text.len())
        } else {
            0
        };
        let document_ms = documenting.elapsed().as_secs_f64() * 1000.0;
        let documented_peak = status_kb("VmHWM:").saturating_sub(baseline_kb);

        let calling = Instant::now();
        let ctx = OperationContext::default();
        for id in &ids {
            let _ = registry.execute(id, json!({}), &ctx).await;
        }
        let calls_ms = calling.elapsed().as_secs_f64() * 1000.0;
        // Every operation's validators, input and output (the closed fast-path check too),
        // as serving every operation with real replies compiles them.
        let compiling = Instant::now();
        for id in &ids {
            registry.compile_validators(id).expect("every validator compiles");
        }
        let compile_ms = compiling.elapsed().as_secs_f64() * 1000.0;
        let peak = status_kb("VmHWM:").saturating_sub(baseline_kb);
        eprintln!(
            "peak after import + register {imported_peak} kB, after listing {listed_peak} kB, after the OpenAPI document ({document_bytes} bytes, {document_ms:.0} ms) {documented_peak} kB, after the calls and every validator compiled {peak} kB"
        );
        println!(
            "ok {:.1} {} {} {} {} {} {:.1} {:.1} {:.1} {:.1}",
            start.elapsed().as_secs_f64() * 1000.0,
            peak,
            ids.len(),
            tools,
            pages,
            bytes,
            imported_ms,
            list_ms,
            calls_ms,
            compile_ms
        );
    });
}
