//! The envelope factories: adapters and the pipeline build envelopes only through these.

use super::{
    HttpMeta, LocalMeta, McpMeta, OperationId, ResponseEnvelope, ResponseMeta, SseEventMeta,
};
use std::collections::BTreeMap;
use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch, now, from the precise wall clock.
///
/// What deadlines are measured with.
pub fn now_millis() -> u64 {
    // Seconds and sub-second millis separately: no 128-bit arithmetic on this hot path.
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| {
            epoch_millis(elapsed.as_secs(), elapsed.subsec_millis())
        })
}

/// Milliseconds since the Unix epoch, now, from the coarse wall clock: what envelopes are
/// stamped with.
///
/// On Linux this is `CLOCK_REALTIME_COARSE`, the time of the last kernel tick: at most one
/// tick (1 to 4 ms, by the kernel's `HZ`) behind [`now_millis`], and read without touching
/// the hardware clock (a few ns, where a precise read costs tens on a virtual machine). An
/// envelope's timestamp says when a result was wrapped, like an HTTP `Date`; durations are
/// measured by the call spans (`opkit::trace`). Elsewhere it is [`now_millis`].
pub fn now_millis_coarse() -> u64 {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        let now = rustix::time::clock_gettime(rustix::time::ClockId::RealtimeCoarse);
        let secs = u64::try_from(now.tv_sec).unwrap_or(0);
        let millis = u32::try_from(now.tv_nsec / 1_000_000).unwrap_or(0);
        epoch_millis(secs, millis)
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    {
        now_millis()
    }
}

fn epoch_millis(secs: u64, millis: u32) -> u64 {
    secs.saturating_mul(1000).saturating_add(u64::from(millis))
}

/// Wraps locally produced data, stamping it with the operation id and the current time
/// ([`now_millis_coarse`]).
///
/// The id is shared, not copied, when given as an `Arc<str>` (the registry's own).
pub fn local_envelope<T>(data: T, operation_id: impl Into<OperationId>) -> ResponseEnvelope<T> {
    ResponseEnvelope {
        data,
        meta: ResponseMeta::Local(LocalMeta {
            operation_id: operation_id.into(),
            timestamp: now_millis_coarse(),
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
