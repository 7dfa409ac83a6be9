//! Tracing a call across processes: the W3C [`TraceContext`] every call carries, and the
//! [`CallSpan`] every path opens for it.
//!
//! Every call opkit runs or sends — [`OperationRegistry::execute`](crate::OperationRegistry::execute)
//! and [`subscribe`](crate::OperationRegistry::subscribe), typed calls, the
//! [`CallHandler`](crate::CallHandler) and [`PendingRequestMap`](crate::PendingRequestMap),
//! and in `opkit-adapters` the HTTP and MCP servers and the OpenAPI and MCP imports — runs
//! inside a `tracing` span named `opkit.call` (target [`TARGET`]), fielded after the
//! OpenTelemetry semantic conventions for RPC (see [`CallSpan`]).
//!
//! The trace itself travels with the call, without OpenTelemetry: the
//! [`OperationContext`](crate::OperationContext) holds the current span's
//! [`TraceContext`], nested calls inherit it, and each process hop carries it on as
//! W3C `traceparent`/`tracestate`:
//!
//! | hop | where |
//! |---|---|
//! | call protocol | the optional `traceparent`/`tracestate` fields of `call.requested` (peers that do not know them ignore them) |
//! | HTTP (server, OpenAPI import) | the `traceparent`/`tracestate` headers |
//! | MCP (server, import) | `params._meta.traceparent` / `params._meta.tracestate` |
//!
//! Each span gets a fresh span id whose parent is the span it was started under (in this
//! process or, through the carried `traceparent`, in the caller's); a call that arrives
//! without a trace context starts a new trace. The `trace_id`, `span_id` and
//! `parent_span_id` fields of every span rebuild the tree from any `tracing` output,
//! across processes.
//!
//! With the `opentelemetry` feature, recorded spans are parented and identified in
//! OpenTelemetry's terms through `tracing-opentelemetry` (see the `otel` module).
//!
//! With the `metrics` feature, every call also reports to the [`metrics`](https://docs.rs/metrics)
//! facade (see the `metrics` module).

#[cfg(feature = "metrics")]
pub mod metrics;
#[cfg(feature = "opentelemetry")]
pub mod otel;
mod span;

pub use crate::trace_context::{MAX_TRACESTATE_LEN, TraceContext, TraceContextError};
pub use span::{CallSpan, SpanKind, TARGET};
