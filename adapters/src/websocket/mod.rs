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
    DEFAULT_MAX_QUEUED_BYTES, DEFAULT_MAX_SUBSCRIPTIONS, HubOptions, HubPubSub, SpokeGrant,
    StaticTokens, TokenVerifier, WsHub,
};
pub use spoke::{SpokeOptions, WsSpoke};
pub use tls::{ClientTls, ServerTls, TlsError};
