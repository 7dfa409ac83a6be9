//! The event stream of a subscription: one event per item, then `complete` or `error`, in
//! the encoding the client asked for (see the [module docs](super#subscriptions)).

use super::header_list;
use bytes::Bytes;
use futures::StreamExt;
use http::{HeaderMap, HeaderValue, header};
use hyper::body::Frame;
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

/// The SSE events of a subscription, as the response's body: one per envelope, then
/// `complete` or `error`, with a keep-alive comment whenever the stream has been idle for a
/// whole interval. Dropping it drops the registry stream and cancels the context.
///
/// Written by hand rather than as `stream::unfold` under axum's `Sse` and `KeepAlive`:
/// - each event is one buffer the item's JSON is written into (the envelope, or an
///   `#[operation]` fn's data serialized from its own type), framed around it, where an axum
///   `Event` copies JSON made in a buffer of its own into its own and checks it again for line
///   breaks and UTF-8 (~45 ns of an item's ~370 in the compact encoding);
/// - axum's keep-alive resets its timer at every event (a clock read and a timer-wheel
///   update, ~40 ns of an item's ~300), where this one's timer rings once per interval and
///   looks back: it sends a comment when no event went out since it last rang, so an idle
///   stream gets one between one and two intervals after its last event, and a busy one
///   touches no timer.
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
/// A comment (`:` and a blank line), which clients skip: what keeps an idle stream alive.
const KEEP_ALIVE: &[u8] = b":\n\n";

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

/// The bytes of one event: `event: <name>` when it has one, the JSON `write` appends as its
/// data, `id: <id>` when it has one, and the blank line that ends it; `write`'s error (nothing
/// kept) when it failed.
///
/// JSON as serde writes it has no line break (a string's are escaped); one a writer left in
/// its whitespace would end the `data:` line early and let what follows be read as fields of
/// the event, so the data is then split into `data:` lines at each break, which a client
/// joins with line feeds: the same JSON, its whitespace changed.
fn frame<E>(
    name: Option<&str>,
    id: Option<u64>,
    write: impl FnOnce(&mut Vec<u8>) -> Result<(), E>,
) -> Result<Bytes, E> {
    let mut out = Vec::with_capacity(128);
    if let Some(name) = name {
        out.extend_from_slice(b"event: ");
        out.extend_from_slice(name.as_bytes());
        out.push(b'\n');
    }
    out.extend_from_slice(b"data: ");
    let data = out.len();
    write(&mut out)?;
    if memchr::memchr2(b'\n', b'\r', &out[data..]).is_some() {
        let written = out.split_off(data);
        for (index, line) in written
            .split(|byte| matches!(byte, b'\n' | b'\r'))
            .enumerate()
        {
            if index > 0 {
                out.extend_from_slice(b"\ndata: ");
            }
            out.extend_from_slice(line);
        }
    }
    out.push(b'\n');
    if let Some(id) = id {
        out.extend_from_slice(b"id: ");
        out.extend_from_slice(itoa::Buffer::new().format(id).as_bytes());
        out.push(b'\n');
    }
    out.push(b'\n');
    Ok(Bytes::from(out))
}

/// The event `name` whose data is `value`'s JSON (an `error` event when it does not
/// serialize).
fn json_event(name: &str, value: &impl serde::Serialize) -> Bytes {
    frame(Some(name), None, |out| serde_json::to_writer(out, value)).unwrap_or_else(|error| {
        let error = json!({"code": "EXECUTION_ERROR", "message": error.to_string()});
        frame(Some("error"), None, |out| {
            serde_json::to_writer(out, &error)
        })
        .unwrap_or_else(|_| Bytes::from_static(b"event: error\ndata: {}\n\n"))
    })
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
    fn event(&mut self, item: Option<Result<Reply, CallError>>) -> Bytes {
        let event = match item {
            // The item's JSON as the reply writes it, into the event's own bytes: an
            // `#[operation]` fn's data serialized once, from its own type.
            Some(Ok(reply)) => match self.encoding {
                SseEncoding::Envelope => {
                    let id = self.next_id;
                    self.next_id += 1;
                    frame(None, Some(id), |out| reply.write_json(out))
                }
                SseEncoding::Data => frame(None, None, |out| reply.write_data_json(out)),
            },
            Some(Err(error)) => Err(error),
            None => {
                self.items = None;
                return json_event("complete", &json!({"requestId": self.request_id}));
            }
        };
        event.unwrap_or_else(|error| {
            self.items = None;
            json_event("error", &error)
        })
    }
}

impl hyper::body::Body for Events {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = self.get_mut();
        let Some(items) = this.items.as_mut() else {
            return Poll::Ready(None);
        };
        match items.poll_next_unpin(cx) {
            Poll::Ready(item) => {
                this.keep_alive.sent = true;
                Poll::Ready(Some(Ok(Frame::data(this.event(item)))))
            }
            Poll::Pending if this.keep_alive.idle(cx) => {
                Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(KEEP_ALIVE)))))
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{SseEncoding, events, frame};
    use http::{HeaderMap, HeaderValue, header};
    use opkit::CallError;
    use opkit::envelope::local_envelope;
    use opkit::middleware::Reply;
    use serde_json::json;
    use std::time::Duration;

    fn written(name: Option<&str>, id: Option<u64>, json: &str) -> String {
        let bytes = frame(name, id, |out| {
            out.extend_from_slice(json.as_bytes());
            Ok::<(), ()>(())
        })
        .unwrap();
        String::from_utf8(bytes.to_vec()).unwrap()
    }

    #[test]
    fn an_event_is_its_name_its_data_line_and_its_id() {
        assert_eq!(
            written(None, Some(7), r#"{"a":1}"#),
            "data: {\"a\":1}\nid: 7\n\n"
        );
        assert_eq!(
            written(Some("complete"), None, r#"{"requestId":"r"}"#),
            "event: complete\ndata: {\"requestId\":\"r\"}\n\n"
        );
        assert!(frame(None, Some(1), |_| Err("no JSON")).is_err());
    }

    #[test]
    fn line_breaks_in_the_data_start_data_lines_not_fields() {
        // Each break (LF, CR, or the two) starts a `data:` line of its own: nothing after
        // one can be read as a field of the event (an `event:` or an `id:` of the data's).
        assert_eq!(
            written(None, Some(0), "{\n\"a\":\r\n1}\rid: 9"),
            "data: {\ndata: \"a\":\ndata: \ndata: 1}\ndata: id: 9\nid: 0\n\n"
        );
    }

    #[tokio::test]
    async fn a_stream_is_its_items_then_complete_or_the_error_that_ended_it() {
        let items = |last: Result<Reply, CallError>| -> opkit::middleware::ReplyStream {
            Box::pin(futures::stream::iter([
                Ok(Reply::new(local_envelope(json!(1), "a.b"))),
                last,
            ]))
        };
        let body = |items, encoding| async move {
            let events = events(
                items,
                encoding,
                None,
                "r-1".to_owned(),
                Duration::from_secs(60),
            );
            let bytes = axum::body::to_bytes(axum::body::Body::new(events), usize::MAX)
                .await
                .unwrap();
            String::from_utf8(bytes.to_vec()).unwrap()
        };
        let envelope = body(
            items(Ok(Reply::new(local_envelope(json!("two"), "a.b")))),
            SseEncoding::Envelope,
        )
        .await;
        let events: Vec<&str> = envelope.split_terminator("\n\n").collect();
        assert_eq!(events.len(), 3, "{envelope}");
        assert!(events[0].starts_with(r#"data: {"data":1,"meta":{"source":"local""#));
        assert!(events[0].ends_with("}\nid: 0"), "{envelope}");
        assert!(events[1].ends_with("}\nid: 1"), "{envelope}");
        assert_eq!(
            events[2],
            r#"event: complete
data: {"requestId":"r-1"}"#
        );
        let data = body(items(Err(CallError::not_found("gone"))), SseEncoding::Data).await;
        let events: Vec<&str> = data.split_terminator("\n\n").collect();
        assert_eq!(events[0], "data: 1");
        assert_eq!(
            events[1],
            r#"event: error
data: {"code":"EXECUTION_ERROR","message":"gone","kind":"NOT_FOUND"}"#
        );
        assert_eq!(events.len(), 2, "nothing after the error: {data}");
    }

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
