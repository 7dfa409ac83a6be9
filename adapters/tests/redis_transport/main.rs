//! The Redis transport tests: one `redis-server`, a Redis Cluster, TLS, and a replica killed mid-
//! call.
//!
//! One test binary (linked once) of the modules below; each module is the suite of one
//! file, gated on the features it needs.

#[cfg(feature = "redis")]
#[path = "../redis_support/mod.rs"]
mod redis_support;
#[cfg(feature = "redis")]
#[path = "../tls_support/mod.rs"]
mod tls_support;

mod cluster;
mod publish_path;
mod replica_kill;
mod tls;
mod transport;
