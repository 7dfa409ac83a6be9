//! [`Cache`]: query results reused for a while, by operation, input and identity.

use crate::envelope::ResponseEnvelope;
use crate::error::CallError;
use crate::middleware::{CacheHint, CacheScope, Call, Middleware, Next, Outcome, Reply};
use crate::spec::OperationKind;
use futures::future::BoxFuture;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Stored results by key, with when each was stored.
type Entries = HashMap<String, (ResponseEnvelope, Instant), foldhash::fast::RandomState>;

/// Reuses a query's result for `ttl`: a call with the same operation, input and caller
/// identity gets the stored envelope without running the handler. Only queries are cached
/// (mutations and subscriptions pass through), and only results that are not error
/// envelopes.
///
/// Results are kept per identity: one caller's result is never served to another (callers
/// without an identity share theirs), unless [`shared`](Self::shared) says every caller may
/// reuse them. Each reply carries a [`CacheHint`] (HTTP `Cache-Control`, MCP `_meta`).
///
/// Bounded: at most `max_entries` results (10,000 by default); past that expired ones are
/// dropped, then the oldest.
///
/// ```
/// use opkit::OperationRegistry;
/// use opkit::middleware::{Cache, Scope};
/// use std::time::Duration;
/// let registry = OperationRegistry::new()
///     .with_middleware_for(Scope::namespace("catalog"), Cache::new(Duration::from_secs(30)));
/// # let _ = registry;
/// ```
#[derive(Debug, Clone)]
pub struct Cache {
    ttl: Duration,
    scope: CacheScope,
    max_entries: usize,
    entries: Arc<Mutex<Entries>>,
}

impl Cache {
    /// Results fresh for `ttl`, per identity.
    pub fn new(ttl: Duration) -> Self {
        Self {
            ttl,
            scope: CacheScope::Private,
            max_entries: 10_000,
            entries: Arc::default(),
        }
    }

    /// Every caller may reuse a result, whoever it was made for (for data that does not
    /// depend on the caller).
    #[must_use]
    pub fn shared(mut self) -> Self {
        self.scope = CacheScope::Public;
        self
    }

    /// At most `max` results are kept (at least 1).
    #[must_use]
    pub fn max_entries(mut self, max: usize) -> Self {
        self.max_entries = max.max(1);
        self
    }

    fn key(&self, call: &mut Call) -> Result<String, CallError> {
        let who = match self.scope {
            CacheScope::Public => String::new(),
            CacheScope::Private => call
                .ctx()
                .identity()
                .map_or_else(String::new, |identity| format!("{:?}", identity.id)),
        };
        let id = call.id().to_owned();
        let input = serde_json::to_string(call.input()?)
            .map_err(|error| CallError::execution(format!("cannot key the cache: {error}")))?;
        Ok(format!("{id}\u{0}{who}\u{0}{input}"))
    }

    fn lookup(&self, key: &str) -> Option<ResponseEnvelope> {
        let entries = self.entries.lock();
        let (envelope, stored) = entries.get(key)?;
        (stored.elapsed() < self.ttl).then(|| envelope.clone())
    }

    fn store(&self, key: String, envelope: ResponseEnvelope) {
        let mut entries = self.entries.lock();
        if entries.len() >= self.max_entries {
            let ttl = self.ttl;
            entries.retain(|_, (_, stored)| stored.elapsed() < ttl);
            if entries.len() >= self.max_entries
                && let Some(oldest) = entries
                    .iter()
                    .min_by_key(|(_, (_, stored))| *stored)
                    .map(|(key, _)| key.clone())
            {
                entries.remove(&oldest);
            }
        }
        entries.insert(key, (envelope, Instant::now()));
    }

    fn hint(&self) -> CacheHint {
        CacheHint {
            ttl: self.ttl,
            scope: self.scope,
        }
    }
}

impl Middleware for Cache {
    fn handle(&self, mut call: Call, next: Next) -> BoxFuture<'static, Result<Outcome, CallError>> {
        if call.spec().kind != OperationKind::Query {
            return next.run(call);
        }
        let this = self.clone();
        Box::pin(async move {
            let key = this.key(&mut call)?;
            if let Some(envelope) = this.lookup(&key) {
                return Ok(Outcome::Unary(
                    Reply::new(envelope).with_cache_hint(this.hint()),
                ));
            }
            let mut reply = next.run(call).await?.into_reply()?;
            let envelope = reply.envelope()?;
            if !envelope.is_error() {
                this.store(key, envelope.clone());
            }
            Ok(Outcome::Unary(reply.with_cache_hint(this.hint())))
        })
    }
}
