//! The envelope factories: adapters and the pipeline build envelopes only through these.

use super::{HttpMeta, LocalMeta, McpMeta, ResponseEnvelope, ResponseMeta, SseEventMeta};
use std::collections::BTreeMap;
use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch, now.
pub fn now_millis() -> u64 {
    // Seconds and sub-second millis separately: no 128-bit arithmetic on this hot path.
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| {
            elapsed
                .as_secs()
                .saturating_mul(1000)
                .saturating_add(u64::from(elapsed.subsec_millis()))
        })
}

/// Wraps locally produced data, stamping it with the operation id and the current time.
pub fn local_envelope<T>(data: T, operation_id: impl Into<String>) -> ResponseEnvelope<T> {
    ResponseEnvelope {
        data,
        meta: ResponseMeta::Local(LocalMeta {
            operation_id: operation_id.into(),
            timestamp: now_millis(),
        }),
    }
}

/// Wraps the data of an HTTP response.
///
/// `headers` should already hold lower-cased names with multiple values joined by `", "`.
pub fn http_envelope<T>(
    data: T,
    status_code: u16,
    headers: BTreeMap<String, String>,
    content_type: impl Into<String>,
) -> ResponseEnvelope<T> {
    with_http_meta(data, status_code, headers, content_type.into(), None)
}

/// Wraps the data of one Server-Sent Events event of an HTTP response: an
/// [`http_envelope`] whose meta also carries the event's type, id and retry.
///
/// The `sse` part is optional on the wire: an envelope without it is still an HTTP envelope,
/// and a peer that does not know it ignores it.
///
/// ```
/// use opkit::envelope::{SseEventMeta, http_event_envelope, is_response_envelope};
/// use serde_json::json;
/// let sse = SseEventMeta { event: "tick".into(), id: Some("7".into()), retry: Some(1000) };
/// let envelope = http_event_envelope(json!({"n": 1}), 200, Default::default(), "text/event-stream", sse);
/// let wire = serde_json::to_value(&envelope).unwrap();
/// assert_eq!(wire["meta"]["sse"], json!({"event": "tick", "id": "7", "retry": 1000}));
/// assert!(is_response_envelope(&wire));
/// // Without it, the wire is the plain HTTP meta.
/// let plain = json!({"data": 1, "meta": {"source": "http", "statusCode": 200, "headers": {}, "contentType": ""}});
/// assert!(is_response_envelope(&plain));
/// ```
pub fn http_event_envelope<T>(
    data: T,
    status_code: u16,
    headers: BTreeMap<String, String>,
    content_type: impl Into<String>,
    sse: SseEventMeta,
) -> ResponseEnvelope<T> {
    with_http_meta(data, status_code, headers, content_type.into(), Some(sse))
}

fn with_http_meta<T>(
    data: T,
    status_code: u16,
    headers: BTreeMap<String, String>,
    content_type: String,
    sse: Option<SseEventMeta>,
) -> ResponseEnvelope<T> {
    ResponseEnvelope {
        data,
        meta: ResponseMeta::Http(HttpMeta {
            status_code,
            headers,
            content_type,
            sse,
        }),
    }
}

/// Wraps the data of an MCP tool result.
pub fn mcp_envelope<T>(data: T, meta: McpMeta) -> ResponseEnvelope<T> {
    ResponseEnvelope {
        data,
        meta: ResponseMeta::Mcp(meta),
    }
}
