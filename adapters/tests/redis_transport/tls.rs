//! The call protocol over Redis with TLS, against a real `redis-server` that speaks only TLS
//! (`--port 0 --tls-port ..`) with certificates made at test time: calls cross `rediss://`
//! with a custom CA; a client that does not trust that CA is refused with a
//! `TRANSPORT_ERROR` naming the certificate; a plaintext client cannot use the TLS port; with
//! `--tls-auth-clients yes` a client certificate signed by the CA is required (mutual TLS).
#![cfg(feature = "redis")]

use crate::redis_support;
use crate::tls_support;

use opkit::prelude::*;
use opkit::protocol::{CallHandler, PendingRequestMap};
use opkit_adapters::redis::{RedisOptions, RedisPubSub, RedisTls};
use opkit_testkit::redis::TlsRedisCluster;
use redis_support::TlsRedisServer;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;
use tls_support::Pki;

fn options(tls: RedisTls) -> RedisOptions {
    RedisOptions::default()
        .with_prefix("tls:")
        .with_connect_timeout(Duration::from_secs(3))
        .with_tls(tls)
}

fn echo_registry() -> OperationRegistry {
    let registry = OperationRegistry::new();
    registry
        .register(
            OperationSpec::new("tls", "echo", OperationKind::Mutation),
            Handler::unary(|input, _ctx| async move { Ok(input) }),
        )
        .unwrap();
    registry
}

/// A replica and a caller on `url` with `tls`; one call through them answers.
async fn call_through(url: &str, tls: RedisTls) {
    let serving = Arc::new(
        RedisPubSub::connect_with(url, options(tls.clone()))
            .await
            .unwrap(),
    );
    let _replica = CallHandler::new(echo_registry(), serving)
        .spawn()
        .await
        .unwrap();
    let calling = Arc::new(RedisPubSub::connect_with(url, options(tls)).await.unwrap());
    let map = PendingRequestMap::connect(calling).await.unwrap();
    let ctx = OperationContext::default().with_timeout(Duration::from_secs(10));
    let envelope = map
        .call("tls.echo", json!({"secret": "over TLS"}), &ctx)
        .await
        .unwrap();
    assert_eq!(envelope.data, json!({"secret": "over TLS"}));
}

#[tokio::test]
async fn calls_cross_tls_and_untrusting_or_plaintext_clients_are_refused() {
    let pki = Pki::new();
    let server = TlsRedisServer::start(
        &pki.file("ca.pem"),
        &pki.file("server.pem"),
        &pki.file("server.key"),
        "no",
    );
    call_through(
        &server.url(),
        RedisTls::new().with_ca_pem(pki.ca_pem.clone()),
    )
    .await;

    // Trusting another CA (or only the system's roots): refused, naming the certificate.
    for tls in [
        RedisTls::new().with_ca_pem(pki.other_ca_pem.clone()),
        RedisTls::new(),
    ] {
        let error = RedisPubSub::connect_with(&server.url(), options(tls))
            .await
            .unwrap_err();
        let error = CallError::from(error);
        assert_eq!(error.code, ErrorCode::TransportError, "{error}");
        assert!(
            error.message.to_lowercase().contains("certificate"),
            "the error names the certificate: {error}"
        );
    }

    // Plaintext on the TLS port: no connection.
    let plaintext = format!("redis://127.0.0.1:{}/", server.port());
    let options = RedisOptions::default().with_connect_timeout(Duration::from_secs(3));
    let error = tokio::time::timeout(
        Duration::from_secs(20),
        RedisPubSub::connect_with(&plaintext, options),
    )
    .await
    .expect("refused, not hung")
    .unwrap_err();
    assert_eq!(CallError::from(error).code, ErrorCode::TransportError);

    // TLS settings with a plaintext URL are refused rather than silently unused.
    let error = RedisPubSub::connect_with(
        &plaintext,
        RedisOptions::default().with_tls(RedisTls::new().with_ca_pem(pki.ca_pem.clone())),
    )
    .await
    .unwrap_err();
    assert!(error.to_string().contains("rediss://"), "{error}");
}

#[tokio::test]
async fn mutual_tls_requires_a_client_certificate_signed_by_the_ca() {
    let pki = Pki::new();
    let server = TlsRedisServer::start(
        &pki.file("ca.pem"),
        &pki.file("server.pem"),
        &pki.file("server.key"),
        "yes",
    );
    let with_certificate = RedisTls::new()
        .with_ca_pem(pki.ca_pem.clone())
        .with_client_cert_pem(pki.client_cert_pem.clone(), pki.client_key_pem.clone());
    call_through(&server.url(), with_certificate).await;

    let without = RedisTls::new().with_ca_pem(pki.ca_pem.clone());
    let error = tokio::time::timeout(
        Duration::from_secs(20),
        RedisPubSub::connect_with(&server.url(), options(without)),
    )
    .await
    .expect("refused, not hung")
    .unwrap_err();
    assert_eq!(CallError::from(error).code, ErrorCode::TransportError);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tls_cluster_serves_calls() {
    let pki = Pki::new();
    let cluster = tokio::task::block_in_place(|| {
        TlsRedisCluster::start(
            &pki.file("ca.pem"),
            &pki.file("server.pem"),
            &pki.file("server.key"),
        )
    });
    let tls = RedisTls::new().with_ca_pem(pki.ca_pem.clone());
    let bus = || async {
        Arc::new(
            RedisPubSub::connect_with(&cluster.url(), options(tls.clone()))
                .await
                .unwrap(),
        )
    };
    let _replica = CallHandler::new(echo_registry(), bus().await)
        .spawn()
        .await
        .unwrap();
    let map = PendingRequestMap::connect(bus().await).await.unwrap();
    let ctx = OperationContext::default().with_timeout(Duration::from_secs(10));
    for n in 0..20 {
        let envelope = map.call("tls.echo", json!({"n": n}), &ctx).await.unwrap();
        assert_eq!(envelope.data, json!({"n": n}));
    }
}
