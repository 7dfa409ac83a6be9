//! REST routes: an operation's [`HttpRoute`] (its `http(..)` edge options: method, path,
//! success status, body shape) served beside its RPC route, through the same front door.
//!
//! The input is assembled from the path variables (each a field of the input), then the
//! query string (`GET`, `DELETE`) or the JSON body (`POST`, `PUT`, `PATCH`); a path variable
//! wins over a body field of the same name. Path and query values are read by the input
//! schema like the RPC route's query string (`?limit=5` is the integer 5).

mod check;
mod input;
mod response;

use check::invalid;

use super::handlers::{FromUrl, Shape, serve_call};
use super::query::QueryShape;
use super::route::{HttpRoute, HttpSpec};
use super::routed::{RouteTarget, Routed};
use super::state::{ServerState, error_response};
use axum::Router;
use axum::extract::{FromRequestParts, Path, Request};
use axum::response::IntoResponse;
use axum::response::Response;
use http::{HeaderName, HeaderValue, Method, StatusCode};
use opkit::edge::EdgeOptionsError;
use opkit::{CallError, OperationRegistry, OperationSpec};
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

/// `router` with every REST route added, each method of a path served by `shared` through
/// a [`Routed`] service.
pub(crate) fn add(
    mut router: Router<Arc<ServerState>>,
    shared: &Arc<ServerState>,
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
            methods = methods.on_service(
                filter,
                Routed::new(RestTarget {
                    shared: shared.clone(),
                    route,
                }),
            );
        }
        router = router.route(&path, methods);
    }
    router
}

/// The response header of a REST route carrying the operation's id (the envelope's meta a
/// bare-data body leaves out).
pub(crate) const OPERATION_ID: HeaderName = HeaderName::from_static("x-opkit-operation");

/// One method of a REST route: what its [`Routed`] service serves.
struct RestTarget {
    shared: Arc<ServerState>,
    route: Arc<RestRoute>,
}

impl RouteTarget for RestTarget {
    async fn serve(self: Arc<Self>, request: Request) -> Response {
        let (mut parts, body) = request.into_parts();
        let params = match Path::<Vec<(String, String)>>::from_request_parts(&mut parts, &()).await
        {
            Ok(Path(params)) => params,
            Err(rejection) => return rejection.into_response(),
        };
        serve_rest(&self.shared, &self.route, params, parts, body).await
    }
}

/// One request to a REST route.
async fn serve_rest(
    shared: &ServerState,
    route: &RestRoute,
    params: Vec<(String, String)>,
    parts: http::request::Parts,
    body: axum::body::Body,
) -> Response {
    let identity = match shared.identity_at_hand(&parts) {
        Some(identity) => identity,
        None => match shared.identify(&parts).await {
            Ok(identity) => identity,
            Err(response) => return response,
        },
    };
    let Some(found) = shared.registry.lookup(&route.id) else {
        return error_response(&CallError::operation_not_found(&route.id));
    };
    // The hand-off of a streamed body lives until the call ends: a body the operation never
    // took is dropped with it.
    let (input, hand_off) = match route.input(shared, params, &parts, body).await {
        Ok(input) => input,
        Err(rejection) => return rejection.into_response(),
    };
    let stream = route.spec.kind.is_stream();
    let unary = |reply| route.response(reply);
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
    let mut response = serve_call(shared, &found, parts, identity, input, Some(&shape)).await;
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
