//! Large bodies on REST routes are streamed, not buffered: a `ByteStream` input field reads
//! the request body while the operation runs (the operation sees its first chunk while the
//! client still holds the rest), and a stream operation of `Binary` items answers one raw
//! body chunk by chunk (the client reads its first bytes before the operation made the
//! rest). Each proof is a handshake, not a timing: a buffering server would deadlock, and
//! the bounded wait fails the test. The route's body limit and the request timeout still
//! hold as the body streams in (`413`, `408`).
#![cfg(feature = "http-server")]

use crate::serve_support;

use bytes::Bytes;
use futures::{SinkExt, Stream, StreamExt};
use opkit::binary::{Binary, ByteStream};
use opkit::prelude::*;
use opkit_adapters::http_server::HttpServer;
use serde::Serialize;
use serde_json::{Value, json};
use serve_support::serve;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;

const MIB: usize = 1 << 20;

/// Signals between the operations and the test's client.
#[derive(Clone, Default)]
struct Signals {
    /// Raised by `put_file` when its first chunk arrived.
    first_chunk: Arc<Notify>,
    /// Raised by the client when it read the first bytes of `file_content`.
    client_has_bytes: Arc<Notify>,
}

#[derive(Serialize, schemars::JsonSchema)]
struct Stored {
    name: String,
    size: usize,
    checksum: u64,
}

/// The byte at `index` of every test file.
fn byte_at(index: usize) -> u8 {
    (index % 251) as u8
}

/// `received` is the 16 MiB file, in order and intact.
fn assert_is_the_file(received: &[u8]) {
    assert_eq!(received.len(), 16 * MIB);
    assert!(
        received
            .iter()
            .enumerate()
            .all(|(at, byte)| *byte == byte_at(at)),
        "the bytes arrive in order and intact"
    );
}

fn checksum(bytes: &[u8], offset: usize) -> u64 {
    bytes
        .iter()
        .enumerate()
        .map(|(at, byte)| u64::from(*byte) * ((offset + at) as u64 % 7 + 1))
        .sum()
}

/// Stores a file, reading the body as it arrives.
#[operation(
    namespace = "files",
    mutation,
    http(method = "PUT", path = "/files/{name}", body_limit = "64MiB")
)]
async fn put_file(
    signals: State<Signals>,
    name: String,
    body: ByteStream,
) -> Result<Stored, CallError> {
    let mut body = body;
    let (mut size, mut sum) = (0, 0);
    while let Some(chunk) = body.next().await {
        let chunk = chunk?;
        if size == 0 {
            signals.0.first_chunk.notify_one();
        }
        sum += checksum(&chunk, size);
        size += chunk.len();
    }
    Ok(Stored {
        name,
        size,
        checksum: sum,
    })
}

/// The same, with a small limit.
#[operation(
    namespace = "files",
    mutation,
    http(method = "PUT", path = "/small/{name}", body_limit = "100KB")
)]
async fn put_small(name: String, body: ByteStream) -> Result<Stored, CallError> {
    let bytes = body.read_to_end(usize::MAX).await?;
    Ok(Stored {
        name,
        size: bytes.len(),
        checksum: checksum(&bytes, 0),
    })
}

/// A 16 MiB file in 1 MiB chunks; after the first, waits for the client to have read bytes.
#[operation(
    namespace = "files",
    subscription,
    http(method = "GET", path = "/files/{name}/content")
)]
fn file_content(
    signals: State<Signals>,
    name: String,
) -> impl Stream<Item = Binary> + Send + 'static {
    let _ = name;
    let gate = signals.0.client_has_bytes.clone();
    futures::stream::unfold(0usize, move |index| {
        let gate = gate.clone();
        async move {
            if index == 16 {
                return None;
            }
            if index == 1 {
                gate.notified().await;
            }
            let chunk: Vec<u8> = (index * MIB..(index + 1) * MIB).map(byte_at).collect();
            Some((Binary::from(chunk), index + 1))
        }
    })
}

fn server(signals: &Signals) -> HttpServer {
    let registry = OperationRegistry::new().with_state(signals.clone());
    registry.register_operation(put_file).unwrap();
    registry.register_operation(put_small).unwrap();
    registry.register_operation(file_content).unwrap();
    HttpServer::new(registry).request_timeout(Duration::from_secs(5))
}

/// At most `seconds` for `future`: a buffering server deadlocks the handshakes.
async fn within<T>(what: &str, seconds: u64, future: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(seconds), future)
        .await
        .unwrap_or_else(|_| panic!("{what}: not within {seconds} s"))
}

#[tokio::test]
async fn an_upload_reaches_the_operation_while_it_is_still_being_sent() {
    let signals = Signals::default();
    let served = serve(server(&signals).router()).await;
    let (mut sender, chunks) = futures::channel::mpsc::channel::<Result<Bytes, std::io::Error>>(2);
    let request = reqwest::Client::new()
        .put(served.url("/files/big"))
        .body(reqwest::Body::wrap_stream(chunks))
        .send();
    let request = tokio::spawn(request);
    let chunk = |index: usize| -> Bytes {
        (index * MIB..(index + 1) * MIB)
            .map(byte_at)
            .collect::<Vec<u8>>()
            .into()
    };
    sender.send(Ok(chunk(0))).await.unwrap();
    // The operation runs with 1 MiB of 32 sent: the body is not read first.
    within(
        "the first chunk reaches the operation",
        20,
        signals.first_chunk.notified(),
    )
    .await;
    for index in 1..32 {
        sender.send(Ok(chunk(index))).await.unwrap();
    }
    drop(sender);
    let response = within("the upload is answered", 30, request)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(response.status(), 200);
    let stored: Value = response.json().await.unwrap();
    let all: Vec<u8> = (0..32 * MIB).map(byte_at).collect();
    assert_eq!(
        stored,
        json!({"name": "big", "size": 32 * MIB, "checksum": checksum(&all, 0)})
    );
    // Over the RPC route the same field is base64, one chunk.
    let rpc: Value = reqwest::Client::new()
        .post(served.url("/ops/files.put_file"))
        .json(&json!({"name": "small", "body": "aGk="}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(rpc["data"]["size"], 2, "{rpc}");
}

#[tokio::test]
async fn a_streamed_body_keeps_its_limit_and_its_timeout() {
    let signals = Signals::default();
    let served = serve(server(&signals).router()).await;
    let http = reqwest::Client::new();
    // Declared too long: refused before the operation runs.
    let declared = http
        .put(served.url("/small/a"))
        .body(vec![0u8; 100_001])
        .send()
        .await
        .unwrap();
    assert_eq!(declared.status(), 413);
    // The error names the limit that applied: the route's own, not the server's.
    let error: Value = declared.json().await.unwrap();
    let message = error["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("limit of 100000 bytes (the route's body_limit")
            && !message.contains("HttpServer::body_limit"),
        "{error}"
    );
    // Too long as it streams in (no length declared): the operation's read ends with the
    // limit's error, answered 413.
    let chunks = futures::stream::iter(
        (0..4).map(|_| Ok::<_, std::io::Error>(Bytes::from(vec![1u8; 40_000]))),
    );
    let streamed = http
        .put(served.url("/small/b"))
        .body(reqwest::Body::wrap_stream(chunks))
        .send()
        .await
        .unwrap();
    assert_eq!(streamed.status(), 413);
    let error: Value = streamed.json().await.unwrap();
    assert_eq!(error["details"]["limit"], "bodyLimit", "{error}");
    assert!(
        error["message"]
            .as_str()
            .is_some_and(|message| message.contains("the route's body_limit")),
        "{error}"
    );
    // A body that stops arriving: 408 once the request timeout passed.
    let (mut sender, chunks) = futures::channel::mpsc::channel::<Result<Bytes, std::io::Error>>(1);
    sender.send(Ok(Bytes::from_static(b"abc"))).await.unwrap();
    let stalled = within(
        "a stalled body is answered",
        30,
        http.put(served.url("/small/c"))
            .body(reqwest::Body::wrap_stream(chunks))
            .send(),
    )
    .await
    .unwrap();
    assert_eq!(stalled.status(), 408);
    let error: Value = stalled.json().await.unwrap();
    assert_eq!(error["code"], "TIMEOUT", "{error}");
    drop(sender);
}

#[tokio::test]
async fn a_download_reaches_the_client_while_the_operation_still_makes_it() {
    let signals = Signals::default();
    let served = serve(server(&signals).router()).await;
    let mut response = reqwest::Client::new()
        .get(served.url("/files/big/content"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["content-type"],
        "application/octet-stream"
    );
    let mut received = Vec::new();
    // The operation made 1 MiB of 16 and waits for this client's word.
    while received.is_empty() {
        let chunk = within("the first bytes arrive", 20, response.chunk())
            .await
            .unwrap()
            .expect("the body goes on");
        received.extend_from_slice(&chunk);
    }
    signals.client_has_bytes.notify_one();
    while let Some(chunk) = within("the rest arrives", 30, response.chunk())
        .await
        .unwrap()
    {
        received.extend_from_slice(&chunk);
    }
    assert_is_the_file(&received);
}

#[tokio::test]
async fn a_download_is_gzipped_as_it_streams_for_a_client_that_accepts_it() {
    let signals = Signals::default();
    // The operation does not wait for this client after its first chunk.
    signals.client_has_bytes.notify_one();
    let served = serve(server(&signals).router()).await;
    let response = within(
        "the download is answered",
        30,
        reqwest::Client::new()
            .get(served.url("/files/big/content"))
            .header("accept-encoding", "gzip")
            .send(),
    )
    .await
    .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-encoding"], "gzip");
    // Compressed as it streams: no length, which only the whole body would give.
    assert!(response.headers().get("content-length").is_none());
    let gzipped = within("the download ends", 30, response.bytes())
        .await
        .unwrap();
    let mut received = Vec::new();
    std::io::Read::read_to_end(
        &mut flate2::read::GzDecoder::new(&gzipped[..]),
        &mut received,
    )
    .unwrap();
    assert_is_the_file(&received);
}
