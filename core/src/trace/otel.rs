//! The bridge to OpenTelemetry (the `opentelemetry` feature): call spans parented and
//! identified in OpenTelemetry's terms when a `tracing-opentelemetry` layer is installed.
//!
//! With the feature, each [`CallSpan`](super::CallSpan) that is recorded sets its
//! OpenTelemetry parent to the call's [`TraceContext`] — the caller's span, in this process
//! or, carried by `traceparent`, in another — and then takes the span id OpenTelemetry gave
//! the span as its own, so the `traceparent` opkit sends on (in `call.requested`, HTTP
//! headers, MCP `_meta`) names the exported span: one trace in the OpenTelemetry backend,
//! across processes, with W3C propagation. Without a `tracing-opentelemetry` layer on the
//! subscriber, nothing changes.
//!
//! ```
//! use opkit::trace::TraceContext;
//! let trace = TraceContext::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", None).unwrap();
//! let span_context = trace.to_span_context();
//! assert!(span_context.is_remote() && span_context.is_sampled());
//! assert_eq!(TraceContext::from_span_context(&span_context), Some(trace));
//! ```

use super::TraceContext;
use opentelemetry::trace::{SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState};
use std::str::FromStr;
use tracing_opentelemetry::OpenTelemetrySpanExt;

impl TraceContext {
    /// This span as an OpenTelemetry remote [`SpanContext`] (what a propagator extracts).
    pub fn to_span_context(&self) -> SpanContext {
        let state = self
            .tracestate()
            .and_then(|state| TraceState::from_str(state).ok())
            .unwrap_or_default();
        SpanContext::new(
            TraceId::from_bytes(self.trace_id()),
            SpanId::from_bytes(self.span_id()),
            TraceFlags::new(self.flags()),
            true,
            state,
        )
    }

    /// The context of an OpenTelemetry span (`None` when it is invalid).
    pub fn from_span_context(span: &SpanContext) -> Option<Self> {
        if !span.is_valid() {
            return None;
        }
        let state = span.trace_state().header();
        TraceContext::from_ids(
            span.trace_id().to_bytes(),
            span.span_id().to_bytes(),
            None,
            span.trace_flags().to_u8(),
            (!state.is_empty()).then_some(state.as_str()),
        )
    }
}

/// Parents `span` under `trace`'s parent in OpenTelemetry and returns `trace` with the ids
/// OpenTelemetry gave `span` (unchanged without a `tracing-opentelemetry` layer).
pub(crate) fn link(span: &tracing::Span, trace: TraceContext) -> TraceContext {
    // A call that starts a trace keeps OpenTelemetry's own parent (the application's span
    // around it, if any): its ids win below.
    if let Some(parent) = trace.parent_span_id() {
        let Some(parent) = TraceContext::from_ids(
            trace.trace_id(),
            parent,
            None,
            trace.flags(),
            trace.tracestate(),
        ) else {
            return trace;
        };
        let parent =
            opentelemetry::Context::new().with_remote_span_context(parent.to_span_context());
        if span.set_parent(parent).is_err() {
            return trace;
        }
    }
    let otel = span.context();
    let own = otel.span().span_context().clone();
    if !own.is_valid() {
        return trace;
    }
    TraceContext::from_ids(
        own.trace_id().to_bytes(),
        own.span_id().to_bytes(),
        trace.parent_span_id(),
        own.trace_flags().to_u8(),
        trace.tracestate(),
    )
    .unwrap_or(trace)
}
