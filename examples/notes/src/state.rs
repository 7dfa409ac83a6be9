//! The application's other state values: which replica this process is, and a per-caller
//! rate limit.

use opkit::CallError;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// This process, as the notes it stores record it.
#[derive(Debug, Clone)]
pub struct Replica {
    /// A name for the process (`notes-a`, say).
    pub name: String,
}

/// Admits one call per caller per window: what `notes.export` answers `RATE_LIMITED` with.
#[derive(Debug, Clone)]
pub struct RateLimit {
    window: Duration,
    last: Arc<Mutex<HashMap<String, Instant>>>,
}

impl RateLimit {
    /// One call per `window` for each caller.
    pub fn new(window: Duration) -> Self {
        Self {
            window,
            last: Arc::default(),
        }
    }

    /// Records a call by `caller`, or refuses it when its last one is too recent.
    pub fn admit(&self, caller: &str) -> Result<(), CallError> {
        let mut last = self
            .last
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let now = Instant::now();
        if let Some(previous) = last.get(caller) {
            let waited = now.duration_since(*previous);
            if waited < self.window {
                let retry = (self.window - waited).as_secs().max(1);
                return Err(CallError::rate_limited(format!(
                    "one export per {} s: retry in {retry} s",
                    self.window.as_secs()
                ))
                .with_details(serde_json::json!({"retryAfterSeconds": retry})));
            }
        }
        last.insert(caller.to_owned(), now);
        Ok(())
    }
}
