//! opkit's MCP client over Streamable HTTP, as a server sees it: its calls reuse its
//! connections, and it follows redirects only where its message and headers stay safe.
#![cfg(all(feature = "http-server", feature = "mcp"))]

use axum::extract::{ConnectInfo, Request};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use opkit::prelude::*;
use opkit_adapters::mcp::{McpConnection, McpLifecycle, McpOptions};
use opkit_adapters::mcp_server::McpServer;
use serde_json::json;
use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

#[operation(namespace = "pool")]
async fn echo(n: i64) -> i64 {
    n
}

/// The client ports of the TCP connections requests came on, and the requests counted.
#[derive(Clone, Default)]
struct Seen {
    ports: Arc<Mutex<HashSet<u16>>>,
    requests: Arc<Mutex<usize>>,
}

impl Seen {
    fn connections(&self) -> usize {
        self.ports.lock().unwrap().len()
    }

    fn requests(&self) -> usize {
        *self.requests.lock().unwrap()
    }
}

/// Serves `router` on a free loopback port, recording each request's connection in `seen`.
async fn serve_seen(router: axum::Router, seen: Seen) -> (SocketAddr, tokio::task::JoinHandle<()>) {
    let router = router.layer(axum::middleware::from_fn(
        move |request: Request, next: Next| {
            let seen = seen.clone();
            async move {
                if let Some(ConnectInfo(peer)) =
                    request.extensions().get::<ConnectInfo<SocketAddr>>()
                {
                    seen.ports.lock().unwrap().insert(peer.port());
                }
                *seen.requests.lock().unwrap() += 1;
                next.run(request).await
            }
        },
    ));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let task = tokio::spawn(async move {
        axum::serve(
            listener,
            router.into_make_service_with_connect_info::<SocketAddr>(),
        )
        .await
        .unwrap();
    });
    (address, task)
}

fn mcp_router() -> axum::Router {
    let registry = OperationRegistry::new();
    registry.register_typed::<echo>().unwrap();
    axum::Router::new().nest("/mcp", McpServer::new(registry).router())
}

#[tokio::test]
async fn calls_reuse_the_clients_connections() {
    for lifecycle in [McpLifecycle::Legacy, McpLifecycle::Modern] {
        let seen = Seen::default();
        let (address, server) = serve_seen(mcp_router(), seen.clone()).await;
        let connection = McpConnection::connect_http(
            &format!("http://{address}/mcp"),
            McpOptions::new("pool").lifecycle(lifecycle),
        )
        .await
        .unwrap();
        let ctx = OperationContext::default();
        for n in 0..20 {
            let envelope = connection
                .call_tool("pool.echo", json!({"n": n}), &ctx)
                .await
                .unwrap();
            assert_eq!(envelope.data, json!(n));
        }
        assert!(seen.requests() >= 20, "{lifecycle:?}: {}", seen.requests());
        // Each request opened a connection of its own before; now most are sent on one
        // already open (a legacy session's standing event stream holds one more, and a
        // connection whose event stream ends late is not reused: some slack for a busy machine).
        assert!(
            seen.connections() * 2 <= seen.requests(),
            "{lifecycle:?}: {} connections for {} requests",
            seen.connections(),
            seen.requests()
        );
        connection.close();
        server.abort();
    }
}

/// A server whose `/moved` answers every request with `status` to `location`.
fn redirecting(status: u16, location: String) -> axum::Router {
    axum::Router::new().route(
        "/moved",
        axum::routing::any(move || {
            let location = location.clone();
            async move {
                let status = http::StatusCode::from_u16(status).unwrap();
                let response: Response =
                    (status, [(http::header::LOCATION, location)]).into_response();
                response
            }
        }),
    )
}

#[tokio::test]
async fn redirects_are_followed_to_the_same_origin_only_and_with_their_message() {
    // A 307 on the same origin keeps the POST and its message: followed.
    let seen = Seen::default();
    let (address, server) = serve_seen(
        mcp_router().merge(redirecting(307, "/mcp".to_owned())),
        seen.clone(),
    )
    .await;
    let connection = McpConnection::connect_http(
        &format!("http://{address}/moved"),
        McpOptions::new("pool").lifecycle(McpLifecycle::Modern),
    )
    .await
    .expect("a same-origin 307 is followed");
    let envelope = connection
        .call_tool("pool.echo", json!({"n": 3}), &OperationContext::default())
        .await
        .unwrap();
    assert_eq!(envelope.data, json!(3));
    connection.close();
    server.abort();

    // A 307 to another origin would send the session and the connection's headers there;
    // a 302 on the same origin would turn the POST into a GET without its message.
    let elsewhere = Seen::default();
    let (other, other_server) = serve_seen(mcp_router(), elsewhere.clone()).await;
    for (status, location) in [
        (307, format!("http://{other}/mcp")),
        (302, "/mcp".to_owned()),
    ] {
        let (address, server) = serve_seen(
            mcp_router().merge(redirecting(status, location.clone())),
            Seen::default(),
        )
        .await;
        let refused = McpConnection::connect_http(
            &format!("http://{address}/moved"),
            McpOptions::new("pool")
                .lifecycle(McpLifecycle::Modern)
                .header("x-api-key", "only-for-this-origin"),
        )
        .await;
        assert!(refused.is_err(), "{status} to {location} was followed");
        server.abort();
    }
    assert_eq!(elsewhere.requests(), 0, "nothing reached the other origin");
    other_server.abort();
}
