//! The `protocol_*` tests' helpers: the test kit's call-protocol fixtures
//! ([`opkit_testkit::protocol`]), shared with the adapters' transport tests.
#![allow(unused_imports)]

pub use opkit_testkit::protocol::*;
