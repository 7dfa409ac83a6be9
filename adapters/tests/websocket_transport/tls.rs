//! The WebSocket transport over TLS, with certificates made at test time: spokes reach a hub
//! that serves `wss://` and calls cross it; the bytes between a spoke and the hub (recorded
//! by a loopback proxy) never hold the spoke's token or a call's input in clear; a spoke with
//! TLS settings refuses a `ws://` URL, and a plaintext spoke gets no WebSocket from the TLS
//! hub; a spoke trusting another CA fails naming the certificate; a hub that requires client
//! certificates refuses a spoke without one (mutual TLS).
#![cfg(feature = "websocket")]

use crate::tls_support;

use opkit::prelude::*;
use opkit::protocol::{CallHandler, PendingRequestMap};
use opkit_adapters::websocket::{
    ClientTls, HubOptions, ServerTls, SpokeGrant, SpokeOptions, StaticTokens, WsHub, WsSpoke,
};
use parking_lot::Mutex;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;
use tls_support::Pki;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const SERVING_TOKEN: &str = "serving-token-7f3a";
const CALLING_TOKEN: &str = "calling-token-9c21";

fn tokens() -> StaticTokens {
    StaticTokens::new()
        .with_token(SERVING_TOKEN, SpokeGrant::service("serving"))
        .with_token(CALLING_TOKEN, SpokeGrant::new("calling"))
}

async fn tls_hub(pki: &Pki, require_client_certificates: bool) -> WsHub {
    let client_ca = require_client_certificates.then_some(pki.ca_pem.as_bytes());
    let tls = ServerTls::from_pem(
        pki.server_cert_pem.as_bytes(),
        pki.server_key_pem.as_bytes(),
        client_ca,
    )
    .unwrap();
    WsHub::bind_with(
        "127.0.0.1:0",
        tokens(),
        HubOptions::default()
            .with_tls(tls)
            .with_handshake_timeout(Duration::from_secs(5)),
    )
    .await
    .unwrap()
}

fn options(token: &str, tls: ClientTls) -> SpokeOptions {
    SpokeOptions::new(token)
        .with_tls(tls)
        .with_backoff(Duration::from_millis(20), Duration::from_millis(200))
}

fn trusting(pki: &Pki) -> ClientTls {
    ClientTls::from_pem(Some(pki.ca_pem.as_bytes()), None).unwrap()
}

fn echo_registry() -> OperationRegistry {
    let registry = OperationRegistry::new();
    registry
        .register(
            OperationSpec::new("tls", "echo", OperationKind::Query),
            Handler::unary(|input, _ctx| async move { Ok(input) }),
        )
        .unwrap();
    registry
}

/// A loopback proxy to `target` that records every byte crossing it, both ways.
async fn recording_proxy(target: std::net::SocketAddr) -> (String, Arc<Mutex<Vec<u8>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = seen.clone();
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let Ok(server) = TcpStream::connect(target).await else {
                continue;
            };
            let (client_read, client_write) = client.into_split();
            let (server_read, server_write) = server.into_split();
            for (mut from, mut to, record) in [
                (
                    Box::new(client_read) as Box<dyn tokio::io::AsyncRead + Unpin + Send>,
                    Box::new(server_write) as Box<dyn tokio::io::AsyncWrite + Unpin + Send>,
                    record.clone(),
                ),
                (
                    Box::new(server_read),
                    Box::new(client_write),
                    record.clone(),
                ),
            ] {
                tokio::spawn(async move {
                    let mut buffer = vec![0u8; 16 * 1024];
                    while let Ok(read) = from.read(&mut buffer).await {
                        if read == 0 {
                            break;
                        }
                        record.lock().extend_from_slice(&buffer[..read]);
                        if to.write_all(&buffer[..read]).await.is_err() {
                            break;
                        }
                    }
                    let _ = to.shutdown().await;
                });
            }
        }
    });
    (format!("wss://127.0.0.1:{}/", address.port()), seen)
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window == needle.as_bytes())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_cross_tls_and_nothing_crosses_in_clear() {
    let pki = Pki::new();
    let hub = tls_hub(&pki, false).await;
    let (url, seen) = recording_proxy(hub.local_addr()).await;
    let serving = Arc::new(
        WsSpoke::connect_with(&url, options(SERVING_TOKEN, trusting(&pki)))
            .await
            .unwrap(),
    );
    let _handler = CallHandler::new(echo_registry(), serving)
        .spawn()
        .await
        .unwrap();
    let calling = Arc::new(
        WsSpoke::connect_with(&url, options(CALLING_TOKEN, trusting(&pki)))
            .await
            .unwrap(),
    );
    let map = PendingRequestMap::connect(calling).await.unwrap();
    let ctx = OperationContext::default().with_timeout(Duration::from_secs(10));
    let secret = "a-secret-input-5d1e";
    let envelope = map
        .call("tls.echo", json!({"secret": secret}), &ctx)
        .await
        .unwrap();
    assert_eq!(envelope.data, json!({"secret": secret}));
    let seen = seen.lock().clone();
    assert!(seen.len() > 1000, "the proxy saw the traffic");
    for clear in [SERVING_TOKEN, CALLING_TOKEN, secret, "tls.echo", "Bearer"] {
        assert!(!contains(&seen, clear), "`{clear}` crossed in clear");
    }
}

#[tokio::test]
async fn plaintext_and_untrusting_spokes_are_refused() {
    let pki = Pki::new();
    let hub = tls_hub(&pki, false).await;
    let port = hub.local_addr().port();
    // TLS settings with a ws:// URL: refused before anything is sent.
    let error = WsSpoke::connect_with(
        &format!("ws://127.0.0.1:{port}/"),
        options(CALLING_TOKEN, trusting(&pki)),
    )
    .await
    .unwrap_err();
    assert!(error.to_string().contains("in clear"), "{error}");
    // A plaintext spoke (no TLS settings) gets no WebSocket from the TLS hub.
    let plaintext = SpokeOptions::new(CALLING_TOKEN).with_connect_timeout(Duration::from_secs(5));
    let error = tokio::time::timeout(
        Duration::from_secs(20),
        WsSpoke::connect_with(&format!("ws://127.0.0.1:{port}/"), plaintext),
    )
    .await
    .expect("refused, not hung")
    .unwrap_err();
    assert_eq!(CallError::from(error).code, ErrorCode::TransportError);
    // Trusting another CA: refused, naming the certificate.
    let other = ClientTls::from_pem(Some(pki.other_ca_pem.as_bytes()), None).unwrap();
    let error = WsSpoke::connect_with(&hub.url(), options(CALLING_TOKEN, other))
        .await
        .unwrap_err();
    assert!(
        error.to_string().to_lowercase().contains("certificate"),
        "the error names the certificate: {error}"
    );
}

#[tokio::test]
async fn a_hub_that_requires_client_certificates_refuses_a_spoke_without_one() {
    let pki = Pki::new();
    let hub = tls_hub(&pki, true).await;
    let url = hub.url();
    let with_certificate = ClientTls::from_pem(
        Some(pki.ca_pem.as_bytes()),
        Some((
            pki.client_cert_pem.as_bytes(),
            pki.client_key_pem.as_bytes(),
        )),
    )
    .unwrap();
    let spoke = WsSpoke::connect_with(&url, options(CALLING_TOKEN, with_certificate))
        .await
        .unwrap();
    assert!(spoke.is_connected());
    let error = tokio::time::timeout(
        Duration::from_secs(20),
        WsSpoke::connect_with(&url, options(SERVING_TOKEN, trusting(&pki))),
    )
    .await
    .expect("refused, not hung")
    .unwrap_err();
    assert_eq!(CallError::from(error).code, ErrorCode::TransportError);
}
