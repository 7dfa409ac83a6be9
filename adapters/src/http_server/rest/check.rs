//! A REST route checked when the router is built: its method, its path and the variables in
//! it (each a field of the input), its status, its `Location`, and how its body and output
//! travel (JSON, or raw bytes for a `Binary` field or output).

use super::{RestRoute, RouteError};
use crate::http_server::query::QueryShape;
use crate::http_server::route::{HttpRoute, template_variables};
use http::{Method, StatusCode};
use opkit::OperationSpec;
use serde_json::Value;
use std::sync::Arc;

/// `true` for the output schema of `()`.
fn spec_output_is_unit(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("null")
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

pub(super) fn invalid(
    spec: &OperationSpec,
    route: &HttpRoute,
    reason: impl Into<String>,
) -> RouteError {
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
    let body_fields: Vec<&crate::http_server::query::QueryParam> = shape
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
    pub(super) fn check(spec: Arc<OperationSpec>, route: HttpRoute) -> Result<Self, RouteError> {
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
        let shape = match QueryShape::of(&crate::http_server::shared_components::query_view(
            &spec.input_schema,
        )) {
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
}
