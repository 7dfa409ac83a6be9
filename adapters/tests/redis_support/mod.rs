//! The `redis_*` tests' harness: the test kit's `redis-server` launchers (a server of their
//! own on a free loopback port, stopped by PID when dropped, even when the test fails), with
//! what only the adapters can add: a `RedisPubSub` transport on the server, a raw
//! connection.
#![allow(dead_code, missing_docs, unused_imports)]

pub mod cluster;
pub mod ops;

use opkit_adapters::redis::{RedisOptions, RedisPubSub};
pub use opkit_testkit::redis::TlsRedisServer;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

/// The kit's [`opkit_testkit::redis::RedisServer`], with transports on it.
pub struct RedisServer(opkit_testkit::redis::RedisServer);

impl RedisServer {
    /// Starts a server on a free port and waits (bounded) until it answers `PING`.
    pub fn start() -> Self {
        Self(opkit_testkit::redis::RedisServer::start())
    }

    /// A transport on this server; every test uses its own prefix.
    pub async fn bus(&self, prefix: &str) -> Arc<RedisPubSub> {
        Arc::new(
            RedisPubSub::connect_with(&self.url(), RedisOptions::default().with_prefix(prefix))
                .await
                .expect("connect to the test redis-server"),
        )
    }

    /// A plain connection for raw commands.
    pub async fn raw(&self) -> redis::aio::MultiplexedConnection {
        connect_raw(&self.url()).await
    }
}

/// A plain connection to the server at `url`, for raw commands (in a child process too).
pub async fn connect_raw(url: &str) -> redis::aio::MultiplexedConnection {
    redis::Client::open(url)
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .expect("a raw connection to the test redis-server")
}

impl Deref for RedisServer {
    type Target = opkit_testkit::redis::RedisServer;

    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl DerefMut for RedisServer {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.0
    }
}
