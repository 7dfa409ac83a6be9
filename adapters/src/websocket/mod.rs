//! The call protocol over WebSocket, hub and spoke: a [`WsHub`] process routes messages
//! between authenticated [`WsSpoke`]s, each a [`PubSub`](opkit::protocol::PubSub) transport.
//!
//! The manual is `adapters/docs/websocket.md`, included below. Reading the code: The hub is
//! `hub/` (`connection.rs` serves one spoke, `state.rs` holds the routing state and its lock
//! order); a spoke is `spoke/`; `frame.rs` is the frame format both speak.
#![doc = "\n"]
#![doc = include_str!("../../docs/websocket.md")]

mod frame;
mod hub;
mod spoke;
mod tls;

pub use hub::{
    DEFAULT_FAILED_TOKEN_WINDOW, DEFAULT_MAX_CALLS_PER_SPOKE, DEFAULT_MAX_CONNECTIONS_PER_ADDRESS,
    DEFAULT_MAX_CONNECTIONS_PER_TOKEN, DEFAULT_MAX_FAILED_TOKENS, DEFAULT_MAX_QUEUED_BYTES,
    DEFAULT_MAX_SUBSCRIPTIONS, DEFAULT_MAX_TOPIC_LEN, HubOptions, HubPubSub, Names, SpokeGrant,
    StaticTokens, TokenVerifier, WsHub,
};
pub use spoke::{SpokeOptions, WsSpoke};
pub use tls::{ClientTls, ServerTls, TlsError};
