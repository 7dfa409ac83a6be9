//! A REST route's success response: the bare data or the envelope under the route's status,
//! raw bytes for a `Binary` output, a body in the content type an HTTP envelope declared, and
//! `Location` filled from the data.

use super::RestRoute;
use crate::http_server::handlers::json_response;
use crate::http_server::state::error_response;
use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};
use opkit::middleware::Reply;
use opkit::{CallError, ResponseEnvelope};
use serde_json::Value;

impl RestRoute {
    /// The response of the route's success `reply`. An `#[operation]` fn's data, on a route
    /// that reads nothing of it (no `Location` to fill, no raw bytes), is written once from its
    /// own type into the body, the bare data or the envelope; any other goes through its
    /// envelope ([`envelope_response`](Self::envelope_response)). An error is the reply's (an
    /// output that would not serialize).
    pub(super) fn response(&self, reply: Reply) -> Result<Response, CallError> {
        if self.route.location.is_none()
            && self.raw_output.is_none()
            && self.status != StatusCode::NO_CONTENT
            && !self.unit_output
            && reply.is_local_data()
        {
            let json = if self.route.envelope {
                reply.to_json_bytes()?
            } else {
                reply.data_json_bytes()?
            };
            let mut response = json_response(json);
            *response.status_mut() = self.status;
            return Ok(response);
        }
        Ok(self.envelope_response(reply.into_envelope()?))
    }

    /// The body of the route's success `envelope`: the bare data or the envelope, the route's
    /// status, `Location` filled from the data's fields.
    fn envelope_response(&self, envelope: ResponseEnvelope) -> Response {
        let location = self
            .route
            .location
            .as_deref()
            .and_then(|template| fill_location(template, &envelope.data));
        let mut response = if self.status == StatusCode::NO_CONTENT || self.unit_output {
            self.status.into_response()
        } else if let Some(content_type) = &self.raw_output {
            match raw_bytes(&envelope.data) {
                Some(bytes) => (
                    self.status,
                    [(header::CONTENT_TYPE, content_type.clone())],
                    bytes,
                )
                    .into_response(),
                None => error_response(&CallError::execution(format!(
                    "the output of `{}` is not base64 bytes",
                    self.id
                ))),
            }
        } else if self.route.envelope {
            (self.status, axum::Json(envelope)).into_response()
        } else if let Some((content_type, body)) = declared_body(&envelope) {
            (self.status, [(header::CONTENT_TYPE, content_type)], body).into_response()
        } else {
            (self.status, axum::Json(envelope.data)).into_response()
        };
        if let Some(value) = location.and_then(|text| HeaderValue::from_str(&text).ok()) {
            response.headers_mut().insert(header::LOCATION, value);
        }
        response
    }
}

/// The body of data an operation returned in an HTTP envelope (`http_envelope`, or an
/// imported API's reply) with its own content type: text under a type that is not JSON (a
/// `text/plain` string is sent as it is, not as a JSON string), JSON under its JSON type
/// (`application/problem+json`). `None` for other envelopes, which go out as JSON.
fn declared_body(envelope: &ResponseEnvelope) -> Option<(HeaderValue, Vec<u8>)> {
    let opkit::envelope::ResponseMeta::Http(http) = &envelope.meta else {
        return None;
    };
    let essence = http.content_type.split(';').next().unwrap_or_default();
    if essence.trim().is_empty() {
        return None;
    }
    let content_type = HeaderValue::from_str(&http.content_type).ok()?;
    let json = crate::http_server::request_body::is_json_media(&http.content_type);
    match &envelope.data {
        Value::String(text) if !json => Some((content_type, text.clone().into_bytes())),
        data if json => Some((content_type, serde_json::to_vec(data).ok()?)),
        _ => None,
    }
}

/// The bytes a `Binary` output's data holds (a base64 string).
fn raw_bytes(data: &Value) -> Option<Vec<u8>> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD
        .decode(data.as_str()?)
        .ok()
}

/// What a path segment escapes: everything but the unreserved characters (RFC 3986).
const PATH_SEGMENT: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// `template` with each `{name}` replaced by the field `name` of `data` (a string or a
/// number); `None` when one is missing.
fn fill_location(template: &str, data: &Value) -> Option<String> {
    let mut out = String::new();
    for (index, segment) in template.split('/').enumerate() {
        if index > 0 {
            out.push('/');
        }
        match segment
            .strip_prefix('{')
            .and_then(|rest| rest.strip_suffix('}'))
        {
            Some(name) => match data.get(name)? {
                Value::String(text) => {
                    out.extend(percent_encoding::utf8_percent_encode(text, PATH_SEGMENT));
                }
                Value::Number(number) => out.push_str(&number.to_string()),
                _ => return None,
            },
            None => out.push_str(segment),
        }
    }
    Some(out)
}
