//! Identities a replica can verify: the caller signs the request it publishes, and a
//! [`CallHandler`](super::CallHandler) that requires it refuses a request whose identity is
//! unsigned, forged, expired, signed for another request, or already taken.
//!
//! # What a signature binds
//!
//! The signature is a JWS (compact JWT, RFC 7515/7519) in the request's `identityToken`
//! field, made with the `jsonwebtoken` crate. Its header names the key (`kid`) and the token's
//! use (`typ: "opkit-call+jwt"`, so a token made for anything else is never taken for one);
//! its claims bind everything a handler acts on:
//!
//! | claim | the request's |
//! |---|---|
//! | `idn` | identity, exactly as stated |
//! | `rid` | request id |
//! | `op` | operation id |
//! | `inp` | input: SHA-256 of its canonical JSON (keys sorted), unpadded base64url |
//! | `dl` | deadline (Unix milliseconds), absent when it has none |
//! | `par` | parent request id, absent when it has none |
//! | `subs` | subscription flag, absent when false |
//! | `iat`, `exp` | when it was signed; when it stops verifying: the deadline plus a second, at most five minutes after `iat` |
//!
//! A verifier checks the key by id, the algorithm that key was given with (never `none`, never
//! another), `typ`, the expiry (5 s leeway), and that every bound field is the request's own.
//! Only `traceparent` and `tracestate` are not bound: they never change what runs or as whom.
//!
//! # What a signed request guarantees, and against whom
//!
//! Against anyone who can read and write the bus but holds no signing key (a Redis client
//! with the password, a WebSocket spoke, a compromised service without keys):
//!
//! - they cannot state an identity: a request with one runs only with a signature made for
//!   it by a key the handler knows;
//! - they cannot change a signed request: another input, operation, deadline (or none),
//!   parent or subscription flag fails verification;
//! - they cannot replay one to the same handler: a handler remembers every signed request id
//!   it took until the signature expires, and drops the same id published again (a warning is
//!   logged), whether the first is still running or finished long ago. The memory is bounded
//!   ([`DEFAULT_REPLAY_CAPACITY`], `CallHandler::with_replay_capacity`); when it is full of
//!   live ids a new signed request is refused (`call.error`, kind `UNAVAILABLE`) rather than
//!   an id forgotten;
//! - they cannot answer a call in the handler's place, when the caller's keys verify replies
//!   and the handler's sign them: every reply is signed ([`reply`](self#replies-and-aborts)),
//!   and the caller drops what is unsigned, forged, or a genuine subscription item out of
//!   turn;
//! - they cannot cancel a signed request: only an abort signed by a key the handler knows
//!   for that request and operation cancels it.
//!
//! # Replies and aborts
//!
//! A handler whose keys sign replies ([`IdentityKeys::with_signing_secret`], or a replica's
//! reply key, [`IdentityKeys::with_reply_signing_ed25519_pem`]) puts a `signature` on every
//! `call.responded`, `call.completed` and `call.error`: a JWS (`typ: "opkit-reply+jwt"`)
//! binding the request id, the event, a digest of the event's JSON without `type`,
//! `requestId` and `signature` ([`reply_body`]) and, for a subscription's items, their index.
//! A caller whose keys verify replies takes only replies that verify. A caller that signs puts
//! a `signature` on its `call.aborted` (`typ: "opkit-abort+jwt"`, binding the request id and
//! operation), and a handler that requires signatures lets only such an abort cancel a signed
//! request. Both are optional fields: peers without keys neither send nor read them.
//!
//! What it does not guarantee:
//!
//! - **Across replicas.** Each replica remembers what it took. With N replicas serving an
//!   operation, the same genuine request republished may run once on each of them before
//!   its deadline: the same input, as the same identity, within the same deadline, as a
//!   transport's redelivery would. Make mutations that must run once idempotent by request
//!   id, or serve them from one replica.
//! - **Secrecy.** Signatures do not encrypt: whoever reads the bus reads inputs, outputs and
//!   identities. Use TLS (`rediss://`, `wss://`) and the transport's own access control.
//! - **Anonymous requests** carry no signature and can be replayed freely; they run only what
//!   anonymous callers may.
//! - **Holders of a key** sign whatever they like: an HMAC secret lets every holder sign;
//!   an Ed25519 key only its holder.
//!
//! # Keys
//!
//! Keys: Ed25519 key pairs (the replicas hold only public keys, so a compromised replica
//! cannot sign) or HMAC shared secrets (every holder can sign). Several verifying keys may be
//! held at once, by id, for rotation: sign with the new key once every replica knows it,
//! then drop the old one.
//!
//! Optional and additive on the wire: a peer without keys neither sends nor reads the field.
//! Tokens of earlier versions (which bound only the identity, request id and operation) no
//! longer verify: upgrade callers and handlers that share keys together.
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! use opkit::prelude::*;
//! use opkit::protocol::{CallHandler, IdentityKeys, MemoryPubSub, PendingOptions, PendingRequestMap};
//! use std::sync::Arc;
//!
//! let keys = IdentityKeys::new().with_signing_secret("2026-11", b"a secret of 32 bytes or more....");
//! let registry = OperationRegistry::new();
//! registry.register(
//!     OperationSpec::new("admin", "purge", OperationKind::Mutation)
//!         .access(AccessRule::roles(["admin"])),
//!     Handler::unary(|_input, _ctx| async move { Ok(serde_json::json!("purged")) }),
//! ).unwrap();
//! let bus = Arc::new(MemoryPubSub::new());
//! let _replica = CallHandler::new(registry, bus.clone())
//!     .with_identity_keys(keys.clone())
//!     .spawn()
//!     .await
//!     .unwrap();
//! let admin = OperationContext::default().with_identity(Identity::new("ann").with_roles(["admin"]));
//!
//! // A caller that signs passes; one that only states the identity is refused.
//! let signing = PendingRequestMap::connect_with(bus.clone(), PendingOptions::default().with_identity_keys(keys))
//!     .await
//!     .unwrap();
//! assert_eq!(signing.call("admin.purge", serde_json::json!({}), &admin).await.unwrap().data, "purged");
//! let stating = PendingRequestMap::connect(bus).await.unwrap();
//! let refused = stating.call("admin.purge", serde_json::json!({}), &admin).await.unwrap_err();
//! assert_eq!(refused.code, ErrorCode::AccessDenied);
//! # });
//! ```

mod digest;
mod keys;
mod replays;
mod reply;
mod request;

pub use keys::{IdentityKeyError, IdentityKeys};
pub use replays::DEFAULT_REPLAY_CAPACITY;
pub(crate) use replays::{Refusal, Replays};
pub use reply::{EVENT_LIFETIME_SECS, Reply, ReplyKind, reply_body};
pub(crate) use request::now_secs;
