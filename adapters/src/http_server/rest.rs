//! REST routes: an operation's [`HttpRoute`] (its `http(..)` edge options: method, path,
//! success status, body shape) served beside its RPC route, through the same front door.
//!
//! The input is assembled from the path variables (each a field of the input), then the
//! query string (`GET`, `DELETE`) or the JSON body (`POST`, `PUT`, `PATCH`); a path variable
//! wins over a body field of the same name. Path and query values are read by the input
//! schema like the RPC route's query string (`?limit=5` is the integer 5).

use super::byte_bodies;
use super::handlers::{FromUrl, Shape, serve_call};
use super::query::QueryShape;
use super::request_body::{
    BodyLimit, Rejection, read_bytes, read_json_body, refuse_declared_length,
};
use super::route::{HttpRoute, HttpSpec, template_variables};
use super::state::{ServerState, error_response};
use axum::Router;
use axum::extract::{Path, Request, State};
use axum::response::{IntoResponse, Response};
use http::{HeaderName, HeaderValue, Method, StatusCode, header};
use opkit::binary::HandOff;
use opkit::edge::EdgeOptionsError;
use opkit::{CallError, ErrorCode, OperationRegistry, OperationSpec, ResponseEnvelope};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;

/// Why the REST routes of a registry cannot be served: found when the router is built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RouteError {
    /// A path variable names no field of the operation's input.
    #[error(
        "operation `{id}`: the route {method} {path} has the path variable `{variable}`, which is not a field of its input (its fields: {fields})"
    )]
    UnknownVariable {
        /// The operation's id.
        id: String,
        /// The route's method.
        method: String,
        /// The route's path.
        path: String,
        /// The variable.
        variable: String,
        /// The input's fields, comma-separated.
        fields: String,
    },
    /// Two routes answer the same method and path.
    #[error(
        "operations `{first}` and `{second}` both route {method} {path}: give one another method or path"
    )]
    Collision {
        /// The route's method.
        method: String,
        /// The path, as the first operation wrote it.
        path: String,
        /// The operation routed first (by id).
        first: String,
        /// The other one.
        second: String,
    },
    /// An operation's `http(..)` options are not a route (an unknown option, a value of the
    /// wrong type).
    #[error(transparent)]
    Options(#[from] EdgeOptionsError),
    /// Routes at one path name its variables differently, or a route is malformed.
    #[error("operation `{id}`: the route {method} {path} cannot be served: {reason}")]
    Invalid {
        /// The operation's id.
        id: String,
        /// The route's method.
        method: String,
        /// The route's path.
        path: String,
        /// What is wrong.
        reason: String,
    },
}

/// One operation's REST route, checked.
pub(crate) struct RestRoute {
    pub(crate) id: String,
    pub(crate) spec: Arc<OperationSpec>,
    pub(crate) route: HttpRoute,
    pub(crate) method: Method,
    pub(crate) status: StatusCode,
    /// How path and query values read as input fields.
    shape: QueryShape,
    variables: Vec<String>,
    /// The input field the raw request body fills, when the body is one `Binary` field.
    raw_input: Option<String>,
    /// That field is a `ByteStream`: the body is streamed to the operation, not read first.
    streamed_input: bool,
    /// The content type of a `Binary` output, sent as the raw response body.
    pub(crate) raw_output: Option<http::HeaderValue>,
    /// The output is `()` (schema `{"type": "null"}`): a success has no body.
    pub(crate) unit_output: bool,
}

/// `true` for the output schema of `()`.
fn spec_output_is_unit(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("null")
}

/// The path with each variable as `{}`: two routes with the same method and shape collide.
fn shape_of(path: &str) -> String {
    path.split('/')
        .map(|segment| {
            if segment.starts_with('{') {
                "{}"
            } else {
                segment
            }
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// Why a path cannot be a route, if it cannot: a segment that holds a `{variable}` must be
/// one whole variable naming a field, and `:name` is not a variable here.
fn malformed_segment(path: &str) -> Option<String> {
    path.split('/').find_map(|segment| {
        if let Some(name) = segment.strip_prefix(':') {
            return Some(format!(
                "`{segment}`: a path variable is written `{{{name}}}`, not `:{name}`"
            ));
        }
        if !segment.contains(['{', '}']) {
            return None;
        }
        let whole = segment
            .strip_prefix('{')
            .and_then(|rest| rest.strip_suffix('}'))
            .is_some_and(|name| {
                !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            });
        (!whole).then(|| {
            format!("`{segment}`: a path variable is a whole segment naming an input field, e.g. `/todos/{{id}}`")
        })
    })
}

/// Each `{variable}` of a route's `Location` template names a field of the output (when the
/// output declares its fields); an error naming the fields otherwise, where a `Location`
/// would silently not be sent.
fn check_location(spec: &OperationSpec, route: &HttpRoute) -> Result<(), RouteError> {
    let Some(location) = &route.location else {
        return Ok(());
    };
    let output = spec.output_schema.root();
    let Some(properties) = output.get("properties").and_then(Value::as_object) else {
        return Ok(());
    };
    for variable in template_variables(location) {
        if !properties.contains_key(variable) {
            let fields: Vec<&str> = properties.keys().map(String::as_str).collect();
            return Err(invalid(
                spec,
                route,
                format!(
                    "its `location` names `{{{variable}}}`, which is not a field of its output (its fields: {}): no `Location` could be sent",
                    fields.join(", ")
                ),
            ));
        }
    }
    Ok(())
}

fn invalid(spec: &OperationSpec, route: &HttpRoute, reason: impl Into<String>) -> RouteError {
    RouteError::Invalid {
        id: spec.id(),
        method: route.method.clone(),
        path: route.path.clone(),
        reason: reason.into(),
    }
}

/// The route's method, when it is one a REST route may have.
fn rest_method(spec: &OperationSpec, route: &HttpRoute) -> Result<Method, RouteError> {
    let allowed = [
        Method::GET,
        Method::POST,
        Method::PUT,
        Method::PATCH,
        Method::DELETE,
    ];
    Method::from_bytes(route.method.as_bytes())
        .ok()
        .filter(|method| allowed.contains(method))
        .ok_or_else(|| {
            invalid(
                spec,
                route,
                "the method is not GET, POST, PUT, PATCH or DELETE",
            )
        })
}

/// Refuses a path variable that names no field of the input.
fn check_variables(
    spec: &OperationSpec,
    route: &HttpRoute,
    shape: &QueryShape,
    variables: &[String],
) -> Result<(), RouteError> {
    let Some(unknown) = variables
        .iter()
        .find(|variable| !shape.params.iter().any(|param| &param.name == *variable))
    else {
        return Ok(());
    };
    let fields: Vec<&str> = shape
        .params
        .iter()
        .map(|param| param.name.as_str())
        .collect();
    Err(RouteError::UnknownVariable {
        id: spec.id(),
        method: route.method.clone(),
        path: route.path.clone(),
        variable: unknown.clone(),
        fields: fields.join(", "),
    })
}

/// The field a body of raw bytes goes to (and whether it is a `ByteStream`): the one field
/// the path leaves to the body, when it is binary and the method has a body.
fn raw_input_field(
    method: &Method,
    shape: &QueryShape,
    variables: &[String],
) -> (Option<String>, bool) {
    let body_fields: Vec<&super::query::QueryParam> = shape
        .params
        .iter()
        .filter(|param| !variables.contains(&param.name))
        .collect();
    match body_fields.as_slice() {
        [only]
            if !matches!(*method, Method::GET | Method::DELETE)
                && opkit::binary::is_binary_schema(&only.schema) =>
        {
            let streamed = opkit::binary::is_byte_stream_schema(&only.schema);
            (Some(only.name.clone()), streamed)
        }
        _ => (None, false),
    }
}

/// The content type of an output sent as raw bytes (its schema's `contentMediaType`, else
/// `application/octet-stream`); `None` for an output sent as JSON.
fn raw_output_type(spec: &OperationSpec) -> Option<http::HeaderValue> {
    opkit::binary::is_binary_schema(&spec.output_schema).then(|| {
        spec.output_schema
            .get("contentMediaType")
            .and_then(Value::as_str)
            .and_then(|text| http::HeaderValue::from_str(text).ok())
            .unwrap_or(http::HeaderValue::from_static("application/octet-stream"))
    })
}

impl RestRoute {
    fn check(spec: Arc<OperationSpec>, route: HttpRoute) -> Result<Self, RouteError> {
        let method = rest_method(&spec, &route)?;
        if !route.path.starts_with('/') {
            return Err(invalid(&spec, &route, "the path must start with `/`"));
        }
        if let Some(reason) = malformed_segment(&route.path) {
            return Err(invalid(&spec, &route, reason));
        }
        let status = StatusCode::from_u16(route.status)
            .ok()
            .filter(StatusCode::is_success)
            .ok_or_else(|| invalid(&spec, &route, "the status of a success is 2xx"))?;
        let variables: Vec<String> = route
            .path_variables()
            .into_iter()
            .map(str::to_owned)
            .collect();
        let takes_fields = !variables.is_empty() || matches!(method, Method::GET | Method::DELETE);
        let shape = match QueryShape::of(&super::shared_components::query_view(&spec.input_schema))
        {
            Some(shape) => shape,
            None if takes_fields => {
                return Err(invalid(
                    &spec,
                    &route,
                    "its input is not an object with properties, so path and query values have no field to go to",
                ));
            }
            None => QueryShape { params: Vec::new() },
        };
        check_location(&spec, &route)?;
        check_variables(&spec, &route, &shape, &variables)?;
        let (raw_input, streamed_input) = raw_input_field(&method, &shape, &variables);
        let raw_output = raw_output_type(&spec);
        let unit_output = spec_output_is_unit(&spec.output_schema);
        Ok(Self {
            id: spec.id(),
            spec,
            route,
            method,
            status,
            shape,
            variables,
            raw_input,
            streamed_input,
            raw_output,
            unit_output,
        })
    }

    /// The input from the path's variables and the query string or the body, and the
    /// hand-off of a body streamed to a `ByteStream` field (kept until the call ends).
    async fn input(
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
                return self
                    .multipart_input(shared, boundary, body, limit, path_values)
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
                super::request_body::too_large(limit)
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
            Err(_) => {
                return Err(Rejection::from(CallError::timeout(
                    "the request body did not arrive before the request timeout",
                ))
                .with_status(StatusCode::REQUEST_TIMEOUT));
            }
        }
        let mut input = self.shape.decode(texts)?;
        if let (Value::Object(fields), Value::Object(from_path)) = (&mut input, path_values) {
            fields.extend(binary);
            fields.extend(from_path);
        }
        Ok(input)
    }
}

/// The REST routes of `registry`'s operations, checked: every path variable is an input
/// field, no two routes answer one method and path, routes at one path agree on their
/// variables' names, and none shadows the RPC routes.
pub(crate) fn collect(registry: &OperationRegistry) -> Result<Vec<Arc<RestRoute>>, RouteError> {
    let mut routes = Vec::new();
    let mut taken: HashMap<(Method, String), (String, String)> = HashMap::new();
    let mut names_at: HashMap<String, (String, Vec<String>)> = HashMap::new();
    for spec in registry.specs() {
        let Some(route) = spec.http_route()? else {
            continue;
        };
        let checked = RestRoute::check(spec, route)?;
        let shape = shape_of(&checked.route.path);
        if shape == "/openapi.json" || shape.starts_with("/ops/") {
            return Err(invalid(
                &checked.spec,
                &checked.route,
                "`/openapi.json` and `/ops/..` are the RPC routes",
            ));
        }
        if let Some((first, path)) = taken.get(&(checked.method.clone(), shape.clone())) {
            return Err(RouteError::Collision {
                method: checked.route.method.clone(),
                path: path.clone(),
                first: first.clone(),
                second: checked.id.clone(),
            });
        }
        match names_at.get(&shape) {
            Some((other, names)) if *names != checked.variables => {
                return Err(invalid(
                    &checked.spec,
                    &checked.route,
                    format!(
                        "`{other}` routes the same path with the variables named {{{}}}: name them alike",
                        names.join("}, {")
                    ),
                ));
            }
            _ => {
                names_at.insert(
                    shape.clone(),
                    (checked.id.clone(), checked.variables.clone()),
                );
            }
        }
        taken.insert(
            (checked.method.clone(), shape),
            (checked.id.clone(), checked.route.path.clone()),
        );
        routes.push(Arc::new(checked));
    }
    Ok(routes)
}

/// `router` with every REST route added.
pub(crate) fn add(
    mut router: Router<Arc<ServerState>>,
    routes: &[Arc<RestRoute>],
) -> Router<Arc<ServerState>> {
    let mut by_path: Vec<(String, Vec<Arc<RestRoute>>)> = Vec::new();
    for route in routes {
        match by_path
            .iter_mut()
            .find(|(path, _)| *path == route.route.path)
        {
            Some((_, same)) => same.push(route.clone()),
            None => by_path.push((route.route.path.clone(), vec![route.clone()])),
        }
    }
    for (path, same) in by_path {
        let mut methods = axum::routing::MethodRouter::new();
        for route in same {
            let filter = axum::routing::MethodFilter::try_from(route.method.clone())
                .unwrap_or(axum::routing::MethodFilter::POST);
            methods = methods.on(
                filter,
                move |State(shared): State<Arc<ServerState>>,
                      Path(params): Path<Vec<(String, String)>>,
                      request: Request| {
                    let route = route.clone();
                    async move { serve_rest(shared, route, params, request).await }
                },
            );
        }
        router = router.route(&path, methods);
    }
    router
}

/// The response header of a REST route carrying the operation's id (the envelope's meta a
/// bare-data body leaves out).
pub(crate) const OPERATION_ID: HeaderName = HeaderName::from_static("x-opkit-operation");

impl RestRoute {
    /// The body of the route's success: the bare data or the envelope, the route's status,
    /// `Location` filled from the data's fields.
    fn response(&self, envelope: ResponseEnvelope) -> Response {
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
    let json = super::request_body::is_json_media(&http.content_type);
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

/// One request to a REST route.
async fn serve_rest(
    shared: Arc<ServerState>,
    route: Arc<RestRoute>,
    params: Vec<(String, String)>,
    request: Request,
) -> Response {
    let (parts, body) = request.into_parts();
    let identity = match shared.identify(&parts).await {
        Ok(identity) => identity,
        Err(response) => return response,
    };
    let Some(found) = shared.registry.lookup(&route.id) else {
        return error_response(&CallError::operation_not_found(&route.id));
    };
    // The hand-off of a streamed body lives until the call ends: a body the operation never
    // took is dropped with it.
    let (input, hand_off) = match route.input(&shared, params, &parts, body).await {
        Ok(input) => input,
        Err(rejection) => return rejection.into_response(),
    };
    let stream = route.spec.kind.is_stream();
    let unary = |envelope| route.response(envelope);
    let shape = Shape {
        unary: &unary,
        raw_stream: route
            .raw_output
            .clone()
            .filter(|_| stream)
            .map(|content_type| (route.status, content_type)),
        body_time: if hand_off.is_some() {
            shared.request_timeout
        } else {
            std::time::Duration::ZERO
        },
        from_url: if matches!(route.method, Method::GET | Method::DELETE) {
            FromUrl::Everything
        } else {
            FromUrl::Fields(&route.variables)
        },
    };
    let mut response = serve_call(&shared, &found, parts, identity, input, Some(&shape)).await;
    if let Ok(value) = HeaderValue::from_str(&route.id) {
        response.headers_mut().insert(OPERATION_ID, value);
    }
    if !route.route.compress {
        response
            .extensions_mut()
            .insert(super::compress::Uncompressed);
    }
    response
}
