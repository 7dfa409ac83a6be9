//! Response envelopes: the one shape every result comes back in.
//!
//! A [`ResponseEnvelope`] is `{ data, meta }`, where `meta` says which kind of source produced
//! the data (`"source": "local" | "http" | "mcp"`). The wire JSON is fixed (camelCase, `_meta`,
//! absent optional fields omitted) so envelopes are interchangeable with other
//! implementations of the same protocol.
//!
//! ```
//! use opkit::envelope::{is_response_envelope, local_envelope, unwrap, unwrap_value};
//! let envelope = local_envelope(serde_json::json!({"sum": 3}), "math.add");
//! let wire = serde_json::to_value(&envelope).unwrap();
//! assert!(is_response_envelope(&wire));
//! assert_eq!(wire["meta"]["source"], "local");
//! assert_eq!(unwrap_value(wire), serde_json::json!({"sum": 3}));
//! assert_eq!(unwrap(envelope), serde_json::json!({"sum": 3}));
//! ```

mod content;
mod detect;
mod factories;
mod meta;
mod operation_id;
mod schemas;

pub use content::{Annotations, EmbeddedResource, McpContentBlock, PromptMessage, Role};
pub use detect::{EnvelopeError, is_response_envelope, unwrap, unwrap_value};
pub use factories::{
    http_envelope, http_event_envelope, local_envelope, mcp_envelope, now_millis, now_millis_coarse,
};
pub use meta::{HttpMeta, LocalMeta, McpMeta, ResponseMeta, SseEventMeta};
pub(crate) use meta::{escape_marks, is_escaped, write_json_str};
pub use operation_id::OperationId;
pub use schemas::{
    envelope_schema, http_meta_schema, local_meta_schema, mcp_meta_schema, response_meta_schema,
};

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The result of any call: the data and where it came from.
///
/// `T` defaults to [`serde_json::Value`]; typed calls return `ResponseEnvelope<Output>`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ResponseEnvelope<T = Value> {
    /// The result itself.
    pub data: T,
    /// Where the result came from, with source-specific details.
    pub meta: ResponseMeta,
}

impl<T> ResponseEnvelope<T> {
    /// Builds an envelope from its parts.
    pub fn new(data: T, meta: ResponseMeta) -> Self {
        Self { data, meta }
    }

    /// Takes the data out, dropping the meta.
    pub fn into_data(self) -> T {
        self.data
    }

    /// Maps the data, keeping the meta.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> ResponseEnvelope<U> {
        ResponseEnvelope {
            data: f(self.data),
            meta: self.meta,
        }
    }

    /// `true` when the source reported the result as an error (MCP `isError: true`).
    pub fn is_error(&self) -> bool {
        matches!(&self.meta, ResponseMeta::Mcp(mcp) if mcp.is_error)
    }
}

impl<T: Serialize> ResponseEnvelope<T> {
    /// Turns a typed envelope into a `Value` envelope.
    pub fn into_value_envelope(self) -> Result<ResponseEnvelope, serde_json::Error> {
        Ok(ResponseEnvelope {
            data: serde_json::to_value(self.data)?,
            meta: self.meta,
        })
    }
}

impl ResponseEnvelope {
    /// Reads an envelope from its wire JSON, taking the value apart without copying `data`.
    ///
    /// Fails with a message naming what is missing or malformed.
    pub fn from_value(value: Value) -> Result<Self, EnvelopeError> {
        detect::split_envelope(value)
    }

    /// Deserializes the data into a typed envelope.
    pub fn into_typed<T: serde::de::DeserializeOwned>(
        self,
    ) -> Result<ResponseEnvelope<T>, serde_json::Error> {
        Ok(ResponseEnvelope {
            data: serde_json::from_value(self.data)?,
            meta: self.meta,
        })
    }
}
