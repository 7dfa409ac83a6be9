//! The event stream of a subscription: one event per item, then `complete` or `error`, in
//! the encoding the client asked for (see the [module docs](super#subscriptions)).

use super::header_list;
use axum::response::sse::Event;
use futures::{Stream, StreamExt};
use http::{HeaderMap, HeaderValue, header};
use opkit::CallError;
use opkit::middleware::{Reply, ReplyStream};
use serde_json::json;
use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio_util::sync::DropGuard;

/// The `Content-Type` of a stream in the [`SseEncoding::Data`] encoding.
pub(crate) const DATA_CONTENT_TYPE: HeaderValue =
    HeaderValue::from_static("text/event-stream; opkit=data");

/// How each item of a subscription is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SseEncoding {
    /// The default: the item's whole `ResponseEnvelope` as the data, with an `id:`.
    Envelope,
    /// Asked for with `Accept: text/event-stream; opkit=data`: the item's data alone, no
    /// `id:` (the meta a client needs once is the `x-request-id` header and the `complete`
    /// event).
    Data,
}

impl SseEncoding {
    /// The encoding the request's `Accept` header asks for: [`Data`](Self::Data) when one
    /// of its media ranges is `text/event-stream` with the parameter `opkit=data`.
    pub(crate) fn requested(headers: &HeaderMap) -> Self {
        let asks_for_data = header_list::items(headers, header::ACCEPT).any(|range| {
            let (media, mut params) = header_list::with_params(range);
            media.eq_ignore_ascii_case("text/event-stream")
                && params.any(|(name, value)| {
                    name.eq_ignore_ascii_case("opkit") && value.trim_matches('"') == "data"
                })
        });
        if asks_for_data {
            Self::Data
        } else {
            Self::Envelope
        }
    }
}

/// The SSE events of a subscription: one per envelope, then `complete` or `error`, with a
/// keep-alive comment whenever the stream has been idle for a whole interval. Dropping it
/// drops the registry stream and cancels the context.
///
/// Written by hand rather than as `stream::unfold` under axum's `KeepAlive`: axum's keep-alive
/// resets its timer at every event (a clock read and a timer-wheel update, ~40 ns of an
/// item's ~300), where this one's timer rings once per interval and looks back: it sends a
/// comment when no event went out since it last rang, so an idle stream gets one between one
/// and two intervals after its last event, and a busy one touches no timer.
pub(crate) struct Events {
    /// `None` once the final event was sent.
    items: Option<ReplyStream>,
    encoding: SseEncoding,
    next_id: u64,
    request_id: String,
    keep_alive: KeepAlive,
    /// Cancels the handler's context when the response body is dropped (client gone).
    _guard: Option<DropGuard>,
}

/// The keep-alive timer of an event stream (see [`Events`]).
struct KeepAlive {
    interval: Duration,
    /// Rings one interval after it was last set (when the stream began, and when it rang).
    timer: Pin<Box<tokio::time::Sleep>>,
    /// An event went out since the timer was last set.
    sent: bool,
}

/// The shortest keep-alive interval: a zero one would send comments in a loop.
const MIN_INTERVAL: Duration = Duration::from_millis(1);
/// Where the timer is set when an interval reaches past what an instant holds.
const FAR: Duration = Duration::from_secs(60 * 60 * 24 * 365);

impl KeepAlive {
    fn new(interval: Duration) -> Self {
        let interval = interval.max(MIN_INTERVAL);
        Self {
            interval,
            timer: Box::pin(tokio::time::sleep(interval)),
            sent: false,
        }
    }

    /// `true` when the timer rang after a whole interval without an event; the timer is set
    /// again each time it rings (and polled, so it holds this task's waker).
    fn idle(&mut self, cx: &mut Context<'_>) -> bool {
        while self.timer.as_mut().poll(cx).is_ready() {
            let sent = std::mem::take(&mut self.sent);
            let now = tokio::time::Instant::now();
            let next = now.checked_add(self.interval).unwrap_or(now + FAR);
            self.timer.as_mut().reset(next);
            if !sent {
                return true;
            }
        }
        false
    }
}

fn json_event(name: Option<&'static str>, value: &impl serde::Serialize) -> Event {
    let event = Event::default();
    let event = match name {
        Some(name) => event.event(name),
        None => event,
    };
    match serde_json::to_string(value) {
        Ok(text) => event.data(text),
        Err(error) => Event::default()
            .event("error")
            .data(json!({"code": "EXECUTION_ERROR", "message": error.to_string()}).to_string()),
    }
}

/// An unnamed event whose data is `json` (JSON has no raw line breaks, so it is one `data:`
/// line).
fn bytes_event(json: Vec<u8>) -> Event {
    match String::from_utf8(json) {
        Ok(text) => Event::default().data(text),
        Err(_) => Event::default()
            .event("error")
            .data(r#"{"code":"EXECUTION_ERROR","message":"an item's JSON is not UTF-8"}"#),
    }
}

/// The SSE events of a subscription's `items` in `encoding`, keeping the connection alive
/// every `keep_alive` while idle (see [`Events`]).
pub(crate) fn events(
    items: ReplyStream,
    encoding: SseEncoding,
    guard: Option<DropGuard>,
    request_id: String,
    keep_alive: Duration,
) -> Events {
    Events {
        items: Some(items),
        encoding,
        next_id: 0,
        request_id,
        keep_alive: KeepAlive::new(keep_alive),
        _guard: guard,
    }
}

impl Events {
    /// The event of what the registry stream gave (the final one for its end or an error).
    fn event(&mut self, item: Option<Result<Reply, CallError>>) -> Event {
        match item {
            // The item's JSON as the reply writes it: an `#[operation]` fn's data serialized
            // once, into the event's bytes.
            Some(Ok(reply)) => match self.encoding {
                SseEncoding::Envelope => reply.to_json_bytes().map(|json| {
                    let event = bytes_event(json).id(itoa::Buffer::new().format(self.next_id));
                    self.next_id += 1;
                    event
                }),
                SseEncoding::Data => reply.data_json_bytes().map(bytes_event),
            }
            .unwrap_or_else(|error| {
                self.items = None;
                json_event(Some("error"), &error)
            }),
            Some(Err(error)) => {
                self.items = None;
                json_event(Some("error"), &error)
            }
            None => {
                self.items = None;
                json_event(Some("complete"), &json!({"requestId": self.request_id}))
            }
        }
    }
}

impl Stream for Events {
    type Item = Result<Event, Infallible>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        let Some(items) = this.items.as_mut() else {
            return Poll::Ready(None);
        };
        match items.poll_next_unpin(cx) {
            Poll::Ready(item) => {
                this.keep_alive.sent = true;
                Poll::Ready(Some(Ok(this.event(item))))
            }
            // `:` and a blank line: a comment, which clients skip.
            Poll::Pending if this.keep_alive.idle(cx) => {
                Poll::Ready(Some(Ok(Event::DEFAULT_KEEP_ALIVE)))
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::SseEncoding;
    use http::{HeaderMap, HeaderValue, header};

    fn accept(value: &'static str) -> SseEncoding {
        let mut headers = HeaderMap::new();
        headers.insert(header::ACCEPT, HeaderValue::from_static(value));
        SseEncoding::requested(&headers)
    }

    #[test]
    fn the_data_encoding_is_asked_for_with_a_media_type_parameter() {
        assert_eq!(accept("text/event-stream; opkit=data"), SseEncoding::Data);
        assert_eq!(
            accept("application/json, Text/Event-Stream;q=0.9; opkit=\"data\""),
            SseEncoding::Data
        );
        assert_eq!(accept("text/event-stream"), SseEncoding::Envelope);
        assert_eq!(
            accept("application/json; opkit=data"),
            SseEncoding::Envelope
        );
        assert_eq!(accept("*/*"), SseEncoding::Envelope);
        assert_eq!(
            SseEncoding::requested(&HeaderMap::new()),
            SseEncoding::Envelope
        );
    }
}
