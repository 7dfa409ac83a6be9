//! Resource bounds: every limit opkit enforces on outside data, its default, and what the
//! caller sees when it is exceeded.
//!
//! | bound | default | configured with | exceeding it |
//! |---|---|---|---|
//! | nesting depth of an input ([`MAX_INPUT_DEPTH`]) | 100 levels | fixed | `VALIDATION_ERROR` naming the limit, with one violation at the JSON pointer of the first container too deep |
//! | calls and subscriptions waiting on one [`PendingRequestMap`](crate::PendingRequestMap) ([`DEFAULT_MAX_PENDING`]) | 65,536 | [`PendingOptions::with_max_pending`](crate::protocol::PendingOptions::with_max_pending) | the new call fails at once with `TRANSPORT_ERROR` naming the limit; calls already pending are unaffected |
//! | depth of normalization ([`CAST_MAX_DEPTH`]) | 64 levels | fixed | not an error: deeper values are kept as they are, and the output validation that follows warns about whatever still mismatches |
//! | items of one remote subscription waiting for their caller to poll ([`DEFAULT_MAX_STREAM_BUFFER`]) | 8 MiB (each item counts its wire size plus 256 bytes) | [`PendingOptions::with_max_stream_buffer`](crate::protocol::PendingOptions::with_max_stream_buffer) | the stream gives the items it holds, then ends with `TRANSPORT_ERROR` naming the limit (`details.limit: "maxStreamBuffer"`); the subscription is aborted (`call.aborted`), later items are dropped |
//! | a call without a deadline ([`DEFAULT_TIMEOUT`](crate::protocol::DEFAULT_TIMEOUT)) | 30 s | [`PendingOptions::with_default_timeout`](crate::protocol::PendingOptions::with_default_timeout) | `TIMEOUT` |
//!
//! JSON parsed from bytes (call-protocol events, HTTP bodies) is also bounded by serde_json's
//! parser, which refuses more than 127 levels of nesting; a call event that fails to parse
//! for that reason is answered with an error for its request id whenever the id can be read.
//!
//! The adapters document their own bounds next to their settings (`opkit-adapters`): the HTTP
//! server's request body limit (1 MiB), the SSE event limit of the OpenAPI import (16 MiB), and
//! the reference-chain and schema-walk limits of the OpenAPI import. The whole list, with the
//! test that pins each bound, is `docs/limits.md` in the repository.
//!
//! # Why these defaults
//!
//! - **Input depth 100.** Validation, normalization, serialization and even dropping a
//!   [`serde_json::Value`] recurse once per level, so a value built in code and nested a few
//!   ten thousand levels deep overflows the stack. 100 levels is far beyond any real input,
//!   and it keeps every accepted input decodable on the other side of the call protocol:
//!   `call.requested` wraps the input one level deeper, and serde_json's parser stops at 127.
//!   The check ([`check_depth`]) is one pass whose recursion stops at the limit, so it is safe
//!   on a value of any depth and allocates nothing unless the value is too deep.
//! - **65,536 pending requests.** Each pending request holds a channel and a map entry (a few
//!   hundred bytes), so the cap bounds a caller's memory at a few tens of MiB while staying far
//!   above what a healthy caller keeps in flight; reaching it means the far side stopped
//!   answering or the caller is not applying backpressure.
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! use opkit::prelude::*;
//! use serde_json::{Value, json};
//!
//! let registry = OperationRegistry::new();
//! registry.register(
//!     OperationSpec::new("echo", "any", OperationKind::Query).input_schema(json!(true)),
//!     Handler::unary(|input, _ctx| async move { Ok(input) }),
//! ).unwrap();
//! let deep = (0..=opkit::limits::MAX_INPUT_DEPTH).fold(json!(0), |inner, _| Value::Array(vec![inner]));
//! let error = registry.execute("echo.any", deep, &OperationContext::default()).await.unwrap_err();
//! assert_eq!(error.code, ErrorCode::ValidationError);
//! assert!(error.message.contains("MAX_INPUT_DEPTH"));
//! # });
//! ```

mod depth;

pub use crate::schema::CAST_MAX_DEPTH;
pub use depth::{TooDeep, check_depth, dismantle};

pub(crate) use depth::{admit_input, check_input};

/// How many calls and subscriptions one [`PendingRequestMap`](crate::PendingRequestMap) keeps
/// waiting at once, unless
/// [`PendingOptions::with_max_pending`](crate::protocol::PendingOptions::with_max_pending) says
/// otherwise (see the [module docs](self) for why).
pub const DEFAULT_MAX_PENDING: usize = 65_536;

/// How many bytes of items one remote subscription queues for a caller that does not poll,
/// unless
/// [`PendingOptions::with_max_stream_buffer`](crate::protocol::PendingOptions::with_max_stream_buffer)
/// says otherwise: an item counts its size on the wire plus 256 bytes (its decoded form's
/// overhead), so many tiny items are bounded too.
pub const DEFAULT_MAX_STREAM_BUFFER: usize = 8 << 20;

/// How deep an input may nest arrays and objects (a scalar is depth 0, `[1]` depth 1).
///
/// Checked by [`OperationRegistry::execute`](crate::OperationRegistry::execute),
/// [`subscribe`](crate::OperationRegistry::subscribe) and
/// [`validate_input`](crate::OperationRegistry::validate_input), and by a
/// [`PendingRequestMap`](crate::PendingRequestMap) before a request is published, before the
/// schema is consulted: a deeper input is a `VALIDATION_ERROR` with one violation at the
/// JSON pointer of the first container below the limit. See the [module docs](self) for why
/// 100.
pub const MAX_INPUT_DEPTH: usize = 100;
