//! The event stream of a subscription: one event per item, then `complete` or `error`, in
//! the encoding the client asked for (see the [module docs](super#subscriptions)).

use super::header_list;
use axum::response::sse::Event;
use futures::{Stream, StreamExt};
use http::{HeaderMap, HeaderValue, header};
use opkit::middleware::ReplyStream;
use serde_json::json;
use std::convert::Infallible;
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

/// Where the event stream of a subscription is.
struct EventState {
    /// `None` once the final event was sent.
    items: Option<ReplyStream>,
    encoding: SseEncoding,
    next_id: u64,
    request_id: String,
    /// Cancels the handler's context when the response body is dropped (client gone).
    _guard: Option<DropGuard>,
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

/// The SSE events of a subscription: one per envelope, then `complete` or `error`.
/// Dropping the returned stream drops the registry stream and cancels the context.
pub(crate) fn events(
    items: ReplyStream,
    encoding: SseEncoding,
    guard: Option<DropGuard>,
    request_id: String,
) -> impl Stream<Item = Result<Event, Infallible>> + Send + 'static {
    let state = EventState {
        items: Some(items),
        encoding,
        next_id: 0,
        request_id,
        _guard: guard,
    };
    futures::stream::unfold(state, |mut state| async move {
        let items = state.items.as_mut()?;
        let event = match items.next().await {
            // The item's JSON as the reply writes it: an `#[operation]` fn's data serialized
            // once, into the event's bytes.
            Some(Ok(reply)) => match state.encoding {
                SseEncoding::Envelope => reply.to_json_bytes().map(|json| {
                    let event = bytes_event(json).id(state.next_id.to_string());
                    state.next_id += 1;
                    event
                }),
                SseEncoding::Data => reply.data_json_bytes().map(bytes_event),
            }
            .unwrap_or_else(|error| {
                state.items = None;
                json_event(Some("error"), &error)
            }),
            Some(Err(error)) => {
                state.items = None;
                json_event(Some("error"), &error)
            }
            None => {
                state.items = None;
                json_event(Some("complete"), &json!({"requestId": state.request_id}))
            }
        };
        Some((Ok(event), state))
    })
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
