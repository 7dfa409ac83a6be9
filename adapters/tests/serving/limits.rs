//! The HTTP server's bounds: request bodies at their defaults — size (`413` naming the limit)
//! and JSON nesting (`400` from the parser or from the registry's depth check) — and its
//! connections: the header-read timeout and the connection limit.
#![cfg(feature = "http-server")]

use crate::serve_support;
use serve_support::serve_fixtures;

use opkit::limits::MAX_INPUT_DEPTH;
use opkit::prelude::*;
use opkit_adapters::http_server::{DEFAULT_BODY_LIMIT, HttpServer};
use serde_json::{Value, json};
use serve_support::{Served, serve};

async fn start() -> Served {
    let registry = OperationRegistry::new();
    registry
        .register(
            OperationSpec::new("echo", "any", OperationKind::Mutation).input_schema(json!(true)),
            Handler::unary(|input, _ctx| async move {
                Ok(json!(
                    serde_json::to_string(&input).map_or(0, |text| text.len())
                ))
            }),
        )
        .unwrap();
    serve(HttpServer::new(registry).router()).await
}

async fn post(served: &Served, body: String) -> (u16, Value) {
    let response = reqwest::Client::new()
        .post(served.url("/ops/echo.any"))
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.expect("a JSON body"))
}

/// A JSON string literal of exactly `len` bytes.
fn string_of_len(len: usize) -> String {
    format!("\"{}\"", "x".repeat(len - 2))
}

#[tokio::test]
async fn bodies_past_the_default_limit_get_413_naming_it() {
    assert_eq!(DEFAULT_BODY_LIMIT, 1024 * 1024);
    let served = start().await;
    let (status, envelope) = post(&served, string_of_len(DEFAULT_BODY_LIMIT)).await;
    assert_eq!(status, 200, "{envelope}");
    assert_eq!(envelope["data"], DEFAULT_BODY_LIMIT);

    let (status, error) = post(&served, string_of_len(DEFAULT_BODY_LIMIT + 1)).await;
    assert_eq!(status, 413, "{error}");
    assert_eq!(error["code"], "VALIDATION_ERROR");
    assert!(
        error["message"]
            .as_str()
            .is_some_and(|message| message.contains(&format!(
                "limit of {DEFAULT_BODY_LIMIT} bytes (HttpServer::body_limit)"
            ))),
        "{error}"
    );
    assert_eq!(
        error["details"],
        json!({"limit": "bodyLimit", "max": DEFAULT_BODY_LIMIT})
    );
}

fn nested_text(depth: usize) -> String {
    format!("{}0{}", "[".repeat(depth), "]".repeat(depth))
}

#[tokio::test]
async fn deeply_nested_bodies_are_validation_errors() {
    let served = start().await;
    let (status, envelope) = post(&served, nested_text(MAX_INPUT_DEPTH)).await;
    assert_eq!(status, 200, "{envelope}");

    // Past the registry's limit, within the parser's: the registry's violation.
    let (status, error) = post(&served, nested_text(MAX_INPUT_DEPTH + 1)).await;
    assert_eq!(
        (status, error["code"].as_str()),
        (400, Some("VALIDATION_ERROR"))
    );
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("MAX_INPUT_DEPTH"),
        "{error}"
    );
    assert_eq!(error["details"][0]["path"], "/0".repeat(MAX_INPUT_DEPTH));

    // Past the parser's limit (127 levels).
    let (status, error) = post(&served, nested_text(100_000)).await;
    assert_eq!(
        (status, error["code"].as_str()),
        (400, Some("VALIDATION_ERROR"))
    );
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("recursion limit"),
        "{error}"
    );
}

/// Serves the fixtures with `limits` through `HttpServer::serve` (opkit's accept loop).
async fn start_limited(
    limits: opkit_adapters::http_server::ConnectionLimits,
) -> std::net::SocketAddr {
    serve_limited(serve_fixtures::fixture_registry(true), limits).await
}

/// Serves `registry` with `limits` through `HttpServer::serve`.
async fn serve_limited(
    registry: OperationRegistry,
    limits: opkit_adapters::http_server::ConnectionLimits,
) -> std::net::SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = HttpServer::new(registry).connection_limits(limits);
    tokio::spawn(server.serve(listener));
    addr
}

/// A header-read timeout of 300 ms.
fn head_timeout() -> opkit_adapters::http_server::ConnectionLimits {
    opkit_adapters::http_server::ConnectionLimits::default()
        .header_read_timeout(std::time::Duration::from_millis(300))
}

/// Serves the fixtures with a header-read timeout of 300 ms.
async fn start_with_head_timeout() -> std::net::SocketAddr {
    start_limited(head_timeout()).await
}

/// `GET path` on `addr` through `client`, answered `200`.
async fn get_ok(
    client: &reqwest::Client,
    addr: std::net::SocketAddr,
    path: &str,
) -> reqwest::Response {
    let response = client
        .get(format!("http://{addr}{path}"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200, "{path}");
    response
}

/// Sends one byte of a request's head on `connection`, then nothing, and waits for the
/// server to close it (either a clean end of stream or a reset: what matters is that it
/// ended), well before 10 s.
async fn stall_until_closed(connection: &mut tokio::net::TcpStream) {
    use tokio::io::AsyncWriteExt;
    connection.write_all(b"G").await.unwrap();
    // Either end will do: what matters is that it ended.
    let _ = serve_support::read_until_closed(connection, std::time::Duration::from_secs(10)).await;
}

/// Sends `GET /ops/math.add` on `connection` and reads its answer, up to the end of its
/// envelope (`..."meta":{...}}`): a `200`, within 10 s.
async fn add_on(connection: &mut tokio::net::TcpStream) {
    use tokio::io::AsyncWriteExt;
    connection
        .write_all(b"GET /ops/math.add?a=1&b=2 HTTP/1.1\r\nhost: localhost\r\n\r\n")
        .await
        .unwrap();
    let answer = serve_support::read_answer(connection).await;
    assert!(
        answer.ends_with(b"}}"),
        "closed before answering: {answer:?}"
    );
    assert!(answer.starts_with(b"HTTP/1.1 200"), "{answer:?}");
}

/// The timeout holds for every request of a kept-alive connection, not only its first: one
/// that was answered three times and then sends one byte of its next head is closed too.
#[tokio::test]
async fn a_kept_alive_connection_too_slow_with_its_next_head_is_disconnected() {
    let addr = start_with_head_timeout().await;
    let mut connection = tokio::net::TcpStream::connect(addr).await.unwrap();
    for _ in 0..3 {
        add_on(&mut connection).await;
    }
    stall_until_closed(&mut connection).await;
}

/// A client that sends one header byte and then nothing is closed after the header-read
/// timeout (a slowloris holds no connection for long).
#[tokio::test]
async fn a_client_too_slow_to_send_its_headers_is_disconnected() {
    let addr = start_with_head_timeout().await;
    let mut slow = tokio::net::TcpStream::connect(addr).await.unwrap();
    stall_until_closed(&mut slow).await;
    // A well-behaved client is served meanwhile.
    let ok = reqwest::get(format!("http://{addr}/ops/math.add?a=1&b=2"))
        .await
        .unwrap();
    assert_eq!(ok.status().as_u16(), 200);
}

/// A head sent a byte at a time, each byte well within the timeout, is cut off at the head's
/// deadline, not served once it is whole: reads that make progress do not move the deadline.
#[tokio::test]
async fn a_head_trickled_a_byte_at_a_time_is_cut_off_at_its_deadline() {
    use tokio::io::AsyncWriteExt;
    let addr = start_with_head_timeout().await;
    let connection = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (mut reading, mut writing) = connection.into_split();
    // ~60 bytes 50 ms apart: whole after ~3 s, ten times the 300 ms timeout.
    let head = b"GET /ops/math.add?a=1&b=2 HTTP/1.1\r\nhost: localhost\r\n\r\n";
    let trickle = tokio::spawn(async move {
        for byte in head {
            if writing.write_all(&[*byte]).await.is_err() {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    });
    let (answer, _) =
        serve_support::read_until_closed(&mut reading, std::time::Duration::from_secs(20)).await;
    assert!(
        !answer.starts_with(b"HTTP/1.1 200"),
        "the trickled head was served: {}",
        String::from_utf8_lossy(&answer)
    );
    trickle.abort();
}

/// Requests on one kept-alive connection, each sent within the timeout of the answer before
/// it but together over several timeouts, are all answered: the timeout counts from each
/// head's start, not from the connection's.
#[tokio::test]
async fn requests_spaced_within_the_timeout_keep_a_connection_alive_past_it() {
    let addr = start_limited(
        opkit_adapters::http_server::ConnectionLimits::default()
            .header_read_timeout(std::time::Duration::from_millis(600)),
    )
    .await;
    let mut connection = tokio::net::TcpStream::connect(addr).await.unwrap();
    // Six requests 200 ms apart: 1.2 s in all, twice the timeout.
    for round in 0..6 {
        if round > 0 {
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        }
        add_on(&mut connection).await;
    }
}

/// The timeout counts only while a connection waits for a head: a call that runs past it,
/// and a response that streams past it, are answered whole, and the connection then serves
/// its next request.
#[tokio::test]
async fn calls_and_streams_running_past_the_timeout_are_not_cut_off() {
    use futures::StreamExt;
    let registry = serve_fixtures::fixture_registry(true);
    registry
        .register(
            OperationSpec::new("slow", "ticks", OperationKind::Subscription)
                .input_schema(json!({"type": "object"})),
            Handler::stream(|_input, _ctx| {
                futures::stream::iter(0..5_u64).then(|tick| async move {
                    tokio::time::sleep(std::time::Duration::from_millis(150)).await;
                    Ok(json!(tick))
                })
            }),
        )
        .unwrap();
    let addr = serve_limited(registry, head_timeout()).await;
    // One connection for all three requests.
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(1)
        .build()
        .unwrap();
    let slow = get_ok(&client, addr, "/ops/jobs.slow?ms=800").await;
    assert_eq!(slow.json::<Value>().await.unwrap()["data"], "done");
    // Five events 150 ms apart: 750 ms of streaming.
    let text = get_ok(&client, addr, "/ops/slow.ticks")
        .await
        .text()
        .await
        .unwrap();
    assert_eq!(text.matches("\"data\":").count(), 5, "{text}");
    assert!(text.contains("event: complete"), "{text}");
    get_ok(&client, addr, "/ops/math.add?a=1&b=2").await;
}

/// HTTP/2 (prior knowledge) runs its streams apart from the connection's task: the
/// header-read timeout does not apply once the connection is HTTP/2, so a call running past
/// it and a later call on the same connection are answered.
#[tokio::test]
async fn http2_connections_are_not_cut_off_by_the_head_timeout() {
    let addr = start_with_head_timeout().await;
    let client = reqwest::Client::builder()
        .http2_prior_knowledge()
        .build()
        .unwrap();
    let slow = get_ok(&client, addr, "/ops/jobs.slow?ms=800").await;
    assert_eq!(slow.version(), reqwest::Version::HTTP_2);
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    get_ok(&client, addr, "/ops/math.add?a=1&b=2").await;
}

/// A connection limit past what the accept loop's semaphore counts (`usize::MAX`) is taken
/// as that count: the server serves rather than panics.
#[tokio::test]
async fn a_connection_limit_of_usize_max_serves() {
    let addr = start_limited(
        opkit_adapters::http_server::ConnectionLimits::default().max_connections(usize::MAX),
    )
    .await;
    get_ok(&reqwest::Client::new(), addr, "/ops/math.add?a=1&b=2").await;
}

/// Past the connection limit, a new connection waits until one closes; then it is served.
#[tokio::test]
async fn connections_past_the_limit_wait_for_one_to_close() {
    use opkit_adapters::http_server::ConnectionLimits;
    let addr = start_limited(ConnectionLimits::default().max_connections(2)).await;
    let holders: Vec<tokio::net::TcpStream> = vec![
        tokio::net::TcpStream::connect(addr).await.unwrap(),
        tokio::net::TcpStream::connect(addr).await.unwrap(),
    ];
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    let url = format!("http://{addr}/ops/math.add?a=1&b=2");
    let waiting = tokio::time::timeout(
        std::time::Duration::from_millis(500),
        client.get(&url).send(),
    )
    .await;
    assert!(
        waiting.is_err(),
        "a third connection is not served while two are held"
    );
    drop(holders);
    let served = tokio::time::timeout(std::time::Duration::from_secs(10), client.get(&url).send())
        .await
        .expect("served once the held connections closed")
        .unwrap();
    assert_eq!(served.status().as_u16(), 200);
}
