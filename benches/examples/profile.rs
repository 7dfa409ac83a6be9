//! A loop of one bench path for a profiler (callgrind or perf):
//! `cargo build --release --example profile && valgrind --tool=callgrind target/release/examples/profile tiny 20000`.
//! Paths: `tiny`, `medium`, `tiny-floor`, `medium-floor` (the JSON floor), (`registry.execute`), `stream` (`registry.subscribe`), `typed-stream` (`items::subscribe`), `typed-middleware` (`add::call` through one no-op middleware), `memory` (call
//! protocol round trip over `MemoryPubSub`).

use futures::StreamExt;
use opkit::prelude::*;
use opkit::protocol::{CallHandler, MemoryPubSub, PendingRequestMap, PubSub};
use opkit_benches::*;
use serde::Deserialize;
use serde_json::json;
use std::sync::Arc;

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
            "mcp" => {
                use rmcp::ServerHandler;
                use rmcp::model::{CallToolRequestParams, JsonObject, NumberOrString};
                use rmcp::service::{RequestContext, serve_directly};
                let handler =
                    opkit_adapters::mcp_server::McpServer::new(registry.clone()).handler();
                let (server, _client) = tokio::io::duplex(1 << 16);
                let running = serve_directly(handler, server, None);
                let peer = running.peer().clone();
                for _ in 0..rounds {
                    let serde_json::Value::Object(arguments) = tiny_json() else {
                        panic!("object input")
                    };
                    let params = CallToolRequestParams::new("bench.add")
                        .with_arguments(JsonObject::from_iter(arguments));
                    let context = RequestContext::new(NumberOrString::Number(1), peer.clone());
                    let out = running.service().call_tool(params, context).await;
                    std::hint::black_box(out.expect("call"));
                }
            }
            "sizes" => {
                let execute = registry.execute(add::ID, tiny_json(), &ctx);
                println!("execute future: {} bytes", std::mem::size_of_val(&execute));
            }
            other => panic!("unknown path {other}"),
        }
    });
}
