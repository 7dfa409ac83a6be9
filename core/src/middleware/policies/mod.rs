//! The ready-made policies: rate limits, concurrency caps, timeouts, result caching and an
//! audit record per call, each a [`Middleware`](super::Middleware) of a few lines to use.

mod audit;
mod cache;
mod concurrency;
mod gcra;
mod rate_limit;
mod timeout;

pub use audit::{Audit, AuditRecord};
pub use cache::Cache;
pub use concurrency::ConcurrencyLimit;
pub use rate_limit::{RateLimit, RateLimitKey};
pub use timeout::Timeout;
