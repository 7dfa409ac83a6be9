//! The envelope factories: adapters and the pipeline build envelopes only through these.

use super::{HttpMeta, LocalMeta, McpMeta, ResponseEnvelope, ResponseMeta};
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
    ResponseEnvelope {
        data,
        meta: ResponseMeta::Http(HttpMeta {
            status_code,
            headers,
            content_type: content_type.into(),
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
