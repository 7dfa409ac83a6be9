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

use super::query::{ParamStyle, QueryShape};
use super::refs::{add_component, component_rewriter, rewrite_refs};
use super::route::HttpRoute;
use super::shared_components::{SharedComponents, query_view};
use opkit::schema::pointer;
use opkit::{ErrorKind, OperationKind, OperationRegistry, OperationSpec};
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

fn error_response(description: &str) -> Value {
    json!({
        "description": description,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/CallError"}}}
    })
}

/// The `components/responses` entry and the status of each application error kind.
fn kind_response(kind: ErrorKind) -> (&'static str, &'static str, &'static str) {
    match kind {
        ErrorKind::NotFound => (
            "404",
            "ResourceNotFound",
            "`NOT_FOUND` (kind; code `EXECUTION_ERROR`): what the call is about does not exist; or `OPERATION_NOT_FOUND`: no such operation.",
        ),
        ErrorKind::Conflict => (
            "409",
            "Conflict",
            "`CONFLICT` (kind; code `EXECUTION_ERROR`): the call conflicts with the current state.",
        ),
        ErrorKind::Unprocessable => (
            "422",
            "Unprocessable",
            "`UNPROCESSABLE` (kind; code `VALIDATION_ERROR`): the input breaks a rule of the domain.",
        ),
        ErrorKind::RateLimited => (
            "429",
            "RateLimited",
            "`RATE_LIMITED` (kind; code `EXECUTION_ERROR`): too many calls; retry later.",
        ),
        ErrorKind::Unauthenticated => (
            "401",
            "Unauthenticated",
            "`UNAUTHENTICATED` (kind; code `ACCESS_DENIED`): the caller must authenticate.",
        ),
        ErrorKind::Unavailable => (
            "503",
            "Unavailable",
            "`UNAVAILABLE` (kind; code `EXECUTION_ERROR`): a dependency is down; retry later. Or `ABORTED`: the call was cancelled.",
        ),
        // `ErrorKind` is non-exhaustive: a kind added later is documented as a server error
        // until it gets its own entry.
        _ => (
            "500",
            "ExecutionError",
            "`EXECUTION_ERROR`: the operation failed (returned an error or panicked).",
        ),
    }
}

/// `components/responses`: one entry per error status.
fn error_responses(info: &DocumentInfo) -> Map<String, Value> {
    let mut responses = Map::new();
    let entries = [
        (
            "BadRequest",
            "`VALIDATION_ERROR`: the input does not match the input schema (`details` lists every violation as `{path, message}`), or the request is malformed.",
        ),
        (
            "Forbidden",
            "`ACCESS_DENIED`: the caller's identity does not satisfy the operation's access rule.",
        ),
        (
            "NotFound",
            "`OPERATION_NOT_FOUND`: no such operation (it may have been removed).",
        ),
        (
            "PayloadTooLarge",
            "`VALIDATION_ERROR`: the request body is larger than the server's limit.",
        ),
        (
            "UnsupportedMediaType",
            "`VALIDATION_ERROR`: the request body is not `application/json`.",
        ),
        (
            "ExecutionError",
            "`EXECUTION_ERROR`: the operation failed (returned an error or panicked).",
        ),
        (
            "TransportError",
            "`TRANSPORT_ERROR`: a service the operation depends on could not be reached.",
        ),
        ("Aborted", "`ABORTED`: the call was cancelled."),
        (
            "Timeout",
            "`TIMEOUT`: the operation did not finish before its deadline.",
        ),
        (
            "RequestTimeout",
            "`TIMEOUT`: the request body did not arrive before the request timeout.",
        ),
        (
            "InvalidInput",
            "`VALIDATION_ERROR`: the input parsed but does not match the input schema (`details` lists every violation as `{path, message}`).",
        ),
    ];
    for (name, description) in entries {
        responses.insert(name.to_owned(), error_response(description));
    }
    for kind in ErrorKind::ALL {
        let (_, name, description) = kind_response(kind);
        responses
            .entry(name.to_owned())
            .or_insert_with(|| error_response(description));
    }
    if info.authenticated {
        let unauthorized = error_response(
            "`ACCESS_DENIED` (kind `UNAUTHENTICATED`): the request's credentials were not accepted, or the operation needs an identity and the call is anonymous.",
        );
        responses.insert("Unauthorized".to_owned(), unauthorized);
    }
    responses
}

/// The scopes an operation's security requirement lists: its access rule's scopes for an
/// `oauth2` or `openIdConnect` scheme (where they name OAuth scopes), none for other schemes.
pub(crate) fn required_scopes(scheme: &Value, spec: &opkit::OperationSpec) -> Vec<String> {
    match scheme.get("type").and_then(Value::as_str) {
        Some("oauth2" | "openIdConnect") => spec.access.scopes.clone(),
        _ => Vec::new(),
    }
}

fn response_ref(name: &str) -> Value {
    json!({"$ref": format!("#/components/responses/{name}")})
}

/// A property schema (written relative to the input schema) with its local refs pointing
/// into the input's component.
fn property_schema(schema: &Value, input_key: &str, defs_prefix: &str) -> Value {
    let mut schema = schema.clone();
    rewrite_refs(&mut schema, &mut component_rewriter(input_key, defs_prefix));
    schema
}

fn parameters(shape: &QueryShape, input_key: &str, defs_prefix: &str) -> Vec<Value> {
    shape
        .params
        .iter()
        .map(|param| {
            let schema = property_schema(&param.schema, input_key, defs_prefix);
            let mut parameter = json!({
                "name": param.name,
                "in": "query",
                "required": param.required,
            });
            if let Some(description) = param.schema.get("description").and_then(Value::as_str) {
                parameter["description"] = json!(description);
            }
            match param.style {
                ParamStyle::Scalar(_) | ParamStyle::Array(_) => {
                    parameter["schema"] = schema;
                }
                ParamStyle::Json => {
                    parameter["content"] = json!({"application/json": {"schema": schema}});
                }
            }
            parameter
        })
        .collect()
}

fn has_required(schema: &Value) -> bool {
    schema
        .get("required")
        .and_then(Value::as_array)
        .is_some_and(|required| !required.is_empty())
}

fn summary(spec: &OperationSpec) -> String {
    spec.description
        .as_deref()
        .and_then(|text| text.lines().map(str::trim).find(|line| !line.is_empty()))
        .map_or_else(|| format!("{} {}", spec.kind, spec.id()), str::to_owned)
}

/// The schema of one SSE event as schemathesis and OpenAPI 3.2 see it (`{data, event?, id?,
/// retry?}`), with the JSON carried in `data` described by `contentSchema`. For 3.1 `data`
/// is not typed: importers that read this schema as the schema of the (parsed) data of each
/// event, rather than of the event, then keep the envelope intact. For 3.2 (`itemSchema`)
/// it is what 3.2 says an event's data is, a string.
fn event_schema(envelope_ref: &Value, version: OpenApiVersion) -> Value {
    let data =
        |schema: Value| json!({"contentMediaType": "application/json", "contentSchema": schema});
    let mut event = json!({
        "type": "object",
        "required": ["data"],
        "additionalProperties": true,
        "properties": {
            "event": {"type": "string"},
            "data": {"description": "The event's data: JSON, as `contentSchema` says per event type."},
            "id": {"type": "string"},
            "retry": {"type": "integer", "minimum": 0},
        },
        "oneOf": [
            {
                "description": "An item: its `ResponseEnvelope`; `id` counts from 0.",
                "properties": {"event": {"const": "message"}, "data": data(envelope_ref.clone())},
            },
            {
                "description": "The stream ended normally.",
                "required": ["event"],
                "properties": {
                    "event": {"const": "complete"},
                    "data": data(json!({
                        "type": "object",
                        "required": ["requestId"],
                        "properties": {"requestId": {"type": "string"}},
                    })),
                },
            },
            {
                "description": "The stream failed; nothing follows.",
                "required": ["event"],
                "properties": {
                    "event": {"const": "error"},
                    "data": data(json!({"$ref": "#/components/schemas/CallError"})),
                },
            },
        ],
    });
    if version == OpenApiVersion::V3_2 {
        event["properties"]["data"]["type"] = json!("string");
    }
    event
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

impl<'a> OperationDoc<'a> {
    /// Adds the operation's input, output and envelope schemas to `components`.
    fn new(
        spec: &'a OperationSpec,
        components: &mut Map<String, Value>,
        shared: &mut SharedComponents,
        meta_schema: &Value,
        info: &'a DocumentInfo,
    ) -> Self {
        let id = spec.id();
        let input_key = format!("{id}.Input");
        let output_key = format!("{id}.Output");
        let envelope_key = format!("{id}.Envelope");
        let (input_ref, input_defs) =
            shared.add(components, &input_key, &spec.input_schema, &spec.namespace);
        let (output_ref, _) = shared.add(
            components,
            &output_key,
            &spec.output_schema,
            &spec.namespace,
        );
        components.insert(
            envelope_key.clone(),
            json!({
                "type": "object",
                "description": format!("The `ResponseEnvelope` of `{id}`."),
                "required": ["data", "meta"],
                "properties": {"data": output_ref, "meta": meta_schema},
            }),
        );
        let envelope_ref =
            json!({"$ref": format!("#/components/schemas/{}", pointer::escape(&envelope_key))});
        Self {
            spec,
            info,
            id,
            input_key,
            input_ref,
            input_defs,
            output_ref,
            envelope_ref,
        }
    }

    /// The RPC route's success: the envelope, or for a subscription its event stream.
    fn success(&self) -> Value {
        if self.spec.kind.is_stream() {
            json!({
                "description": "A `text/event-stream`: one unnamed (`message`) event per item whose data is the item's `ResponseEnvelope` JSON (`id` counts from 0), then either `event: complete` with data `{\"requestId\": ..}` or `event: error` with a `CallError`; `:` comments keep the connection alive. Closing the connection cancels the subscription. With `Accept: text/event-stream; opkit=data` each item event's data is the item's `data` alone (no meta, no `id`).",
                "content": {"text/event-stream": match self.info.openapi {
                    OpenApiVersion::V3_1 => json!({"schema": event_schema(&self.envelope_ref, OpenApiVersion::V3_1)}),
                    version => json!({"itemSchema": event_schema(&self.envelope_ref, version)}),
                }},
            })
        } else {
            json!({
                "description": "The result in a `ResponseEnvelope`: `data` is the operation's output, `meta` says where it came from.",
                "content": {"application/json": {"schema": self.envelope_ref}},
            })
        }
    }

    /// Every status the server may answer `method` with.
    fn responses(&self, method: &str) -> Value {
        let (spec, info) = (self.spec, self.info);
        let mut responses = Map::new();
        responses.insert("200".to_owned(), self.success());
        responses.insert("400".to_owned(), response_ref("BadRequest"));
        if info.authenticated {
            responses.insert("401".to_owned(), response_ref("Unauthorized"));
        }
        if !spec.access.is_public() {
            responses.insert("403".to_owned(), response_ref("Forbidden"));
        }
        responses.insert("404".to_owned(), response_ref("NotFound"));
        if method == "post" {
            responses.insert("413".to_owned(), response_ref("PayloadTooLarge"));
            responses.insert("415".to_owned(), response_ref("UnsupportedMediaType"));
        }
        responses.insert("500".to_owned(), response_ref("ExecutionError"));
        responses.insert("502".to_owned(), response_ref("TransportError"));
        responses.insert("503".to_owned(), response_ref("Aborted"));
        responses.insert("504".to_owned(), response_ref("Timeout"));
        // A GET's and a DELETE's input is in the URL; the others' in the body (a REST route's
        // path variables add theirs, see `rest`).
        let invalid = if method == "get" || method == "delete" {
            info.invalid_parameter
        } else {
            info.invalid_input
        };
        if invalid != 400 {
            responses.insert(invalid.to_string(), response_ref("InvalidInput"));
        }
        for kind in &spec.errors {
            let (status, name, _) = kind_response(*kind);
            if status == "401" && info.authenticated {
                continue;
            }
            responses.insert(status.to_owned(), response_ref(name));
        }
        Value::Object(responses)
    }

    /// What every documented operation of this one says: ids, description, access,
    /// responses, security.
    fn base(&self, operation_id: String, method: &str) -> Value {
        let spec = self.spec;
        let mut op = json!({
            "operationId": operation_id,
            "summary": summary(spec),
            "tags": [spec.namespace],
            "x-opkit-id": self.id,
            "x-opkit-kind": spec.kind.as_str(),
        });
        if let Some(description) = &spec.description {
            op["description"] = json!(description);
        }
        if !spec.access.is_public() {
            op["x-opkit-access"] = json!(spec.access);
        }
        op["responses"] = self.responses(method);
        if let Some((scheme, object)) = &self.info.security {
            let scopes = required_scopes(object, spec);
            op["security"] = if spec.access.is_public() {
                json!([{}, {scheme.as_str(): scopes}])
            } else {
                json!([{scheme.as_str(): scopes}])
            };
        }
        op
    }

    /// The `POST` of the RPC route: the input as a JSON body.
    fn post(&self, operation_id: String) -> Value {
        let mut op = self.base(operation_id, "post");
        op["requestBody"] = json!({
            "description": "The input object. An empty body is read as `{}`.",
            "required": has_required(self.spec.input_schema.root()),
            "content": {"application/json": {"schema": self.input_ref}},
        });
        op
    }

    /// The RPC route's operations, by method.
    fn rpc(&self) -> Vec<(String, Value)> {
        let id = &self.id;
        match QueryShape::of(&query_view(&self.spec.input_schema)) {
            Some(shape) if self.spec.kind != OperationKind::Mutation => {
                let mut get = self.base(id.clone(), "get");
                get["parameters"] = json!(parameters(&shape, &self.input_key, &self.input_defs));
                let mut alias = self.post(format!("{id}.post"));
                alias["x-opkit-alias"] = json!(true);
                vec![("get".to_owned(), get), ("post".to_owned(), alias)]
            }
            _ => vec![("post".to_owned(), self.post(id.clone()))],
        }
    }

    /// The REST route's operation, with its path and method.
    fn rest(&self, route: &HttpRoute, components: &mut Map<String, Value>) -> RestOperation {
        let method = route.method.to_ascii_lowercase();
        let mut op = self.base(format!("{}.rest", self.id), &method);
        op["x-opkit-alias"] = json!(true);
        op["x-opkit-rest"] = json!(true);
        let variables = route.path_variables();
        let shape = QueryShape::of(&query_view(&self.spec.input_schema))
            .unwrap_or(QueryShape { params: Vec::new() });
        let params = self.rest_parameters(&shape, &variables, &method);
        if !params.is_empty() {
            op["parameters"] = json!(params);
        }
        let takes_body = method != "get" && method != "delete";
        if takes_body {
            op["requestBody"] = self.rest_request_body(&shape, &variables, components);
        }
        let responses = op["responses"]
            .as_object_mut()
            .expect("responses are an object");
        responses.remove("200");
        responses.insert(route.status.to_string(), self.rest_success(route));
        if takes_body {
            responses.insert("408".to_owned(), response_ref("RequestTimeout"));
            if !variables.is_empty() && self.info.invalid_parameter != 400 {
                responses.insert(
                    self.info.invalid_parameter.to_string(),
                    response_ref("InvalidInput"),
                );
            }
        }
        (route.path.clone(), method, op)
    }

    /// The REST route's parameters: its path variables, then (for `GET` and `DELETE`) the
    /// other fields as query parameters.
    fn rest_parameters(&self, shape: &QueryShape, variables: &[&str], method: &str) -> Vec<Value> {
        let mut params: Vec<Value> = parameters(shape, &self.input_key, &self.input_defs)
            .into_iter()
            .filter_map(|mut param| {
                let name = param["name"].as_str()?.to_owned();
                if variables.contains(&name.as_str()) {
                    param["in"] = json!("path");
                    param["required"] = json!(true);
                    Some(param)
                } else if method == "get" || method == "delete" {
                    Some(param)
                } else {
                    None
                }
            })
            .collect();
        params.sort_by_key(|param| param["in"] != "path");
        params
    }

    /// The REST route's request body: the fields its path does not give, as JSON (and as
    /// multipart parts when one is a file), or the raw bytes of its one `Binary` field.
    fn rest_request_body(
        &self,
        shape: &QueryShape,
        variables: &[&str],
        components: &mut Map<String, Value>,
    ) -> Value {
        let spec = self.spec;
        let required = spec
            .input_schema
            .get("required")
            .and_then(Value::as_array)
            .is_some_and(|names| {
                names
                    .iter()
                    .any(|name| !variables.iter().any(|variable| name == variable))
            });
        let fields: Vec<&super::query::QueryParam> = shape
            .params
            .iter()
            .filter(|param| !variables.contains(&param.name.as_str()))
            .collect();
        if let [only] = fields.as_slice()
            && opkit::binary::is_binary_schema(&only.schema)
        {
            return json!({
                "description": format!("The bytes of `{}`, raw, of any content type.", only.name),
                "required": only.required,
                "content": {"*/*": {"schema": {"type": "string", "contentMediaType": "application/octet-stream"}}},
            });
        }
        let schema = rest_body(
            spec,
            variables,
            components,
            &self.input_ref,
            &self.input_defs,
        );
        let mut content = json!({"application/json": {"schema": schema}});
        if fields
            .iter()
            .any(|param| opkit::binary::is_binary_schema(&param.schema))
        {
            content["multipart/form-data"] = json!({"schema": self.multipart_schema(&fields)});
        }
        json!({
            "description": "The input object, without the fields the path gives. An empty body is read as `{}`.",
            "required": required,
            "content": content,
        })
    }

    /// A multipart body: each `Binary` field a file part (raw), the others text parts.
    fn multipart_schema(&self, fields: &[&super::query::QueryParam]) -> Value {
        let properties: Map<String, Value> = fields
            .iter()
            .map(|param| {
                let schema = if opkit::binary::is_binary_schema(&param.schema) {
                    json!({"type": "string", "contentMediaType": "application/octet-stream"})
                } else {
                    property_schema(&param.schema, &self.input_key, &self.input_defs)
                };
                (param.name.clone(), schema)
            })
            .collect();
        let required: Vec<&str> = fields
            .iter()
            .filter(|param| param.required)
            .map(|param| param.name.as_str())
            .collect();
        json!({"type": "object", "properties": properties, "required": required})
    }

    /// The REST route's success: no content, raw bytes, the envelope or the bare data.
    fn rest_success(&self, route: &HttpRoute) -> Value {
        let spec = self.spec;
        if route.status == 204 {
            json!({"description": "Done: no content."})
        } else if opkit::binary::is_binary_schema(&spec.output_schema) {
            let media = spec
                .output_schema
                .get("contentMediaType")
                .and_then(Value::as_str)
                .unwrap_or("application/octet-stream");
            json!({
                "description": "The operation's output, as raw bytes.",
                "content": {media: {"schema": {"type": "string", "contentMediaType": media}}},
            })
        } else if route.envelope {
            json!({"description": "The result in a `ResponseEnvelope`.", "content": {"application/json": {"schema": self.envelope_ref}}})
        } else {
            json!({
                "description": "The operation's output (the bare `data`; the request id is in `x-request-id`, the operation id in `x-opkit-operation`).",
                "content": {"application/json": {"schema": self.output_ref}},
            })
        }
    }
}

/// The body schema of a REST route: the input's, without the fields its path gives.
fn rest_body(
    spec: &OperationSpec,
    variables: &[&str],
    components: &mut Map<String, Value>,
    input_ref: &Value,
    defs_prefix: &str,
) -> Value {
    if variables.is_empty() {
        return input_ref.clone();
    }
    let mut body: Value = (*spec.input_schema).clone();
    if let Some(properties) = body.get_mut("properties").and_then(Value::as_object_mut) {
        for variable in variables {
            properties.remove(*variable);
        }
    }
    if let Some(required) = body.get_mut("required").and_then(Value::as_array_mut) {
        required.retain(|name| !variables.iter().any(|variable| name == variable));
    }
    let body_key = format!("{}.Body", spec.id());
    add_component(components, &body_key, defs_prefix, &body)
}

/// Builds the whole document from the registry's current specs; `base_path` is where the
/// routes are mounted (`""` at the root), the document's `servers` entry.
pub(crate) fn document(
    registry: &OperationRegistry,
    info: &DocumentInfo,
    base_path: &str,
) -> Value {
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
    let server = if base_path.is_empty() { "/" } else { base_path };
    json!({
        "openapi": info.openapi.as_str(),
        "info": doc_info,
        "servers": [{"url": server, "description": "where these operations are served (relative to this document's host)"}],
        "paths": paths,
        "components": component_map,
    })
}
