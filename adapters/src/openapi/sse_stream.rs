//! The subscription stream of an SSE response: one envelope per event, and resumption of a
//! dropped connection the way an `EventSource` resumes it.
//!
//! Each event becomes an [`http_event_envelope`]: the data (read as the item schema says,
//! then normalized, see [`super::normalize`]), the response's status and headers, and the
//! event's `sse` meta: its type, id and retry. A stream served by opkit ends at its
//! `complete` event and fails with the `CallError` of its `error` event (see
//! [`super::served_replies`]).
//!
//! # Resumption
//!
//! When the connection drops with an error before the stream ends (a reset, a body cut in
//! the middle of its chunked encoding), the request is sent again with `Last-Event-ID` set
//! to the last event id seen (when there is one), after the delay the stream set with
//! `retry` (or [`SseReconnect::default_delay`] when it set none; at most
//! [`SseReconnect::max_delay`]). The partial event is discarded; the last event id and the
//! retry delay carry over. A reconnection answered with a non-2xx status or another content
//! type ends the stream with that error; one that fails to connect counts as an attempt. At
//! most [`SseReconnect::max_attempts`] attempts follow each other without an event in
//! between; then the stream ends with the last error. A stream that ends cleanly is over:
//! it is not reopened. Resumption is only done for idempotent methods (GET, HEAD, PUT,
//! DELETE, OPTIONS, TRACE, QUERY): sending a POST again could repeat its effect.

use super::mapping::OperationPlan;
use super::options::SseReconnect;
use super::served_replies as served;
use super::sse::{EventData, SseError, SseEvent, SseParser, event_data};
use bytes::Bytes;
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use futures::{Stream, StreamExt};
use opkit::CallError;
use opkit::envelope::{ResponseEnvelope, SseEventMeta, http_event_envelope};
use serde_json::json;
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

/// Sends the request again with this `Last-Event-ID`: the checked SSE response.
pub(crate) type Reopen = Arc<
    dyn Fn(Option<String>) -> BoxFuture<'static, Result<reqwest::Response, CallError>>
        + Send
        + Sync,
>;

/// How a dropped stream is resumed.
pub(crate) struct Resume {
    pub reopen: Reopen,
    pub policy: SseReconnect,
}

struct State {
    body: BoxStream<'static, reqwest::Result<Bytes>>,
    parser: SseParser,
    queue: VecDeque<Result<SseEvent, SseError>>,
    status: u16,
    headers: BTreeMap<String, String>,
    done: bool,
    /// Reconnection attempts since the last event.
    attempts: u32,
}

/// What one queued event makes of the stream.
enum Step {
    /// Nothing: an event without data to read.
    Skip,
    /// The stream ends (a served stream's `complete`).
    End,
    /// The stream's next item.
    Yield(Result<ResponseEnvelope, CallError>),
}

impl State {
    fn open(&mut self, response: reqwest::Response) {
        self.status = response.status().as_u16();
        self.headers = super::response::headers_snapshot(response.headers());
        self.body = response.bytes_stream().boxed();
    }

    /// Stops reading: drops what is queued and closes the connection.
    fn stop(&mut self) {
        self.done = true;
        self.queue.clear();
        self.body = futures::stream::empty().boxed();
    }

    /// One event the parser queued (or the error it queued instead), as the stream's step.
    fn step(
        &mut self,
        event: Result<SseEvent, SseError>,
        mode: EventData,
        plan: &OperationPlan,
    ) -> Step {
        let label = plan.label.as_str();
        let event = match event {
            Ok(event) => event,
            Err(error) => {
                self.stop();
                return Step::Yield(Err(too_large(label, &error)));
            }
        };
        self.attempts = 0;
        let Some(mut data) = event_data(&event, mode, label) else {
            return Step::Skip;
        };
        if plan.served {
            match served::event(&event.event, data, label) {
                served::Event::Item(item) => data = item,
                served::Event::Complete => return Step::End,
                served::Event::Error(error) => {
                    self.stop();
                    return Step::Yield(Err(error));
                }
            }
        }
        let data = plan.normalizer.apply(data);
        let meta = SseEventMeta {
            event: event.event,
            id: (!event.id.is_empty()).then_some(event.id),
            retry: event.retry,
        };
        let envelope = http_event_envelope(
            data,
            self.status,
            self.headers.clone(),
            "text/event-stream",
            meta,
        );
        Step::Yield(Ok(envelope))
    }
}

/// The subscription stream of an SSE response: one `http_event_envelope` (as JSON) per event.
///
/// The response is owned by the stream: dropping the stream closes the connection. An event
/// larger than `max_event_bytes` ends the stream with [`too_large`] and closes the connection.
pub(crate) fn envelopes(
    response: reqwest::Response,
    mode: EventData,
    plan: Arc<OperationPlan>,
    max_event_bytes: usize,
    resume: Option<Resume>,
) -> impl Stream<Item = Result<ResponseEnvelope, CallError>> + Send + 'static {
    let mut state = State {
        body: futures::stream::empty().boxed(),
        parser: SseParser::with_max_event_bytes(max_event_bytes),
        queue: VecDeque::new(),
        status: 0,
        headers: BTreeMap::new(),
        done: false,
        attempts: 0,
    };
    state.open(response);
    let resume = resume.map(Arc::new);
    futures::stream::unfold(state, move |mut state| {
        let plan = plan.clone();
        let resume = resume.clone();
        async move {
            let label = plan.label.as_str();
            loop {
                while let Some(event) = state.queue.pop_front() {
                    match state.step(event, mode, &plan) {
                        Step::Skip => {}
                        Step::End => return None,
                        Step::Yield(item) => return Some((item, state)),
                    }
                }
                if state.done {
                    return None;
                }
                match state.body.next().await {
                    Some(Ok(chunk)) => {
                        let events = state.parser.feed(&chunk);
                        state.queue.extend(events);
                    }
                    Some(Err(error)) => {
                        let dropped = super::response::transport_error(label, &error);
                        let resumed = match resume.as_deref() {
                            Some(resume) => reconnect(&mut state, resume, label, dropped).await,
                            None => Err(dropped),
                        };
                        if let Err(error) = resumed {
                            state.done = true;
                            state.parser.finish();
                            return Some((Err(error), state));
                        }
                    }
                    None => {
                        state.done = true;
                        state.parser.finish();
                    }
                }
            }
        }
    })
}

/// Reopens a dropped stream: `Ok` once a new connection is reading, else the error that
/// ends the stream.
async fn reconnect(
    state: &mut State,
    resume: &Resume,
    label: &str,
    mut last_error: CallError,
) -> Result<(), CallError> {
    let policy = resume.policy;
    loop {
        if state.attempts >= policy.max_attempts {
            return Err(last_error);
        }
        state.attempts += 1;
        let delay = state
            .parser
            .retry()
            .map_or(policy.default_delay, Duration::from_millis)
            .min(policy.max_delay);
        let last_id = state.parser.last_event_id().to_owned();
        tracing::warn!(
            operation = label,
            error = %last_error,
            attempt = state.attempts,
            max_attempts = policy.max_attempts,
            last_event_id = %last_id,
            delay_ms = delay.as_millis() as u64,
            "the SSE connection dropped; reconnecting"
        );
        tokio::time::sleep(delay).await;
        match (resume.reopen)((!last_id.is_empty()).then_some(last_id)).await {
            Ok(response) => {
                // The partial event is discarded; the id and retry carry over.
                state.parser = state.parser.reconnected();
                state.open(response);
                return Ok(());
            }
            // A server that answers, but not with an event stream, ends it for good.
            Err(error)
                if error.code != opkit::ErrorCode::TransportError
                    && error.code != opkit::ErrorCode::Timeout =>
            {
                return Err(error);
            }
            Err(error) => last_error = error,
        }
    }
}

/// `EXECUTION_ERROR` for an event past the limit: the stream ends with it.
fn too_large(label: &str, error: &SseError) -> CallError {
    let SseError::EventTooLarge { limit } = error;
    CallError::execution(format!(
        "{label} sent {error}; the stream was closed (raise OpenApiOptions::max_sse_event_bytes to accept larger events)"
    ))
    .with_details(json!({"limit": "maxSseEventBytes", "max": limit}))
}
