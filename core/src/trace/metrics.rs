//! Call metrics through the [`metrics`] facade (the `metrics` feature).
//!
//! Every call that opens a [`CallSpan`](super::CallSpan) — every path, see [`crate::trace`] —
//! reports, to whatever recorder the application installed (Prometheus, StatsD, ...):
//!
//! | metric | type | labels |
//! |---|---|---|
//! | [`CALLS_TOTAL`] `opkit_calls_total` | counter | `operation`, `kind` (`internal`/`server`/`client`), `outcome` (`ok`/`error`/`cancelled`), `code` (the `CallError` code, `""` unless `error`) |
//! | [`CALLS_IN_FLIGHT`] `opkit_calls_in_flight` | gauge | `operation`, `kind` |
//! | [`CALL_DURATION_SECONDS`] `opkit_call_duration_seconds` | histogram | `operation`, `kind` |
//!
//! Without the feature nothing is compiled in; with it and no recorder installed, the
//! facade's no-op recorder takes the calls.

use super::SpanKind;
use metrics::{Gauge, counter, gauge, histogram};
use std::sync::Arc;
use std::time::Duration;

/// Calls made, by operation, span kind, outcome and error code.
pub const CALLS_TOTAL: &str = "opkit_calls_total";
/// Calls running now, by operation and span kind.
pub const CALLS_IN_FLIGHT: &str = "opkit_calls_in_flight";
/// How long calls took, in seconds, by operation and span kind.
pub const CALL_DURATION_SECONDS: &str = "opkit_call_duration_seconds";

/// The metrics of one running call.
#[derive(Debug)]
pub(crate) struct CallMetrics {
    operation: Arc<str>,
    kind: &'static str,
    in_flight: Gauge,
}

impl CallMetrics {
    /// Counts the call in flight (`None` is never returned today; the option leaves room for
    /// sampling).
    pub(crate) fn start(operation: &str, kind: SpanKind) -> Option<Self> {
        let operation: Arc<str> = Arc::from(operation);
        let kind = kind.as_str();
        let in_flight = gauge!(CALLS_IN_FLIGHT, "operation" => operation.clone(), "kind" => kind);
        in_flight.increment(1.0);
        Some(Self {
            operation,
            kind,
            in_flight,
        })
    }

    /// Ends the call: out of flight, counted and timed.
    pub(crate) fn finish(
        self,
        outcome: &'static str,
        code: Option<&'static str>,
        elapsed: Duration,
    ) {
        self.in_flight.decrement(1.0);
        counter!(
            CALLS_TOTAL,
            "operation" => self.operation.clone(),
            "kind" => self.kind,
            "outcome" => outcome,
            "code" => code.unwrap_or(""),
        )
        .increment(1);
        histogram!(CALL_DURATION_SECONDS, "operation" => self.operation, "kind" => self.kind)
            .record(elapsed.as_secs_f64());
    }
}
