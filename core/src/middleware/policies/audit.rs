//! [`Audit`]: one record per call — who, what, through which edge, the outcome and how long
//! it took — as a `tracing` event and, optionally, to the application's own sink.

use crate::error::{CallError, ErrorCode};
use crate::middleware::{Call, Middleware, Next, Outcome};
use futures::future::BoxFuture;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The `tracing` target of audit records: `RUST_LOG=opkit::audit=info`.
pub const TARGET: &str = "opkit::audit";

/// One audited call.
#[derive(Debug, Clone, PartialEq)]
pub struct AuditRecord {
    /// The operation id.
    pub operation: String,
    /// The caller's identity id, when the edge established one.
    pub identity: Option<String>,
    /// The edge the call came through ([`Edge::name`](crate::edge::Edge::name)); `None` in
    /// process.
    pub edge: Option<&'static str>,
    /// The request id.
    pub request_id: String,
    /// `Ok` or the error's code (for a subscription: how its stream ended).
    pub outcome: Result<(), ErrorCode>,
    /// From the middleware's start to the result (a subscription: to its stream's end).
    pub duration: Duration,
}

type Sink = Arc<dyn Fn(&AuditRecord) + Send + Sync>;

/// Writes an [`AuditRecord`] for every call it covers, as an INFO event on target
/// `opkit::audit` (fields `operation`, `identity`, `edge`, `request_id`, `outcome`,
/// `duration_ms`) and to the sink given with [`with_sink`](Self::with_sink). Register it
/// first to see the calls other middleware refuse.
///
/// ```
/// use opkit::OperationRegistry;
/// use opkit::middleware::Audit;
/// let registry = OperationRegistry::new().with_middleware(Audit::new());
/// # let _ = registry;
/// ```
#[derive(Clone, Default)]
pub struct Audit {
    sink: Option<Sink>,
}

impl std::fmt::Debug for Audit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Audit")
            .field("sink", &self.sink.is_some())
            .finish()
    }
}

impl Audit {
    /// Records as `tracing` events.
    pub fn new() -> Self {
        Self::default()
    }

    /// Also hands every record to `sink` (a database writer, a test's list).
    #[must_use]
    pub fn with_sink(mut self, sink: impl Fn(&AuditRecord) + Send + Sync + 'static) -> Self {
        self.sink = Some(Arc::new(sink));
        self
    }
}

/// Emits a record once the call's outcome is known.
struct Pending {
    record: AuditRecord,
    started: Instant,
    sink: Option<Sink>,
}

impl Pending {
    fn finish(mut self, outcome: Result<(), ErrorCode>) {
        self.record.outcome = outcome;
        self.record.duration = self.started.elapsed();
        let record = &self.record;
        tracing::info!(
            target: TARGET,
            operation = %record.operation,
            identity = record.identity.as_deref(),
            edge = record.edge,
            request_id = %record.request_id,
            outcome = record.outcome.map_or_else(|code| code.as_str(), |()| "ok"),
            duration_ms = record.duration.as_secs_f64() * 1000.0,
            "call"
        );
        if let Some(sink) = &self.sink {
            sink(record);
        }
    }
}

impl Middleware for Audit {
    fn handle(&self, call: Call, next: Next) -> BoxFuture<'static, Result<Outcome, CallError>> {
        let pending = Pending {
            record: AuditRecord {
                operation: call.id().to_owned(),
                identity: call.ctx().identity().map(|identity| identity.id.clone()),
                edge: call.ctx().edge().map(crate::edge::Edge::name),
                request_id: call.ctx().request_id().to_owned(),
                outcome: Ok(()),
                duration: Duration::ZERO,
            },
            started: Instant::now(),
            sink: self.sink.clone(),
        };
        Box::pin(async move {
            match next.run(call).await {
                Ok(Outcome::Stream(items)) => {
                    // The record is written when the stream ends or is dropped.
                    let mut pending = Some(pending);
                    let items = OnEnd::new(items, move |ended| {
                        if let Some(pending) = pending.take() {
                            pending.finish(ended);
                        }
                    });
                    Ok(Outcome::Stream(Box::pin(items)))
                }
                Ok(outcome) => {
                    pending.finish(Ok(()));
                    Ok(outcome)
                }
                Err(error) => {
                    pending.finish(Err(error.code));
                    Err(error)
                }
            }
        })
    }
}

/// A stream that calls `on_end` once, with its last error's code, when it ends or is dropped.
struct OnEnd<S, F: FnMut(Result<(), ErrorCode>)> {
    items: S,
    last: Result<(), ErrorCode>,
    on_end: Option<F>,
}

impl<S, F: FnMut(Result<(), ErrorCode>)> OnEnd<S, F> {
    fn new(items: S, on_end: F) -> Self {
        Self {
            items,
            last: Ok(()),
            on_end: Some(on_end),
        }
    }
}

impl<S, T, F> futures::Stream for OnEnd<S, F>
where
    S: futures::Stream<Item = Result<T, CallError>> + Unpin,
    F: FnMut(Result<(), ErrorCode>) + Unpin,
{
    type Item = Result<T, CallError>;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        let this = &mut *self;
        let polled = std::pin::Pin::new(&mut this.items).poll_next(cx);
        match &polled {
            std::task::Poll::Ready(Some(Err(error))) => this.last = Err(error.code),
            std::task::Poll::Ready(None) => {
                if let Some(mut on_end) = this.on_end.take() {
                    on_end(this.last);
                }
            }
            _ => {}
        }
        polled
    }
}

impl<S, F: FnMut(Result<(), ErrorCode>)> Drop for OnEnd<S, F> {
    fn drop(&mut self) {
        if let Some(mut on_end) = self.on_end.take() {
            on_end(self.last);
        }
    }
}
