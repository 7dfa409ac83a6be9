//! Operation mapping: one opkit operation per HTTP operation of the document.
//!
//! For each operation this builds the [`OperationSpec`] (name, kind, description, input and
//! output schemas, an `openapi` extension with the method, path and `operationId`) and the
//! [`OperationPlan`] its handler follows (URL, parameters, body, `Accept`, credentials).
//! An operation that cannot be mapped becomes a [`SkippedOperation`] naming the pointer.
//! An operation served by opkit's own HTTP server is mapped by [`served`] instead.
//!
//! * Kind: `SUBSCRIPTION` when the success response offers `text/event-stream`; else
//!   `QUERY` for GET, HEAD and the 3.2 `QUERY` method; else `MUTATION`.
//! * Success response: the lowest `2xx` code, else `2XX`, else `default` (a `tracing::warn!`
//!   when the lowest `2xx` declares no schema and another `2xx` does).
//! * Input schema: an object whose properties are the parameters (by name; a name used in
//!   two locations, or a parameter named `body`, becomes `<in>_<name>`) and `body`;
//!   required ones are listed in `required`; `additionalProperties: false`. Path-item
//!   parameters apply unless the operation redefines the same name and location. Header
//!   parameters named `Accept`, `Content-Type` or `Authorization` are ignored (they come
//!   from the responses, the body and the security schemes).
//! * Output schema: the success response's JSON schema; `{type: string}` for text; a base64
//!   string for binary; Unknown (`true`) when the response has no content. Of its media
//!   types JSON wins, then text, then others; within one class a type declaring a `schema`
//!   wins over one without. JSON content without any schema makes the output Unknown with a
//!   `tracing::warn!` naming the operation. For SSE: the
//!   schema of one event's data — the 3.2 `itemSchema`'s `data.contentSchema` (what FastAPI
//!   emits), else the `itemSchema` itself when it does not describe the event envelope, else
//!   a non-string `schema` of the media type; otherwise Unknown.
//!
//! [`map_operation`] runs the jobs in order, each in its own file: [`find`] lists the
//! operations, [`base_url`] picks the server, [`parameters`] maps the parameters and checks
//! the path template, [`request_body`] maps the body, [`responses`] the output of each mode.

mod base_url;
mod find;
mod parameters;
mod request_body;
mod responses;
mod served;

use super::auth::{self, AuthAction};
use super::body::BodyPlan;
use super::bundle::{BudgetExceeded, Definitions, SchemaBundle};
use super::document::Document;
use super::error::{MapError, SkippedOperation};
use super::naming;
use super::normalize::Normalizer;
use super::options::OpenApiOptions;
use super::params::{Location, Style};
use super::refs::Resolver;
use super::sse::EventData;
use opkit::schema::{Schema, json_type_name};
use opkit::{OperationKind, OperationSpec};
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// A parameter as the handler sends it.
#[derive(Debug, Clone)]
pub(crate) struct ParamPlan {
    pub name: String,
    pub location: Location,
    /// The input property holding the value.
    pub property: String,
    pub style: Style,
    pub explode: bool,
    pub allow_reserved: bool,
    /// For `content` parameters: the media type the value is serialized with.
    pub content: Option<String>,
}

/// Everything a handler needs to send one operation's requests.
#[derive(Debug, Clone)]
pub(crate) struct OperationPlan {
    /// `GET /pets/{petId}`, for messages.
    pub label: String,
    /// The imported operation's id (`namespace.name`), for its client span.
    pub operation_id: String,
    pub method: reqwest::Method,
    pub path: String,
    pub base_url: String,
    pub params: Vec<ParamPlan>,
    pub body: Option<BodyPlan>,
    pub accept: Option<String>,
    pub auth: Vec<AuthAction>,
    pub headers: Vec<(String, String)>,
    /// `Some` for subscriptions: how each event's data is read.
    pub sse: Option<EventData>,
    /// What happens to the replies' data.
    pub normalizer: Arc<Normalizer>,
    /// Served by opkit's HTTP server: the input is the body, replies are envelopes, failures
    /// `CallError`s (see [`served`]).
    pub served: bool,
}

/// One mapped operation.
pub(crate) struct Mapped {
    pub spec: OperationSpec,
    pub plan: OperationPlan,
}

/// One HTTP operation found in the document.
pub(crate) struct Found<'a> {
    pub method: String,
    pub path: String,
    pub pointer: String,
    pub operation: &'a Value,
    pub path_item: &'a Value,
    pub path_item_pointer: String,
}

/// The schema budget ran out after `operations` operations.
pub(crate) struct Exceeded {
    pub limit: usize,
    pub operations: usize,
}

/// Maps every operation of the document; stops when the schema budget is spent.
pub(crate) fn map_document(
    doc: &Arc<Document>,
    options: &OpenApiOptions,
) -> Result<(Vec<Mapped>, Vec<SkippedOperation>), Exceeded> {
    let resolver = Resolver {
        root: &doc.root,
        version: doc.version,
    };
    let budget = options
        .max_schema_nodes
        .unwrap_or_else(|| super::options::automatic_schema_budget(&doc.root));
    let defs = Definitions::new(resolver, budget);
    let mut skipped = Vec::new();
    let found = find::find_operations(resolver, &mut skipped);
    // An operation offering JSON (or any other type) and SSE also gets a `_stream` twin; its
    // name takes part in the collision handling like any other.
    let twins: Vec<bool> = found
        .iter()
        .map(|op| responses::offers_both_modes(resolver, op))
        .collect();
    let mut bases: Vec<String> = Vec::with_capacity(found.len());
    for (op, twin) in found.iter().zip(&twins) {
        let base = naming::base_name(
            op.operation.get("operationId").and_then(Value::as_str),
            &op.method,
            &op.path,
        );
        if *twin {
            bases.push(format!("{base}_stream"));
        }
        bases.push(base);
    }
    let mut names = naming::dedupe(&bases).into_iter();
    let mut mapped = Vec::new();
    for (op, twin) in found.iter().zip(twins) {
        let twin_name = if twin { names.next() } else { None };
        let name = names.next().unwrap_or_default();
        let result = map_operation(doc, &defs, op, (name, twin_name), options);
        defs.check_budget()
            .map_err(|BudgetExceeded { limit }| Exceeded {
                limit,
                operations: mapped.len() + skipped.len(),
            })?;
        match result {
            Ok(result) => mapped.extend(result),
            Err(error) => skipped.push(SkippedOperation {
                method: op.method.to_ascii_uppercase(),
                path: op.path.clone(),
                pointer: error.pointer,
                reason: error.message,
            }),
        }
    }
    tracing::debug!(
        schema_nodes = defs.used(),
        budget,
        "OpenAPI schemas bundled"
    );
    share_definitions(&mut mapped, defs.into_shared());
    Ok((mapped, skipped))
}

/// Points every operation schema that is not Unknown at the import's one copy of the
/// definitions its `$ref`s name, and the normalizer that casts replies at the output schema.
fn share_definitions(mapped: &mut [Mapped], definitions: opkit::schema::Definitions) {
    if definitions.is_empty() {
        return;
    }
    let definitions = Arc::new(definitions);
    for Mapped { spec, plan } in mapped {
        for schema in [&mut spec.input_schema, &mut spec.output_schema] {
            if !schema.is_unknown() {
                let root = std::mem::replace(schema, Schema::new(Value::Bool(true)));
                *schema = Schema::with_definitions(root.into_value(), definitions.clone());
            }
        }
        plan.normalizer.share(&spec.output_schema);
    }
}

fn map_operation<'a>(
    doc: &'a Arc<Document>,
    defs: &Definitions<'a>,
    op: &Found<'a>,
    (name, twin): (String, Option<String>),
    options: &OpenApiOptions,
) -> Result<Vec<Mapped>, MapError> {
    let operation = op.operation.as_object().ok_or_else(|| {
        MapError::new(
            &op.pointer,
            format!(
                "an operation must be an object, found {}",
                json_type_name(op.operation)
            ),
        )
    })?;
    let method_upper = op.method.to_ascii_uppercase();
    let method = reqwest::Method::from_bytes(method_upper.as_bytes()).map_err(|_| {
        MapError::new(
            &op.pointer,
            format!("{:?} is not an HTTP method", op.method),
        )
    })?;
    let base_url = base_url::operation_base_url(doc, op, operation, options)?;
    let resolver = Resolver {
        root: &doc.root,
        version: doc.version,
    };
    if let Some(served) = served::Served::of(op.operation)
        && let Some(mapped) = served::map(
            resolver,
            defs,
            op,
            &served,
            name.clone(),
            base_url.clone(),
            options,
        )?
    {
        return Ok(vec![mapped]);
    }

    let (input, params, body) = map_input(defs, resolver, op, operation)?;
    let request = RequestSide {
        operation,
        label: format!("{method_upper} {}", op.path),
        method,
        base_url,
        input,
        params,
        body,
    };

    // One operation, or two when the success response offers both SSE and another media
    // type (the unary one and its `_stream` twin).
    let success = responses::success(resolver, op, operation)?;
    let modes: Vec<(String, bool)> = match twin {
        Some(twin) => vec![(name, false), (twin, true)],
        None => vec![(name, true)],
    };
    let twin_names: Vec<String> = if modes.len() == 2 {
        modes.iter().map(|(name, _)| name.clone()).collect()
    } else {
        Vec::new()
    };
    let mut out = Vec::with_capacity(modes.len());
    for (name, streaming) in modes {
        let id = format!("{}.{name}", options.namespace);
        let output = responses::output(doc, defs, success.as_ref(), streaming, id, options)?;
        let other = twin_names.iter().find(|other| **other != name);
        out.push(mapped_mode(
            resolver, op, &request, name, other, output, options,
        ));
    }
    Ok(out)
}

/// An operation's input schema (one property per parameter, and `body` when it takes a
/// request body, required when the body is), with its parameters' plans and its body's.
fn map_input<'a>(
    defs: &Definitions<'a>,
    resolver: Resolver<'a>,
    op: &Found<'a>,
    operation: &'a Map<String, Value>,
) -> Result<(Value, Vec<ParamPlan>, Option<BodyPlan>), MapError> {
    let mut input_bundle = SchemaBundle::new(defs);
    let body_value = request_body::declared(op, operation);
    let mut inputs =
        parameters::map_parameters(&mut input_bundle, resolver, op, body_value.is_some())?;
    parameters::check_path_template(op, &inputs.params)?;
    let mut body = None;
    if let Some((value, pointer)) = body_value
        && let Some(mapped) =
            request_body::map_request_body(&mut input_bundle, resolver, value, &pointer)?
    {
        if mapped.required {
            inputs.required.push(json!("body"));
        }
        inputs.properties.insert("body".into(), mapped.schema);
        body = Some(mapped.plan);
    }
    let mut input =
        json!({"type": "object", "properties": inputs.properties, "additionalProperties": false});
    if !inputs.required.is_empty() {
        input["required"] = Value::Array(inputs.required);
    }
    Ok((input_bundle.finish_shared(input)?, inputs.params, body))
}

/// What the modes of one operation share: the operation and the request they send.
struct RequestSide<'a> {
    operation: &'a Map<String, Value>,
    /// `GET /pets/{petId}`.
    label: String,
    method: reqwest::Method,
    base_url: String,
    input: Value,
    params: Vec<ParamPlan>,
    body: Option<BodyPlan>,
}

/// The spec and plan of one mode of an operation; `other` names its other mode, if any.
fn mapped_mode(
    resolver: Resolver<'_>,
    op: &Found<'_>,
    request: &RequestSide<'_>,
    name: String,
    other: Option<&String>,
    output: responses::Output,
    options: &OpenApiOptions,
) -> Mapped {
    let operation = request.operation;
    let kind = if output.sse.is_some() {
        OperationKind::Subscription
    } else if matches!(op.method.as_str(), "get" | "head" | "query") {
        OperationKind::Query
    } else {
        OperationKind::Mutation
    };
    let access = options
        .access
        .rule_for(&name, operation.get("x-opkit-access"));
    let mut spec = OperationSpec::new(options.namespace.clone(), name, kind)
        .input_schema(request.input.clone())
        .output_schema(output.schema)
        .access(access)
        .origin(format!("OpenAPI {}", request.label));
    if let Some(description) = describe(operation) {
        spec = spec.description(description);
    }
    let mut extension = json!({"method": request.method.as_str(), "path": op.path, "pointer": op.pointer, "baseUrl": request.base_url});
    if let Some(id) = operation.get("operationId") {
        extension["operationId"] = id.clone();
    }
    if operation.get("deprecated") == Some(&Value::Bool(true)) {
        extension["deprecated"] = Value::Bool(true);
    }
    if let Some(other) = other {
        // The operation's other mode: `stream` names the subscription, `unary` the call.
        extension[if output.sse.is_some() {
            "unary"
        } else {
            "stream"
        }] = json!(format!("{}.{other}", options.namespace));
    }
    if let Some(schema) = output.moved {
        extension["outputSchema"] = schema;
    }
    spec = spec.extension("openapi", extension);
    let plan = OperationPlan {
        label: request.label.clone(),
        operation_id: spec.id().to_string(),
        method: request.method.clone(),
        path: op.path.clone(),
        base_url: request.base_url.clone(),
        params: request.params.clone(),
        body: request.body.clone(),
        accept: output.accept,
        auth: auth::resolve(resolver, operation.get("security"), &options.auth),
        headers: options
            .headers
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        sse: output.sse,
        normalizer: output.normalizer,
        served: false,
    };
    Mapped { spec, plan }
}

/// The description of an operation: its summary and description.
pub(crate) fn describe(operation: &Map<String, Value>) -> Option<String> {
    let summary = operation
        .get("summary")
        .and_then(Value::as_str)
        .filter(|s| !s.trim().is_empty());
    let description = operation
        .get("description")
        .and_then(Value::as_str)
        .filter(|s| !s.trim().is_empty());
    match (summary, description) {
        (Some(summary), Some(description)) if summary.trim() != description.trim() => {
            Some(format!("{}\n\n{}", summary.trim(), description.trim()))
        }
        (Some(text), _) | (None, Some(text)) => Some(text.trim().to_owned()),
        (None, None) => None,
    }
}

/// Where an operation's output schema comes from, to build it again when it is needed.
pub(crate) struct OutputSource {
    pub doc: Arc<Document>,
    pub response_pointer: String,
    pub streaming: bool,
}

impl std::fmt::Debug for OutputSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Not the whole document.
        f.debug_struct("OutputSource")
            .field("response_pointer", &self.response_pointer)
            .field("streaming", &self.streaming)
            .finish_non_exhaustive()
    }
}

impl OutputSource {
    /// The output schema, built as the import built it (without warnings: the import gave
    /// them); `None` when it is Unknown or cannot be built.
    pub fn build(&self) -> Option<Value> {
        let resolver = Resolver {
            root: &self.doc.root,
            version: self.doc.version,
        };
        let response = self.doc.root.pointer(&self.response_pointer)?;
        let defs = Definitions::new(resolver, usize::MAX).quiet();
        let mut bundle = SchemaBundle::new(&defs);
        let (schema, _, _) = responses::response_output(
            &mut bundle,
            response,
            &self.response_pointer,
            self.streaming,
        )
        .ok()?;
        let schema = bundle.finish(schema).ok()?;
        (!opkit::schema::is_unknown(&schema)).then_some(schema)
    }
}

#[cfg(test)]
pub(super) mod tests {
    //! Small documents for the job functions' tests.

    use super::*;
    use crate::openapi::document::SpecVersion;

    /// A document read from a string (no location), its version from `openapi`.
    pub(crate) fn document(root: Value) -> Document {
        let version = match root["openapi"].as_str() {
            Some(v) if v.starts_with("3.0") => SpecVersion::V3_0,
            Some(v) if v.starts_with("3.2") => SpecVersion::V3_2,
            _ => SpecVersion::V3_1,
        };
        Document {
            root,
            version,
            location: None,
        }
    }

    /// The operation `method` of `path`.
    pub(crate) fn found<'a>(resolver: Resolver<'a>, path: &str, method: &str) -> Found<'a> {
        find::find_operations(resolver, &mut Vec::new())
            .into_iter()
            .find(|op| op.path == path && op.method == method)
            .unwrap_or_else(|| panic!("no {method} {path}"))
    }

    fn map_all(root: Value, options: &OpenApiOptions) -> Vec<Mapped> {
        let (mapped, skipped) = map_document(&Arc::new(document(root)), options)
            .ok()
            .unwrap();
        assert!(skipped.is_empty(), "{skipped:?}");
        mapped
    }

    #[test]
    fn an_operation_with_parameters_body_and_both_modes() {
        let root = json!({"openapi": "3.2.0", "info": {"title": "t", "version": "1"}, "paths": {"/pets/{id}": {"post": {
            "operationId": "feed", "summary": "Feed a pet.", "deprecated": true,
            "parameters": [{"name": "id", "in": "path", "schema": {"type": "integer"}}],
            "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object"}}}},
            "responses": {"200": {"content": {
                "application/json": {"schema": {"type": "string"}},
                "text/event-stream": {"itemSchema": {"type": "object"}}
            }}}
        }}}});
        let options = OpenApiOptions::new("pets").base_url("http://127.0.0.1:9/");
        let mapped = map_all(root, &options);
        let names: Vec<_> = mapped.iter().map(|m| m.spec.name.as_str()).collect();
        assert_eq!(names, ["feed", "feed_stream"]);
        let (call, stream) = (&mapped[0], &mapped[1]);
        assert_eq!(call.spec.kind, OperationKind::Mutation);
        assert_eq!(stream.spec.kind, OperationKind::Subscription);
        assert_eq!(
            call.spec.input_schema.as_value(),
            &json!({"type": "object", "additionalProperties": false, "required": ["id", "body"],
                "properties": {"id": {"type": "integer"}, "body": {"type": "object"}}})
        );
        assert_eq!(call.spec.description.as_deref(), Some("Feed a pet."));
        let extension = &call.spec.extensions["openapi"];
        assert_eq!(extension["method"], "POST");
        assert_eq!(extension["baseUrl"], "http://127.0.0.1:9");
        assert_eq!(extension["operationId"], "feed");
        assert_eq!(extension["deprecated"], true);
        assert_eq!(extension["stream"], "pets.feed_stream");
        assert_eq!(stream.spec.extensions["openapi"]["unary"], "pets.feed");
        assert_eq!(call.plan.label, "POST /pets/{id}");
        assert_eq!(call.plan.params[0].property, "id");
        assert_eq!(call.plan.accept.as_deref(), Some("application/json"));
        assert_eq!(stream.plan.accept.as_deref(), Some("text/event-stream"));
        assert!(call.plan.body.is_some() && stream.plan.sse.is_some());
    }

    #[test]
    fn unmappable_operations_are_skipped_with_their_pointer() {
        let root = json!({"openapi": "3.1.0", "info": {"title": "t", "version": "1"}, "paths": {
            "/a/{x}": {"get": {}},
            "/b": {"get": 7}
        }});
        let options = OpenApiOptions::new("t").base_url("http://127.0.0.1:9");
        let (mapped, skipped) = map_document(&Arc::new(document(root)), &options)
            .ok()
            .unwrap();
        assert!(mapped.is_empty());
        let pointers: Vec<_> = skipped.iter().map(|s| s.pointer.as_str()).collect();
        assert_eq!(pointers, ["/paths/~1a~1{x}/get", "/paths/~1b/get"]);
    }
}
