//! The test kit's Redis Cluster (nodes on loopback ports, stopped by PID when dropped) and
//! `redis-cli`, under the names the `redis_cluster*` tests use.
#![allow(unused_imports)]

pub use opkit_testkit::redis::{NODE_TIMEOUT_MS, RedisCluster, cli};
