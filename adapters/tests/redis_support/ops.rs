//! Test operations and helpers of the `redis_*` and `websocket_*` transport tests (the
//! WebSocket tests include this file with `#[path]`): the test kit's call-protocol fixtures
//! ([`opkit_testkit::protocol`]), shared with core's protocol tests.
#![allow(unused_imports)]

pub use opkit_testkit::protocol::*;
