//! [`CallSpan`]: the `tracing` span (and the metrics) of one call, on every path.

use super::TraceContext;
use crate::context::OperationContext;
use crate::error::CallError;
use crate::spec::OperationKind;
use std::time::Instant;
use tracing::Span;
use tracing::field::Empty;

/// The `tracing` target of every call span: `RUST_LOG=opkit::call=info` turns them on,
/// `opkit::call=off` off.
pub const TARGET: &str = "opkit::call";

/// The role of a span in a call, after OpenTelemetry's span kinds (the `otel.kind` field).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SpanKind {
    /// A call run in this process (`execute`, `subscribe`, typed calls).
    Internal,
    /// A call received from another process (call handler, HTTP and MCP servers).
    Server,
    /// A call sent to another process (pending-request map, OpenAPI and MCP imports).
    Client,
}

impl SpanKind {
    /// The OpenTelemetry name: `"internal"`, `"server"` or `"client"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Internal => "internal",
            Self::Server => "server",
            Self::Client => "client",
        }
    }
}

/// The trace a span nothing records passes on: the call's own, or a new root when it has
/// none; nothing when it does not carry one (see [`CallSpan::begin`]).
fn carried(ctx: &OperationContext, carries: bool) -> Option<TraceContext> {
    carries.then(|| ctx.trace().cloned().unwrap_or_else(TraceContext::new_root))
}

/// The span of one call: a `tracing` span named `opkit.call` (target [`TARGET`], level
/// INFO) with the OpenTelemetry RPC fields, the call's [`TraceContext`], and — with the
/// `metrics` feature — the call's metrics.
///
/// | field | value |
/// |---|---|
/// | `otel.name`, `rpc.method` | the operation id |
/// | `otel.kind` | `internal`, `server` or `client` ([`SpanKind`]) |
/// | `rpc.system` | `opkit` |
/// | `rpc.service` | the operation's namespace |
/// | `opkit.path` | where the call went through: `execute`, `subscribe`, `typed`, `call_handler`, `pending`, `http_server`, `mcp_server`, `openapi`, `mcp`, or the name of an application's own [`Edge`](crate::edge::Edge) |
/// | `opkit.kind` | `QUERY`, `MUTATION` or `SUBSCRIPTION`, when known |
/// | `opkit.request_id`, `opkit.parent_request_id` | the request ids |
/// | `opkit.outcome` | `ok`, `error` or `cancelled` (dropped before it finished) |
/// | `error.type`, `otel.status_code` | the `CallError` code and `ERROR`, on an error |
/// | `opkit.duration_ms` | how long the call took |
/// | `trace_id`, `span_id`, `parent_span_id` | the W3C ids, in hex, so a log of spans rebuilds the tree without OpenTelemetry |
///
/// When nothing listens for the span (no subscriber, or `opkit::call` filtered out) an
/// in-process span costs one disabled-callsite check and leaves the context's trace as
/// it is; a span at a process edge ([`SpanKind::Server`], [`SpanKind::Client`]) still
/// carries the trace on (and starts one when the call has none), so a process that does
/// not record does not break the trace of those that do. (The front door leaves it out for
/// a handler that cannot pass it on: one that reads nothing from its context, with no
/// middleware around it.)
///
/// ```
/// use opkit::OperationContext;
/// use opkit::trace::{CallSpan, SpanKind, TraceContext};
/// let ctx = OperationContext::new().with_trace(TraceContext::new_root());
/// let mut span = CallSpan::start(SpanKind::Client, "pending", "math.add", &ctx);
/// // A client span always has a context to send, a child of the caller's.
/// let sent = span.trace().unwrap();
/// assert_eq!(sent.trace_id(), ctx.trace().unwrap().trace_id());
/// span.finish(Ok(()));
/// ```
#[derive(Debug)]
pub struct CallSpan {
    span: Span,
    trace: Option<TraceContext>,
    started: Option<Instant>,
    #[cfg(feature = "metrics")]
    metrics: Option<super::metrics::CallMetrics>,
    finished: bool,
}

impl CallSpan {
    /// `false` when no call span can be recorded or measured at all (no subscriber takes
    /// `opkit::call` spans at INFO, and the `metrics` feature is off): a hot path checks
    /// this first and skips [`start`](Self::start) altogether. `true` does not mean the span
    /// will be recorded (a filter on span names or fields may still drop it): `start` and
    /// [`is_active`](Self::is_active) decide that.
    pub fn wanted() -> bool {
        cfg!(feature = "metrics") || tracing::span_enabled!(target: TARGET, tracing::Level::INFO)
    }

    /// Starts the span of a call to `operation_id` made with `ctx` (its trace context is the
    /// parent), through `path` (see the table above).
    pub fn start(
        kind: SpanKind,
        path: &'static str,
        operation_id: &str,
        ctx: &OperationContext,
    ) -> Self {
        Self::begin(kind, path, operation_id, ctx, kind != SpanKind::Internal)
    }

    /// The [`SpanKind::Server`] span of a call served at a process edge; `passes_on` is
    /// `false` when the handler cannot pass a trace on (it reads nothing from its context,
    /// and no middleware covers it): then a span nothing records starts no trace for it.
    pub(crate) fn start_served(
        path: &'static str,
        operation_id: &str,
        ctx: &OperationContext,
        passes_on: bool,
    ) -> Self {
        Self::begin(SpanKind::Server, path, operation_id, ctx, passes_on)
    }

    /// [`start`](Self::start); `carries` says whether a span nothing records still carries
    /// the trace on (starting one when the call has none).
    fn begin(
        kind: SpanKind,
        path: &'static str,
        operation_id: &str,
        ctx: &OperationContext,
        carries: bool,
    ) -> Self {
        if !Self::wanted() {
            // Nothing can record or measure it: no span at all (`info_span!` would still
            // build its fields for `tracing`'s `log` fallback, which many trees turn on).
            return Self {
                span: Span::none(),
                trace: carried(ctx, carries),
                started: None,
                #[cfg(feature = "metrics")]
                metrics: None,
                finished: false,
            };
        }
        let span = tracing::info_span!(
            target: TARGET,
            "opkit.call",
            otel.name = operation_id,
            otel.kind = kind.as_str(),
            otel.status_code = Empty,
            rpc.system = "opkit",
            rpc.method = operation_id,
            rpc.service = operation_id.rsplit_once('.').map_or("", |(namespace, _)| namespace),
            opkit.path = path,
            opkit.kind = Empty,
            opkit.request_id = tracing::field::display(ctx.request_id_display()),
            opkit.parent_request_id = ctx.parent_request_id(),
            opkit.outcome = Empty,
            error.type = Empty,
            opkit.duration_ms = Empty,
            trace_id = Empty,
            span_id = Empty,
            parent_span_id = Empty,
        );
        #[cfg(feature = "metrics")]
        let metrics = super::metrics::CallMetrics::start(operation_id, kind);
        #[cfg(feature = "metrics")]
        let measured = metrics.is_some();
        #[cfg(not(feature = "metrics"))]
        let measured = false;
        let recording = !span.is_disabled();
        let trace = if recording {
            let trace = ctx
                .trace()
                .map_or_else(TraceContext::new_root, TraceContext::child);
            #[cfg(feature = "opentelemetry")]
            let trace = super::otel::link(&span, trace);
            span.record("trace_id", trace.trace_id_hex());
            span.record("span_id", trace.span_id_hex());
            if let Some(parent) = trace.parent_span_id_hex() {
                span.record("parent_span_id", parent);
            }
            Some(trace)
        } else {
            carried(ctx, carries)
        };
        Self {
            span,
            trace,
            started: (recording || measured).then(Instant::now),
            #[cfg(feature = "metrics")]
            metrics,
            finished: false,
        }
    }

    /// `true` when the span is recorded or the call measured; when `false`, callers may
    /// take their plain path (nothing to enter, nothing to record).
    pub fn is_active(&self) -> bool {
        self.started.is_some()
    }

    /// The `tracing` span (to enter, or to instrument a future with).
    pub fn span(&self) -> &Span {
        &self.span
    }

    /// Runs `work` inside the span when it is active, plainly otherwise.
    ///
    /// A plain fn returning one of two futures, not an `async fn`: an `async fn` keeps its
    /// argument beside the future it awaits, so `work` would take its room twice.
    pub(crate) fn run_in<F: std::future::Future>(
        &self,
        work: F,
    ) -> futures::future::Either<tracing::instrument::Instrumented<F>, F> {
        if self.is_active() {
            futures::future::Either::Left(tracing::Instrument::instrument(work, self.span.clone()))
        } else {
            futures::future::Either::Right(work)
        }
    }

    /// The trace context of this span: what the call's handler runs with and what a client
    /// span sends on. `None` for an in-process span nobody records (the context's own trace,
    /// if any, stays as it is).
    pub fn trace(&self) -> Option<&TraceContext> {
        self.trace.as_ref()
    }

    /// `ctx` with this span's trace context (unchanged when there is none).
    pub fn apply(&self, ctx: OperationContext) -> OperationContext {
        match &self.trace {
            Some(trace) => ctx.with_trace(trace.clone()),
            None => ctx,
        }
    }

    /// Records the operation's kind, once known.
    pub fn record_kind(&self, kind: OperationKind) {
        // As at the end (`record_end`): a span nothing records is not written to.
        if !self.span.is_disabled() {
            self.span.record("opkit.kind", kind.as_str());
        }
    }

    /// Records the request id, when it is minted after the span starts (the
    /// pending-request map's `<callerId>:<n>`).
    pub fn record_request_id(&self, request_id: &str) {
        self.span.record("opkit.request_id", request_id);
    }

    /// Records the outcome and the duration, and ends the call's metrics. Later calls do
    /// nothing.
    pub fn finish(&mut self, outcome: Result<(), &CallError>) {
        if self.finished {
            return;
        }
        self.finished = true;
        let Some(started) = self.started else {
            return;
        };
        let elapsed = started.elapsed();
        let code = outcome.err().map(|error| error.code.as_str());
        self.record_end(if code.is_some() { "error" } else { "ok" }, code, elapsed);
    }

    /// [`finish`](Self::finish) from a call's result.
    pub fn finish_with<T>(&mut self, result: &Result<T, CallError>) {
        self.finish(result.as_ref().map(|_| ()));
    }

    fn record_end(
        &mut self,
        outcome: &'static str,
        code: Option<&'static str>,
        elapsed: std::time::Duration,
    ) {
        if !self.span.is_disabled() {
            self.span.record("opkit.outcome", outcome);
            self.span
                .record("opkit.duration_ms", elapsed.as_secs_f64() * 1000.0);
            if let Some(code) = code {
                self.span.record("error.type", code);
                self.span.record("otel.status_code", "ERROR");
            }
        }
        #[cfg(feature = "metrics")]
        if let Some(metrics) = self.metrics.take() {
            metrics.finish(outcome, code, elapsed);
        }
    }
}

impl Drop for CallSpan {
    /// A call dropped before it finished (its caller gave up) ends as `cancelled`.
    fn drop(&mut self) {
        if !self.finished {
            self.finished = true;
            if let Some(started) = self.started {
                self.record_end("cancelled", None, started.elapsed());
            }
        }
    }
}
