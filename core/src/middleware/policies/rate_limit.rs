//! [`RateLimit`]: a budget of calls per period, per identity and/or operation (GCRA, in
//! `gcra.rs`).

use super::gcra::KeyedGcra;
use crate::error::CallError;
use crate::middleware::{Call, Middleware, Next, Outcome};
use futures::future::BoxFuture;
use serde_json::json;
use std::num::NonZeroU32;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// What one budget is kept for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RateLimitKey {
    /// One budget per caller identity (`Identity::id`); callers without one share one.
    Identity,
    /// One budget per operation, shared by every caller.
    Operation,
    /// One budget per caller and operation.
    IdentityAndOperation,
    /// One budget for every call the middleware covers.
    Global,
}

/// Lets through `burst` calls per key and refills them evenly over `period`; a call past the
/// budget is refused before its handler runs with `RATE_LIMITED` (HTTP `429` with
/// `Retry-After`, an MCP tool error, the same `CallError` over the call protocol), whose
/// `details.retryAfterMs` says when the next call would pass.
///
/// One `RateLimit` registered once is one budget for every edge a key comes through: an API
/// key's calls over HTTP, MCP, the call protocol and in process draw from the same budget.
///
/// Memory is bounded: keys whose budget is full again are forgotten every
/// 1,024 calls.
///
/// ```
/// use opkit::OperationRegistry;
/// use opkit::middleware::{RateLimit, RateLimitKey};
/// // 100 calls a minute per caller, whatever the transport.
/// let registry = OperationRegistry::new()
///     .with_middleware(RateLimit::per_minute(100).keyed_by(RateLimitKey::Identity));
/// # let _ = registry;
/// ```
#[derive(Clone)]
pub struct RateLimit {
    /// The budgets, by key (one short lock per check).
    limiter: Arc<KeyedGcra>,
    key: RateLimitKey,
    burst: u32,
    period: Duration,
    calls: Arc<AtomicU64>,
}

impl std::fmt::Debug for RateLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RateLimit")
            .field("key", &self.key)
            .field("burst", &self.burst)
            .field("period", &self.period)
            .finish()
    }
}

impl RateLimit {
    /// `burst` calls per `period` per key (keyed by identity until
    /// [`keyed_by`](Self::keyed_by) says otherwise). A `burst` of 0 counts as 1, and so does
    /// a zero period's rate.
    pub fn new(burst: u32, period: Duration) -> Self {
        let burst_nz = NonZeroU32::new(burst).unwrap_or(NonZeroU32::MIN);
        Self {
            limiter: Arc::new(KeyedGcra::new(burst_nz, period)),
            key: RateLimitKey::Identity,
            burst: burst_nz.get(),
            period,
            calls: Arc::default(),
        }
    }

    /// `calls` per minute per key.
    pub fn per_minute(calls: u32) -> Self {
        Self::new(calls, Duration::from_secs(60))
    }

    /// `calls` per second per key.
    pub fn per_second(calls: u32) -> Self {
        Self::new(calls, Duration::from_secs(1))
    }

    /// What one budget is kept for (default: [`RateLimitKey::Identity`]).
    #[must_use]
    pub fn keyed_by(mut self, key: RateLimitKey) -> Self {
        self.key = key;
        self
    }

    fn key_of(&self, call: &Call) -> String {
        let who = || {
            call.ctx()
                .identity()
                .map_or("", |identity| identity.id.as_str())
        };
        match self.key {
            RateLimitKey::Identity => format!("i:{}", who()),
            RateLimitKey::Operation => format!("o:{}", call.id()),
            RateLimitKey::IdentityAndOperation => format!("b:{}\u{0}{}", call.id(), who()),
            RateLimitKey::Global => String::new(),
        }
    }

    fn refuse(&self, call: &Call, wait: Duration) -> CallError {
        let retry_after_ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX).max(1);
        let whose = match (self.key, call.ctx().identity()) {
            (RateLimitKey::Operation | RateLimitKey::Global, _) => String::new(),
            (_, Some(identity)) => format!(" for `{}`", identity.id),
            (_, None) => " for anonymous callers".to_owned(),
        };
        CallError::rate_limited(format!(
            "rate limit of {} calls per {:?} reached{whose}; retry in {retry_after_ms} ms",
            self.burst, self.period
        ))
        .with_details(json!({"retryAfterMs": retry_after_ms}))
    }
}

impl Middleware for RateLimit {
    fn handle(&self, call: Call, next: Next) -> BoxFuture<'static, Result<Outcome, CallError>> {
        if self.calls.fetch_add(1, Ordering::Relaxed) % 1024 == 1023 {
            self.limiter.forget_full();
        }
        let key = self.key_of(&call);
        match self.limiter.check(&key) {
            Ok(()) => next.run(call),
            Err(wait) => {
                let error = self.refuse(&call, wait);
                Box::pin(std::future::ready(Err(error)))
            }
        }
    }
}
