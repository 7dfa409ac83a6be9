//! The WebSocket transport tests: the hub and its spokes, in plain text and over TLS.
//!
//! One test binary (linked once) of the modules below; each module is the suite of one
//! file, gated on the features it needs.

#[cfg(feature = "websocket")]
#[path = "../redis_support/ops.rs"]
mod ops;
#[cfg(feature = "websocket")]
#[path = "../tls_support/mod.rs"]
mod tls_support;

mod grants;
mod hub;
mod raw;
mod stamp;
mod tls;
