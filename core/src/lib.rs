//! # opkit
//!
//! Typed, schema-described, observable operations. Plain `async fn`s and stream functions
//! become **operations** — named, schema-described, access-checked units of work — that are
//! called in-process, across processes, or imported from HTTP APIs and MCP servers, and every
//! result comes back in one shape: a [`ResponseEnvelope`] `{ data, meta }`.
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! use opkit::prelude::*;
//! use serde_json::json;
//!
//! let registry = OperationRegistry::new();
//! registry.register(
//!     OperationSpec::new("greet", "hello", OperationKind::Query)
//!         .input_schema(json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}))
//!         .output_schema(json!({"type": "string"})),
//!     Handler::unary(|input, _ctx| async move {
//!         Ok(json!(format!("Hello, {}!", input["name"].as_str().unwrap_or("?"))))
//!     }),
//! ).unwrap();
//!
//! let envelope = registry.execute("greet.hello", json!({"name": "Ada"}), &OperationContext::default()).await?;
//! assert_eq!(envelope.data, json!("Hello, Ada!"));
//! assert_eq!(envelope.meta.source(), "local");
//! # Ok::<(), CallError>(())
//! # }).unwrap();
//! ```
//!
//! ## Map of the crate
//! - [`envelope`]: [`ResponseEnvelope`], the meta variants, detection and factories.
//! - [`OperationSpec`], [`OperationKind`], [`AccessRule`], [`Identity`]: what an operation is.
//! - [`OperationContext`]: what a handler knows about its call; [`OperationEnv`] for nested calls.
//! - [`operation`]: the attribute that turns a fn into an operation (signature shapes,
//!   arguments, the linker caveat); [`TypedOperation`] and [`Input`] for typed use.
//! - [`OperationRegistry`] and [`Handler`]: registration and the shared result pipeline.
//! - [`schema`]: schema generation, compiled validation and normalization (cast).
//! - [`CallError`] / [`ErrorCode`]: the one error type.
//! - [`limits`]: every resource bound on outside data, its default and the error it gives.
//! - [`protocol`]: the call protocol ([`PendingRequestMap`], [`CallHandler`], [`PubSub`], [`MemoryPubSub`]).

pub mod envelope;
pub mod limits;
pub mod protocol;
pub mod schema;

mod access;
mod context;
mod env;
mod error;
mod registry;
mod spec;
pub mod state;
mod typed;

#[doc(hidden)]
#[path = "private.rs"]
pub mod __private;

pub use access::{AccessRule, Identity};
pub use context::{Deadline, OperationContext, new_request_id};
pub use env::{EnvBackend, OperationEnv};
pub use envelope::{ResponseEnvelope, ResponseMeta};
pub use error::{CallError, ErrorCode, ErrorKind, Violation};
#[doc = include_str!("operation.md")]
pub use opkit_macros::operation;
pub use protocol::{CallHandler, MemoryPubSub, PendingRequestMap, PubSub};
pub use registry::{EnvelopeStream, Handler, OperationRegistry, RegistryError};
pub use spec::{OperationKind, OperationSpec};
pub use state::State;
pub use typed::{Input, TypedOperation};

/// The names most programs need: `use opkit::prelude::*;`.
pub mod prelude {
    pub use crate::envelope::ResponseEnvelope;
    pub use crate::{
        AccessRule, CallError, EnvelopeStream, ErrorCode, ErrorKind, Handler, Identity, Input,
        OperationContext, OperationEnv, OperationKind, OperationRegistry, OperationSpec, State,
        TypedOperation, operation,
    };
    pub use futures::{Stream, StreamExt};
}
