//! A REST request's input: the path's variables, then the query string or the body (JSON,
//! raw bytes for a `Binary` field, a stream for a `ByteStream` field, or a multipart form).

use super::RestRoute;
use crate::http_server::byte_bodies;
use crate::http_server::request_body::{
    BodyLimit, Rejection, read_bytes, read_json_body, refuse_declared_length,
};
use crate::http_server::state::ServerState;
use http::Method;
use opkit::binary::HandOff;
use opkit::{CallError, ErrorCode};
use serde_json::Value;

impl RestRoute {
    /// The input from the path's variables and the query string or the body, and the
    /// hand-off of a body streamed to a `ByteStream` field (kept until the call ends).
    pub(super) async fn input(
        &self,
        shared: &ServerState,
        params: Vec<(String, String)>,
        parts: &http::request::Parts,
        body: axum::body::Body,
    ) -> Result<(Value, Option<HandOff>), Rejection> {
        let mut hand_off = None;
        let path_values = self.shape.decode(params)?;
        let mut input = if matches!(self.method, Method::GET | Method::DELETE) {
            let pairs: Vec<(String, String)> =
                match axum::extract::Query::<Vec<(String, String)>>::try_from_uri(&parts.uri) {
                    Ok(axum::extract::Query(pairs)) => pairs,
                    Err(error) => {
                        return Err(CallError::new(
                            ErrorCode::ValidationError,
                            format!("the query string cannot be decoded: {error}"),
                        )
                        .into());
                    }
                };
            let pairs = pairs
                .into_iter()
                .filter(|(name, _)| !self.variables.contains(name))
                .collect();
            self.shape.decode(pairs)?
        } else {
            let limit = match self.route.body_limit {
                Some(bytes) => BodyLimit::route(bytes),
                None => BodyLimit::server(shared.body_limit),
            };
            let multipart = parts
                .headers
                .get(http::header::CONTENT_TYPE)
                .and_then(|value| value.to_str().ok())
                .and_then(|text| multer::parse_boundary(text).ok());
            if let Some(boundary) = multipart {
                // Boxed: its future (~2.6 KB) inline would be held by every request's.
                return Box::pin(self.multipart_input(shared, boundary, body, limit, path_values))
                    .await
                    .map(|input| (input, None));
            }
            match &self.raw_input {
                Some(field) if self.streamed_input => {
                    refuse_declared_length(&parts.headers, limit)?;
                    let stream = byte_bodies::request_stream(body, limit, shared.request_timeout);
                    let parked = stream.hand_off();
                    let input = serde_json::json!({ field.as_str(): parked.token() });
                    hand_off = Some(parked);
                    input
                }
                Some(field) => {
                    use base64::Engine;
                    let bytes =
                        read_bytes(&parts.headers, body, limit, shared.request_timeout).await?;
                    let encoded = base64::engine::general_purpose::STANDARD.encode(bytes);
                    serde_json::json!({ field.as_str(): encoded })
                }
                None => read_json_body(&parts.headers, body, limit, shared.request_timeout).await?,
            }
        };
        if let (Value::Object(fields), Value::Object(from_path)) = (&mut input, path_values) {
            fields.extend(from_path);
        } else if !self.variables.is_empty() {
            return Err(CallError::new(
                ErrorCode::ValidationError,
                "the request body must be a JSON object: the path's variables are fields of it",
            )
            .into());
        }
        Ok((input, hand_off))
    }
}

impl RestRoute {
    /// The input from a `multipart/form-data` body: a part whose field is `Binary` gives its
    /// bytes (a file), any other part its text, read by the field's schema like a query
    /// value; the path's variables win.
    async fn multipart_input(
        &self,
        shared: &ServerState,
        boundary: String,
        body: axum::body::Body,
        limit: BodyLimit,
        path_values: Value,
    ) -> Result<Value, Rejection> {
        use base64::Engine;
        let constraints = multer::Constraints::new()
            .size_limit(multer::SizeLimit::new().whole_stream(limit.bytes as u64));
        let mut multipart =
            multer::Multipart::with_constraints(body.into_data_stream(), boundary, constraints);
        let unreadable = |error: multer::Error| -> Rejection {
            let too_large = matches!(error, multer::Error::StreamSizeExceeded { .. });
            if too_large {
                crate::http_server::request_body::too_large(limit)
            } else {
                Rejection::from(CallError::new(
                    ErrorCode::ValidationError,
                    format!("the multipart body cannot be read: {error}"),
                ))
            }
        };
        let mut binary = serde_json::Map::new();
        let mut texts = Vec::new();
        let reading = async {
            while let Some(field) = multipart.next_field().await.map_err(unreadable)? {
                let Some(name) = field.name().map(str::to_owned) else {
                    continue;
                };
                let is_binary = self.shape.params.iter().any(|param| {
                    param.name == name && opkit::binary::is_binary_schema(&param.schema)
                });
                if is_binary {
                    let bytes = field.bytes().await.map_err(unreadable)?;
                    binary.insert(
                        name,
                        Value::String(base64::engine::general_purpose::STANDARD.encode(bytes)),
                    );
                } else {
                    texts.push((name, field.text().await.map_err(unreadable)?));
                }
            }
            Ok::<(), Rejection>(())
        };
        match tokio::time::timeout(shared.request_timeout, reading).await {
            Ok(result) => result?,
            Err(_) => return Err(Rejection::body_timeout()),
        }
        let mut input = self.shape.decode(texts)?;
        if let (Value::Object(fields), Value::Object(from_path)) = (&mut input, path_values) {
            fields.extend(binary);
            fields.extend(from_path);
        }
        Ok(input)
    }
}
