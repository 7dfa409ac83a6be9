//! Test operations and helpers of the `redis_*` and `websocket_*` transport tests (the
//! WebSocket tests include this file with `#[path]`): the test kit's call-protocol fixtures
//! ([`opkit_testkit::protocol`]), shared with core's protocol tests.
#![allow(unused_imports)]

pub use opkit_testkit::protocol::*;

/// The next message of `subscription`, as text (bounded by [`PATIENCE`]; fails the test when
/// the subscription ends).
#[allow(
    dead_code,
    reason = "the WebSocket tests include this file and do not read messages so"
)]
pub async fn next_text(subscription: &mut opkit::protocol::Subscription) -> String {
    let payload = within(
        "waiting for a message",
        futures::StreamExt::next(subscription),
    )
    .await
    .expect("the subscription ended");
    String::from_utf8(payload.to_vec()).expect("a text message")
}
