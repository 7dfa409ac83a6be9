//! The OpenAPI document of a served registry (`GET /openapi.json`): 3.1 by default, or 3.2
//! ([`OpenApiVersion`]).
//!
//! One path per operation (`/ops/{id}`). The HTTP operation whose `operationId` is the opkit
//! id is the canonical one: `GET` with query parameters for a query or subscription whose
//! input spreads over them, `POST` with an `application/json` body otherwise. A query or
//! subscription documented as `GET` also documents its `POST` twin (`operationId`
//! `<id>.post`, `x-opkit-alias: true`), because the server answers it — and an undocumented
//! method must answer `405`.
//!
//! Schemas live in `components/schemas`: `<id>.Input`, `<id>.Output`, `<id>.Envelope` (what
//! the 200 response carries: `{data: <id>.Output, meta: ResponseMeta}`), their `$defs` as
//! `<id>.Input.<Def>` / `<id>.Output.<Def>` — or, for the schemas of an import that share
//! its definitions, those definitions once as `<namespace>.<Def>` (see
//! `shared_components`) — and the shared `ResponseEnvelope`, `ResponseMeta`
//! (and the meta variants) and `CallError`. Subscriptions describe their
//! `text/event-stream` per event (`{data, event?, id?, retry?}`), with the JSON in `data`
//! given by `contentSchema`: in 3.1 as the stream's `schema` (the schemathesis view), in
//! 3.2 as its `itemSchema`, the schema of each event, whose `data` is a string. Every error status
//! the server can answer is described with the `CallError` body. Each operation also carries
//! `x-opkit-id`, `x-opkit-kind` and, when restricted, `x-opkit-access`.
//!
//! The document is written in parts: [`errors`] (the error responses every operation
//! refers to), [`operation`] (an operation's schemas, its RPC route and what every route of
//! it shares) and [`rest`] (its REST route).

mod errors;
mod operation;
mod rest;

use super::refs::add_component;
use super::shared_components::SharedComponents;
use errors::error_responses;
use opkit::{OperationRegistry, OperationSpec};
use serde_json::{Map, Value, json};

/// Where operations are served: `/ops/<id>`.
pub(crate) const OPS_PREFIX: &str = "/ops/";

/// The OpenAPI version of the served document.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum OpenApiVersion {
    /// OpenAPI 3.1.0 (the default): an event stream's events described by its `schema`.
    #[default]
    V3_1,
    /// OpenAPI 3.2.0: an event stream's events described by its `itemSchema`, as 3.2
    /// describes sequential media types.
    V3_2,
}

impl OpenApiVersion {
    /// The document's `openapi` field: `"3.1.0"` or `"3.2.0"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::V3_1 => "3.1.0",
            Self::V3_2 => "3.2.0",
        }
    }
}

/// What the document says about the API as a whole.
#[derive(Debug, Clone)]
pub(crate) struct DocumentInfo {
    /// The OpenAPI version written.
    pub(crate) openapi: OpenApiVersion,
    pub(crate) title: String,
    pub(crate) version: String,
    pub(crate) description: Option<String>,
    /// An authenticator is configured: document 401s (and its security scheme, when it has one).
    pub(crate) authenticated: bool,
    /// The security scheme's name and object.
    pub(crate) security: Option<(String, Value)>,
    /// The status of a body that parses but fails its schema (400 or 422).
    pub(crate) invalid_input: u16,
    /// The status of path variables and query values that fail the schema.
    pub(crate) invalid_parameter: u16,
}

/// The scopes an operation's security requirement lists: its access rule's scopes for an
/// `oauth2` or `openIdConnect` scheme (where they name OAuth scopes), none for other schemes.
pub(crate) fn required_scopes(scheme: &Value, spec: &opkit::OperationSpec) -> Vec<String> {
    match scheme.get("type").and_then(Value::as_str) {
        Some("oauth2" | "openIdConnect") => spec.access.scopes.clone(),
        _ => Vec::new(),
    }
}

/// A REST route's documented operation: its path, its method and the operation object.
type RestOperation = (String, String, Value);

/// The documented HTTP operations of one opkit operation: the canonical one (`operationId`
/// = the id) and, for a query or subscription documented as `GET`, its `POST` twin
/// (`operationId` = `<id>.post`, `x-opkit-alias: true`); and its REST route, when it has
/// one (`operationId` = `<id>.rest`, `x-opkit-alias: true`, `x-opkit-rest: true`), with its
/// path.
fn operations(
    spec: &OperationSpec,
    components: &mut Map<String, Value>,
    shared: &mut SharedComponents,
    meta_schema: &Value,
    info: &DocumentInfo,
) -> (Vec<(String, Value)>, Option<RestOperation>) {
    let doc = OperationDoc::new(spec, components, shared, meta_schema, info);
    // An unreadable route is the router's error (`RouteError::Options`); the document
    // leaves it out.
    let route = super::route::HttpSpec::http_route(spec).ok().flatten();
    let rest = route.map(|route| doc.rest(&route, components));
    (doc.rpc(), rest)
}

/// What one operation's documented HTTP operations share: its schemas' references and the
/// document's facts.
struct OperationDoc<'a> {
    spec: &'a OperationSpec,
    info: &'a DocumentInfo,
    id: String,
    input_key: String,
    input_ref: Value,
    /// The prefix of the input's `$defs` among the components.
    input_defs: String,
    output_ref: Value,
    envelope_ref: Value,
}

/// Builds the whole document from the registry's current specs; `base_path` is where the
/// routes are mounted (`""` at the root), the document's `servers` entry.
pub(crate) fn document(
    registry: &OperationRegistry,
    info: &DocumentInfo,
    base_path: &str,
) -> Value {
    let mut document = document_without_servers(registry, info);
    document.insert("servers".to_owned(), servers(base_path));
    Value::Object(document)
}

/// The document's `servers` entry for routes mounted at `base_path` (`""` at the root): the
/// one part of the document that depends on where it is served from.
pub(crate) fn servers(base_path: &str) -> Value {
    let server = if base_path.is_empty() { "/" } else { base_path };
    json!([{"url": server, "description": "where these operations are served (relative to this document's host)"}])
}

/// [`document`] but its `servers` entry: everything derived from the registry's specs.
pub(crate) fn document_without_servers(
    registry: &OperationRegistry,
    info: &DocumentInfo,
) -> Map<String, Value> {
    let mut components = Map::new();
    add_component(
        &mut components,
        "ResponseEnvelope",
        "",
        &opkit::envelope::envelope_schema(),
    );
    add_component(
        &mut components,
        "CallError",
        "",
        &opkit::schema::schema_for::<opkit::CallError>(),
    );
    let meta_schema = components
        .get("ResponseEnvelope")
        .and_then(|envelope| envelope.pointer("/properties/meta"))
        .cloned()
        .unwrap_or_else(|| json!({"type": "object"}));

    let mut paths = Map::new();
    let mut rest_paths = Map::new();
    let mut shared = SharedComponents::default();
    for spec in registry.specs() {
        let mut item = Map::new();
        let (rpc, rest) = operations(&spec, &mut components, &mut shared, &meta_schema, info);
        for (method, op) in rpc {
            item.insert(method, op);
        }
        paths.insert(format!("{OPS_PREFIX}{}", spec.id()), Value::Object(item));
        if let Some((path, method, op)) = rest {
            let item = rest_paths.entry(path).or_insert_with(|| json!({}));
            item[method] = op;
        }
    }
    paths.extend(rest_paths);

    let mut doc_info = json!({"title": info.title, "version": info.version});
    if let Some(description) = &info.description {
        doc_info["description"] = json!(description);
    }
    let mut component_map = json!({
        "schemas": components,
        "responses": error_responses(info),
    });
    if let Some((scheme, object)) = &info.security {
        let mut object = object.clone();
        if object.get("description").is_none() {
            object["description"] = json!(
                "Credentials the server's authenticator accepts. Without them the call is anonymous."
            );
        }
        component_map["securitySchemes"] = json!({ scheme.as_str(): object });
    }
    let mut document = Map::new();
    document.insert("openapi".to_owned(), json!(info.openapi.as_str()));
    document.insert("info".to_owned(), doc_info);
    document.insert("paths".to_owned(), Value::Object(paths));
    document.insert("components".to_owned(), component_map);
    document
}
