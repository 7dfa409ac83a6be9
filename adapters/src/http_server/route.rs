//! [`HttpRoute`]: how an operation asks the HTTP server to serve it as a REST route — its
//! `http(..)` edge options (`#[operation(http(method = "PATCH", path = "/todos/{id}"))]`, or
//! [`HttpSpec::http`] on a spec built at run time), read by the server when it starts.

use opkit::OperationSpec;
use opkit::edge::EdgeOptionsError;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The name of the HTTP server's edge options: the `http(..)` group.
pub const HTTP_EDGE: &str = "http";

/// How an operation is served as a REST route, beside its RPC route (`/ops/<id>`): the
/// method and path, the success status and the body's shape. Declared with
/// `#[operation(http(..))]` or [`HttpSpec::http`]; the [module docs](super) say how the path,
/// query and body map onto the input.
///
/// Its serialized form is the `http(..)` group's: `{"method", "path", "status", "body":
/// "data" | "envelope", "location", "body_limit"}` (in bytes).
///
/// ```
/// use opkit::{OperationKind, OperationSpec};
/// use opkit_adapters::http_server::{HttpRoute, HttpSpec};
/// let spec = OperationSpec::new("todos", "create", OperationKind::Mutation)
///     .http(HttpRoute::new("POST", "/todos").status(201).location("/todos/{id}"));
/// let route = spec.http_route().unwrap().unwrap();
/// assert_eq!((route.status, route.location.as_deref()), (201, Some("/todos/{id}")));
/// assert_eq!(spec.edges["http"]["status"], 201);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct HttpRoute {
    /// The method, upper case (`GET`, `POST`, `PUT`, `PATCH`, `DELETE`).
    pub method: String,
    /// The path, with `{name}` for each path variable (a field of the input).
    pub path: String,
    /// The status of a success (200 unless given; 204 sends no body).
    #[serde(default = "ok")]
    pub status: u16,
    /// `true` (`body = "envelope"`): the body is the whole envelope, as on the RPC route;
    /// `false` (`body = "data"`, the default): the body is the bare `data`, what REST clients
    /// expect.
    #[serde(
        default,
        rename = "body",
        serialize_with = "body_form",
        deserialize_with = "envelope_of"
    )]
    pub envelope: bool,
    /// A `Location` header for a success, with `{name}` filled from the output's fields
    /// (`/todos/{id}` after a create).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
    /// The largest request body the route takes, in bytes (the server's limit when `None`).
    /// The attribute writes it with a unit: `KB`, `MB`, `GB` are powers of 10 (`"5MB"` is
    /// 5,000,000 bytes), `KiB`, `MiB`, `GiB` powers of 2.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body_limit: Option<usize>,
    /// `false` (`compress = false`): the route's responses are never compressed, even when
    /// the server compresses and the client asks (bodies that are compressed already, or
    /// streams a client must see chunk by chunk). `true`, the default, follows the server
    /// ([`HttpServer::compression`](super::HttpServer::compression)).
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub compress: bool,
}

fn ok() -> u16 {
    200
}

fn yes() -> bool {
    true
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's `skip_serializing_if` passes a reference
fn is_true(value: &bool) -> bool {
    *value
}

fn body_form<S: Serializer>(envelope: &bool, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(if *envelope { "envelope" } else { "data" })
}

fn envelope_of<'de, D: Deserializer<'de>>(deserializer: D) -> Result<bool, D::Error> {
    match String::deserialize(deserializer)?.as_str() {
        "envelope" => Ok(true),
        "data" => Ok(false),
        other => Err(serde::de::Error::custom(format!(
            "`body` is \"data\" (the bare data, the default) or \"envelope\", not {other:?}"
        ))),
    }
}

impl HttpRoute {
    /// `method` (any case) at `path`, answering 200 with the bare data.
    pub fn new(method: impl Into<String>, path: impl Into<String>) -> Self {
        Self {
            method: method.into().to_ascii_uppercase(),
            path: path.into(),
            status: 200,
            envelope: false,
            location: None,
            body_limit: None,
            compress: true,
        }
    }

    /// The status of a success.
    #[must_use]
    pub fn status(mut self, status: u16) -> Self {
        self.status = status;
        self
    }

    /// Sends the whole envelope as the body, not the bare data.
    #[must_use]
    pub fn envelope(mut self) -> Self {
        self.envelope = true;
        self
    }

    /// A `Location` header template, filled from the output's fields.
    #[must_use]
    pub fn location(mut self, location: impl Into<String>) -> Self {
        self.location = Some(location.into());
        self
    }

    /// The largest request body the route takes, in bytes.
    #[must_use]
    pub fn body_limit(mut self, bytes: usize) -> Self {
        self.body_limit = Some(bytes);
        self
    }

    /// Never compresses the route's responses.
    #[must_use]
    pub fn uncompressed(mut self) -> Self {
        self.compress = false;
        self
    }

    /// The names of the path's `{variables}`, in order.
    pub fn path_variables(&self) -> Vec<&str> {
        template_variables(&self.path)
    }
}

/// The `{variables}` of a template, in order.
pub(crate) fn template_variables(template: &str) -> Vec<&str> {
    let mut names = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let after = &rest[open + 1..];
        let Some(close) = after.find('}') else {
            break;
        };
        names.push(&after[..close]);
        rest = &after[close + 1..];
    }
    names
}

/// The REST route of an [`OperationSpec`]: the `http(..)` edge options, typed.
pub trait HttpSpec: Sized {
    /// Serves the operation also as the REST route `route`.
    #[must_use]
    fn http(self, route: HttpRoute) -> Self;

    /// The operation's REST route, if it has one; an [`EdgeOptionsError`] when its
    /// `http(..)` options are not a route.
    fn http_route(&self) -> Result<Option<HttpRoute>, EdgeOptionsError>;
}

impl HttpSpec for OperationSpec {
    fn http(self, route: HttpRoute) -> Self {
        // A route always serializes (strings, numbers, a bool).
        let options = serde_json::to_value(route).unwrap_or_default();
        self.with_edge_options(HTTP_EDGE, options)
    }

    fn http_route(&self) -> Result<Option<HttpRoute>, EdgeOptionsError> {
        self.edge_options(HTTP_EDGE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use opkit::OperationKind;
    use serde_json::json;

    #[test]
    fn the_attribute_form_reads_as_a_route_and_unknown_options_are_named() {
        let spec = OperationSpec::new("a", "b", OperationKind::Query).with_edge_options(
            HTTP_EDGE,
            json!({"method": "GET", "path": "/x/{id}", "body": "envelope", "body_limit": 5}),
        );
        let route = spec.http_route().unwrap().unwrap();
        assert_eq!(route.status, 200);
        assert!(route.envelope);
        assert_eq!(route.body_limit, Some(5));
        assert_eq!(route.path_variables(), ["id"]);
        let odd = spec.clone().with_edge_option(HTTP_EDGE, "cache", json!(60));
        let error = odd.http_route().unwrap_err().to_string();
        assert!(error.contains("unknown field `cache`"), "{error}");
        assert!(error.contains("operation `a.b`"), "{error}");
        let bad_body = spec.with_edge_option(HTTP_EDGE, "body", json!("raw"));
        let error = bad_body.http_route().unwrap_err().to_string();
        assert!(error.contains("\"data\""), "{error}");
    }
}
