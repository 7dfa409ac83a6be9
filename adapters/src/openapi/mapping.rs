//! Operation mapping: one opkit operation per HTTP operation of the document.
//!
//! For each operation this builds the [`OperationSpec`] (name, kind, description, input and
//! output schemas, an `openapi` extension with the method, path and `operationId`) and the
//! [`OperationPlan`] its handler follows (URL, parameters, body, `Accept`, credentials).
//! An operation that cannot be mapped becomes a [`SkippedOperation`] naming the pointer.
//! An operation served by opkit's own HTTP server is mapped by [`super::served`] instead.
//!
//! * Kind: `SUBSCRIPTION` when the success response offers `text/event-stream`; else
//!   `QUERY` for GET, HEAD and the 3.2 `QUERY` method; else `MUTATION`.
//! * Success response: the lowest `2xx` code, else `2XX`, else `default`.
//! * Input schema: an object whose properties are the parameters (by name; a name used in
//!   two locations, or a parameter named `body`, becomes `<in>_<name>`) and `body`;
//!   required ones are listed in `required`; `additionalProperties: false`. Path-item
//!   parameters apply unless the operation redefines the same name and location. Header
//!   parameters named `Accept`, `Content-Type` or `Authorization` are ignored (they come
//!   from the responses, the body and the security schemes).
//! * Output schema: the success response's JSON schema; `{type: string}` for text; a base64
//!   string for binary; Unknown (`true`) when the response has no content. For SSE: the
//!   schema of one event's data — the 3.2 `itemSchema`'s `data.contentSchema` (what FastAPI
//!   emits), else the `itemSchema` itself when it does not describe the event envelope, else
//!   a non-string `schema` of the media type; otherwise Unknown.

use super::auth::{self, AuthAction};
use super::body::{self, BodyKind, BodyPlan};
use super::bundle::{BudgetExceeded, Definitions, SchemaBundle};
use super::document::{Document, SpecVersion, join_pointer};
use super::error::{MapError, SkippedOperation};
use super::naming;
use super::normalize::{Normalization, Normalizer};
use super::options::OpenApiOptions;
use super::params::{Location, Style};
use super::refs::Resolver;
use super::response::MediaType;
use super::served;
use super::servers;
use super::sse::EventData;
use opkit::schema::{Schema, json_type_name};
use opkit::{OperationKind, OperationSpec};
use serde_json::{Map, Value, json};
use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;

/// The HTTP methods of a path item, in the order used for naming.
const METHODS: [&str; 9] = [
    "get", "put", "post", "delete", "options", "head", "patch", "trace", "query",
];

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
    /// `CallError`s (see [`super::served`]).
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
    let found = find_operations(resolver, &mut skipped);
    // An operation offering JSON (or any other type) and SSE also gets a `_stream` twin; its
    // name takes part in the collision handling like any other.
    let twins: Vec<bool> = found
        .iter()
        .map(|op| offers_both_modes(resolver, op))
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
/// definitions its `$ref`s name.
fn share_definitions(mapped: &mut [Mapped], definitions: opkit::schema::Definitions) {
    if definitions.is_empty() {
        return;
    }
    let definitions = Arc::new(definitions);
    for Mapped { spec, .. } in mapped {
        for schema in [&mut spec.input_schema, &mut spec.output_schema] {
            if !schema.is_unknown() {
                let root = std::mem::replace(schema, Schema::new(Value::Bool(true)));
                *schema = Schema::with_definitions(root.into_value(), definitions.clone());
            }
        }
    }
}

fn find_operations<'a>(
    resolver: Resolver<'a>,
    skipped: &mut Vec<SkippedOperation>,
) -> Vec<Found<'a>> {
    let mut found = Vec::new();
    let Some(Value::Object(paths)) = resolver.root.get("paths") else {
        return found;
    };
    let mut keys: Vec<&String> = paths.keys().collect();
    keys.sort();
    for path in keys {
        if !path.starts_with('/') {
            continue; // `x-` extensions and malformed keys
        }
        let pointer = join_pointer("/paths", path);
        let (item, item_pointer) = match resolver.deref(&paths[path.as_str()], &pointer) {
            Ok((item, item_pointer, _)) if item.is_object() => (item, item_pointer),
            Ok((item, item_pointer, _)) => {
                skipped.push(SkippedOperation {
                    method: "*".into(),
                    path: path.clone(),
                    pointer: item_pointer,
                    reason: format!(
                        "a path item must be an object, found {}",
                        json_type_name(item)
                    ),
                });
                continue;
            }
            Err(error) => {
                skipped.push(SkippedOperation {
                    method: "*".into(),
                    path: path.clone(),
                    pointer: error.pointer,
                    reason: error.message,
                });
                continue;
            }
        };
        for method in METHODS {
            if method == "query" && resolver.version < SpecVersion::V3_2 {
                continue;
            }
            if let Some(operation) = item.get(method) {
                if served::is_alias(operation) {
                    // opkit documents the `POST` twin of a `GET` operation: the canonical
                    // operation is imported instead.
                    continue;
                }
                found.push(Found {
                    method: method.to_owned(),
                    path: path.clone(),
                    pointer: join_pointer(&item_pointer, method),
                    operation,
                    path_item: item,
                    path_item_pointer: item_pointer.clone(),
                });
            }
        }
        if resolver.version >= SpecVersion::V3_2
            && let Some(Value::Object(extra)) = item.get("additionalOperations")
        {
            let mut methods: Vec<&String> = extra.keys().collect();
            methods.sort();
            for method in methods {
                found.push(Found {
                    method: method.clone(),
                    path: path.clone(),
                    pointer: join_pointer(
                        &join_pointer(&item_pointer, "additionalOperations"),
                        method,
                    ),
                    operation: &extra[method.as_str()],
                    path_item: item,
                    path_item_pointer: item_pointer.clone(),
                });
            }
        }
    }
    found
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
    let label = format!("{method_upper} {}", op.path);

    // Servers.
    let base_url = match &options.base_url {
        Some(base) => servers::trim_base(base),
        None => {
            let empty = Value::Array(Vec::new());
            let candidates = [
                (
                    operation.get("servers").unwrap_or(&empty),
                    join_pointer(&op.pointer, "servers"),
                ),
                (
                    op.path_item.get("servers").unwrap_or(&empty),
                    join_pointer(&op.path_item_pointer, "servers"),
                ),
                (
                    doc.root.get("servers").unwrap_or(&empty),
                    "/servers".to_owned(),
                ),
            ];
            servers::base_url(
                &candidates,
                &options.server_variables,
                doc.location.as_ref(),
            )?
        }
    };

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

    // Parameters.
    let mut input_bundle = SchemaBundle::new(defs);
    let raw_params = collect_parameters(resolver, op)?;
    let mut properties = Map::new();
    let mut required = Vec::new();
    let mut taken: HashSet<String> = HashSet::new();
    let (body_value, body_pointer) = match operation.get("requestBody") {
        Some(value) if !matches!(op.method.as_str(), "get" | "head") => {
            (Some(value), join_pointer(&op.pointer, "requestBody"))
        }
        _ => (None, String::new()),
    };
    if body_value.is_some() {
        taken.insert("body".to_owned());
    }
    let mut params = Vec::new();
    for (param, pointer, overrides) in raw_params {
        let (plan, schema, is_required) =
            map_parameter(&mut input_bundle, param, &pointer, &overrides)?;
        let Some(mut plan) = plan else { continue };
        let mut property = plan.name.clone();
        if taken.contains(&property) {
            property = format!("{}_{}", plan.location.as_str(), plan.name);
            let base = property.clone();
            let mut n = 2;
            while taken.contains(&property) {
                property = format!("{base}_{n}");
                n += 1;
            }
        }
        taken.insert(property.clone());
        plan.property = property.clone();
        if is_required {
            required.push(Value::String(property.clone()));
        }
        properties.insert(property, schema);
        params.push(plan);
    }
    // Every `{name}` of the path template needs a path parameter.
    for template in template_names(&op.path) {
        if !params
            .iter()
            .any(|p| p.location == Location::Path && p.name == template)
        {
            return Err(MapError::new(
                &op.pointer,
                format!(
                    "the path parameter `{template}` of {} is not declared",
                    op.path
                ),
            ));
        }
    }

    // Body.
    let mut body = None;
    if let Some(value) = body_value {
        let (request_body, rb_pointer, _) = resolver.deref(value, &body_pointer)?;
        let content = request_body
            .get("content")
            .and_then(Value::as_object)
            .ok_or_else(|| {
                MapError::new(
                    join_pointer(&rb_pointer, "content"),
                    "a request body needs a `content` map",
                )
            })?;
        if let Some(key) = content
            .keys()
            .min_by_key(|key| (body::rank(key), key.as_str()))
        {
            let media_pointer = join_pointer(&join_pointer(&rb_pointer, "content"), key);
            let media = &content[key.as_str()];
            let mut kind = body::kind_for(key);
            let mut schema = match media.get("schema") {
                Some(schema) => {
                    input_bundle.schema(schema, &join_pointer(&media_pointer, "schema"))?
                }
                None => match kind {
                    BodyKind::Text => json!({"type": "string"}),
                    BodyKind::Raw => json!({}),
                    _ => json!({}),
                },
            };
            match &mut kind {
                BodyKind::Raw => {
                    schema = json!({"type": "string", "contentEncoding": "base64", "description": format!("The {key} body, base64-encoded.")});
                }
                BodyKind::Form { styled } => {
                    if let Some(Value::Object(encoding)) = media.get("encoding") {
                        for (prop, entry) in encoding {
                            if entry.get("style").is_some()
                                || entry.get("explode").is_some()
                                || entry.get("allowReserved").is_some()
                            {
                                let style = entry
                                    .get("style")
                                    .and_then(Value::as_str)
                                    .and_then(Style::parse)
                                    .unwrap_or(Style::Form);
                                let explode = entry
                                    .get("explode")
                                    .and_then(Value::as_bool)
                                    .unwrap_or(style.default_explode());
                                let reserved = entry
                                    .get("allowReserved")
                                    .and_then(Value::as_bool)
                                    .unwrap_or(false);
                                styled.insert(prop.clone(), (style, explode, reserved));
                            }
                        }
                    }
                }
                BodyKind::Multipart {
                    binary,
                    content_types,
                } => {
                    if let Some(Value::Object(encoding)) = media.get("encoding") {
                        for (prop, entry) in encoding {
                            if let Some(content_type) =
                                entry.get("contentType").and_then(Value::as_str)
                            {
                                content_types.insert(
                                    prop.clone(),
                                    content_type
                                        .split(',')
                                        .next()
                                        .unwrap_or("")
                                        .trim()
                                        .to_owned(),
                                );
                            }
                        }
                    }
                    if let Some(raw) = media.get("schema") {
                        *binary = binary_properties(resolver, raw, &media_pointer);
                    }
                    mark_base64(&mut schema, binary);
                }
                BodyKind::Json | BodyKind::Text => {}
            }
            if let Some(description) = request_body.get("description").and_then(Value::as_str)
                && let Value::Object(map) = &mut schema
                && !map.contains_key("description")
            {
                map.insert("description".into(), Value::String(description.to_owned()));
            }
            if request_body
                .get("required")
                .and_then(Value::as_bool)
                .unwrap_or(false)
            {
                required.push(json!("body"));
            }
            properties.insert("body".into(), schema);
            body = Some(BodyPlan {
                content_type: body::concrete_content_type(key),
                kind,
            });
        }
    }
    let mut input =
        json!({"type": "object", "properties": properties, "additionalProperties": false});
    if !required.is_empty() {
        input["required"] = Value::Array(required);
    }
    let input = input_bundle.finish_shared(input)?;

    // Responses: one operation, or two when the success response offers both SSE and
    // another media type (the unary one and its `_stream` twin).
    let responses_pointer = join_pointer(&op.pointer, "responses");
    let success = match operation.get("responses") {
        Some(Value::Object(responses)) => match success_response(responses) {
            Some(code) => {
                let pointer = join_pointer(&responses_pointer, code);
                Some(resolver.deref(&responses[code], &pointer)?)
            }
            None => None,
        },
        Some(other) => {
            return Err(MapError::new(
                &responses_pointer,
                format!(
                    "`responses` must be an object, found {}",
                    json_type_name(other)
                ),
            ));
        }
        None => None,
    };
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
        let mut output_bundle = SchemaBundle::new(defs);
        let (output, accept, sse) = match &success {
            Some((response, response_pointer, _)) => {
                response_output(&mut output_bundle, response, response_pointer, streaming)?
            }
            None => (Value::Bool(true), None, None),
        };
        // The schema the pipeline casts to refers into the shared definitions; one moved to
        // the extension (the pipeline does not cast) is a self-contained copy.
        let mut output = if options.normalization == Normalization::On {
            output_bundle.finish_shared(output)?
        } else {
            output_bundle.finish(output)?
        };
        let id = format!("{}.{name}", options.namespace);
        let declared = !opkit::schema::is_unknown(&output);
        let mut moved_schema = None;
        if options.normalization != Normalization::On && declared {
            // The pipeline would cast: the declared schema moves to the extension.
            moved_schema = Some(std::mem::replace(&mut output, Value::Bool(true)));
        }
        // The normalizer rebuilds the schema at the first reply rather than holding a copy.
        let source = (declared && options.normalization != Normalization::Off)
            .then_some(success.as_ref())
            .flatten()
            .map(|(_, response_pointer, _)| OutputSource {
                doc: doc.clone(),
                response_pointer: response_pointer.clone(),
                streaming: sse.is_some(),
            });
        let normalizer = Arc::new(Normalizer::new(options.normalization, id, source));
        let kind = if sse.is_some() {
            OperationKind::Subscription
        } else if matches!(op.method.as_str(), "get" | "head" | "query") {
            OperationKind::Query
        } else {
            OperationKind::Mutation
        };
        let mut spec = OperationSpec::new(options.namespace.clone(), name, kind)
            .input_schema(input.clone())
            .output_schema(output)
            .origin(format!("OpenAPI {label}"));
        if let Some(description) = describe(operation) {
            spec = spec.description(description);
        }
        let mut extension = json!({"method": method_upper, "path": op.path, "pointer": op.pointer, "baseUrl": base_url});
        if let Some(id) = operation.get("operationId") {
            extension["operationId"] = id.clone();
        }
        if operation.get("deprecated") == Some(&Value::Bool(true)) {
            extension["deprecated"] = Value::Bool(true);
        }
        if let Some(other) = twin_names.iter().find(|n| **n != spec.name) {
            // The operation's other mode: `stream` names the subscription, `unary` the call.
            extension[if sse.is_some() { "unary" } else { "stream" }] =
                json!(format!("{}.{other}", options.namespace));
        }
        if let Some(schema) = moved_schema {
            extension["outputSchema"] = schema;
        }
        spec = spec.extension("openapi", extension);
        let plan = OperationPlan {
            label: label.clone(),
            operation_id: spec.id().to_string(),
            method: method.clone(),
            path: op.path.clone(),
            base_url: base_url.clone(),
            params: params.clone(),
            body: body.clone(),
            accept,
            auth: auth::resolve(resolver, operation.get("security"), &options.auth),
            headers: options
                .headers
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            sse,
            normalizer,
            served: false,
        };
        out.push(Mapped { spec, plan });
    }
    Ok(out)
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
        let (schema, _, _) = response_output(
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

/// `true` when the success response offers `text/event-stream` and another media type:
/// the operation is imported twice, as a call and as a subscription.
fn offers_both_modes(resolver: Resolver<'_>, op: &Found<'_>) -> bool {
    let Some(Value::Object(responses)) = op.operation.get("responses") else {
        return false;
    };
    let Some(code) = success_response(responses) else {
        return false;
    };
    let Ok((response, _, _)) = resolver.deref(&responses[code], &op.pointer) else {
        return false;
    };
    let Some(Value::Object(content)) = response.get("content") else {
        return false;
    };
    let sse = content
        .keys()
        .filter(|key| MediaType::parse(key).is_event_stream())
        .count();
    sse > 0 && content.len() > sse
}

/// A parameter object, its pointer and the reference's overrides.
type RawParameter<'a> = (&'a Value, String, Map<String, Value>);

/// Path-item parameters overridden by the operation's (same name and location).
fn collect_parameters<'a>(
    resolver: Resolver<'a>,
    op: &Found<'a>,
) -> Result<Vec<RawParameter<'a>>, MapError> {
    let mut out: Vec<RawParameter<'a>> = Vec::new();
    let lists = [
        (
            op.path_item.get("parameters"),
            join_pointer(&op.path_item_pointer, "parameters"),
        ),
        (
            op.operation.get("parameters"),
            join_pointer(&op.pointer, "parameters"),
        ),
    ];
    for (list, list_pointer) in lists {
        let Some(list) = list else { continue };
        let list = list.as_array().ok_or_else(|| {
            MapError::new(
                &list_pointer,
                format!(
                    "`parameters` must be an array, found {}",
                    json_type_name(list)
                ),
            )
        })?;
        for (i, raw) in list.iter().enumerate() {
            let pointer = join_pointer(&list_pointer, &i.to_string());
            let (param, param_pointer, overrides) = resolver.deref(raw, &pointer)?;
            let key = (param.get("name").cloned(), param.get("in").cloned());
            out.retain(|(existing, _, _)| {
                (existing.get("name").cloned(), existing.get("in").cloned()) != key
            });
            out.push((param, param_pointer, overrides));
        }
    }
    Ok(out)
}

/// Maps one parameter: its plan (`None` when ignored), input schema and requiredness.
fn map_parameter<'a>(
    bundle: &mut SchemaBundle<'_, 'a>,
    param: &'a Value,
    pointer: &str,
    overrides: &Map<String, Value>,
) -> Result<(Option<ParamPlan>, Value, bool), MapError> {
    let name = param.get("name").and_then(Value::as_str).ok_or_else(|| {
        MapError::new(
            join_pointer(pointer, "name"),
            "a parameter needs a string `name`",
        )
    })?;
    let location_text = param
        .get("in")
        .and_then(Value::as_str)
        .ok_or_else(|| MapError::new(join_pointer(pointer, "in"), "a parameter needs `in`"))?;
    let location = Location::parse(location_text).ok_or_else(|| {
        MapError::new(
            join_pointer(pointer, "in"),
            format!("unknown parameter location {location_text:?}"),
        )
    })?;
    if location == Location::Header
        && ["accept", "content-type", "authorization"].contains(&name.to_ascii_lowercase().as_str())
    {
        return Ok((None, Value::Null, false));
    }
    let style = match param.get("style") {
        None => location.default_style(),
        Some(value) => value.as_str().and_then(Style::parse).ok_or_else(|| {
            MapError::new(
                join_pointer(pointer, "style"),
                format!("unknown style {value}"),
            )
        })?,
    };
    if location != Location::QueryString && !style.allowed_in(location) {
        return Err(MapError::new(
            join_pointer(pointer, "style"),
            format!(
                "style {:?} cannot be used for a {} parameter",
                param["style"],
                location.as_str()
            ),
        ));
    }
    let explode = param
        .get("explode")
        .and_then(Value::as_bool)
        .unwrap_or(style.default_explode());
    let allow_reserved = param
        .get("allowReserved")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let (mut schema, content) = match (param.get("schema"), param.get("content")) {
        (Some(schema), _) => (
            bundle.schema(schema, &join_pointer(pointer, "schema"))?,
            None,
        ),
        (None, Some(Value::Object(content))) => match content.iter().next() {
            Some((media, entry)) => {
                let media_pointer = join_pointer(&join_pointer(pointer, "content"), media);
                let schema = match entry.get("schema") {
                    Some(schema) => {
                        bundle.schema(schema, &join_pointer(&media_pointer, "schema"))?
                    }
                    None => json!({}),
                };
                (schema, Some(media.clone()))
            }
            None => (json!({}), None),
        },
        _ => (json!({}), None),
    };
    if let Value::Object(map) = &mut schema {
        let description = overrides
            .get("description")
            .or_else(|| param.get("description"));
        if let Some(description) = description
            && !map.contains_key("description")
        {
            map.insert("description".into(), description.clone());
        }
        if param.get("deprecated") == Some(&Value::Bool(true)) {
            map.insert("deprecated".into(), Value::Bool(true));
        }
    }
    let required = location == Location::Path
        || param
            .get("required")
            .and_then(Value::as_bool)
            .unwrap_or(false);
    let plan = ParamPlan {
        name: name.to_owned(),
        location,
        property: String::new(),
        style,
        explode,
        allow_reserved,
        content,
    };
    Ok((Some(plan), schema, required))
}

/// The `{name}`s of a path template.
pub(crate) fn template_names(path: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = path;
    while let Some(open) = rest.find('{') {
        let after = &rest[open + 1..];
        let Some(close) = after.find('}') else { break };
        names.push(after[..close].to_owned());
        rest = &after[close + 1..];
    }
    names
}

/// The success response code: lowest `2xx`, else `2XX`, else `default`.
fn success_response(responses: &Map<String, Value>) -> Option<&str> {
    let mut codes: Vec<&str> = responses
        .keys()
        .map(String::as_str)
        .filter(|code| {
            code.len() == 3 && code.starts_with('2') && code.bytes().all(|b| b.is_ascii_digit())
        })
        .collect();
    codes.sort_unstable();
    codes
        .first()
        .copied()
        .or_else(|| {
            responses
                .keys()
                .map(String::as_str)
                .find(|code| code.eq_ignore_ascii_case("2XX"))
        })
        .or_else(|| responses.contains_key("default").then_some("default"))
}

/// Output schema, `Accept` header and SSE mode of a success response.
fn response_output<'a>(
    bundle: &mut SchemaBundle<'_, 'a>,
    response: &'a Value,
    pointer: &str,
    streaming: bool,
) -> Result<(Value, Option<String>, Option<EventData>), MapError> {
    let Some(Value::Object(content)) = response.get("content") else {
        return Ok((Value::Bool(true), None, None));
    };
    let content_pointer = join_pointer(pointer, "content");
    let media = |key: &str| MediaType::parse(key);
    if streaming && let Some(key) = content.keys().find(|key| media(key).is_event_stream()) {
        let entry = &content[key.as_str()];
        let entry_pointer = join_pointer(&content_pointer, key);
        let (schema, mode) = sse_item_schema(bundle, entry, &entry_pointer)?;
        return Ok((schema, Some("text/event-stream".to_owned()), Some(mode)));
    }
    let chosen = content
        .keys()
        .filter(|key| !media(key).is_event_stream())
        .min_by_key(|key| {
            let m = media(key);
            let rank = if m.essence == "application/json" {
                0
            } else if m.is_json() {
                1
            } else if m.is_text() {
                2
            } else if m.essence.contains('*') {
                4
            } else {
                3
            };
            (rank, key.as_str())
        })
        .map(String::as_str);
    let Some(key) = chosen else {
        return Ok((Value::Bool(true), None, None));
    };
    let entry = &content[key];
    let entry_pointer = join_pointer(&content_pointer, key);
    let m = media(key);
    let schema = match entry.get("schema") {
        Some(schema) if m.is_json() || m.is_text() || m.essence.contains('*') => {
            bundle.schema(schema, &join_pointer(&entry_pointer, "schema"))?
        }
        None if m.is_json() || m.essence.contains('*') => Value::Bool(true),
        _ if m.is_text() => json!({"type": "string"}),
        _ => json!({"type": "string", "contentEncoding": "base64", "contentMediaType": m.essence}),
    };
    let accept = (!m.essence.contains('*')).then(|| key.to_owned());
    Ok((schema, accept, None))
}

/// The schema of one SSE event's data, and how to read it.
fn sse_item_schema<'a>(
    bundle: &mut SchemaBundle<'_, 'a>,
    entry: &'a Value,
    pointer: &str,
) -> Result<(Value, EventData), MapError> {
    if let Some(item) = entry.get("itemSchema") {
        let item_pointer = join_pointer(pointer, "itemSchema");
        let data = item.get("properties").and_then(|p| p.get("data"));
        return match data {
            Some(data) => {
                let data_pointer = join_pointer(&join_pointer(&item_pointer, "properties"), "data");
                if let Some(content_schema) = data.get("contentSchema") {
                    let schema = bundle.schema(
                        content_schema,
                        &join_pointer(&data_pointer, "contentSchema"),
                    )?;
                    Ok((schema, EventData::Json))
                } else if data
                    .get("contentMediaType")
                    .and_then(Value::as_str)
                    .is_some_and(|t| MediaType::parse(t).is_json())
                {
                    Ok((Value::Bool(true), EventData::Json))
                } else if data
                    .get("contentMediaType")
                    .and_then(Value::as_str)
                    .is_some_and(|t| MediaType::parse(t).is_text())
                {
                    Ok((Value::Bool(true), EventData::Text))
                } else if data.get("type").and_then(Value::as_str) == Some("string") {
                    Ok((Value::Bool(true), EventData::Sniff))
                } else {
                    let schema = bundle.schema(data, &data_pointer)?;
                    Ok((schema, EventData::Json))
                }
            }
            // Not the generic event shape: the item schema describes the data itself.
            None if item.get("properties").is_some() || item.get("type").is_some() => {
                let schema = bundle.schema(item, &item_pointer)?;
                Ok((schema, EventData::Json))
            }
            None => Ok((Value::Bool(true), EventData::Sniff)),
        };
    }
    match entry.get("schema") {
        Some(schema)
            if schema.get("type").and_then(Value::as_str) != Some("string")
                && !opkit::schema::is_unknown(schema) =>
        {
            let schema = bundle.schema(schema, &join_pointer(pointer, "schema"))?;
            Ok((schema, EventData::Json))
        }
        _ => Ok((Value::Bool(true), EventData::Sniff)),
    }
}

/// Properties of a multipart schema that carry binary content.
fn binary_properties(resolver: Resolver<'_>, schema: &Value, pointer: &str) -> BTreeSet<String> {
    let v30 = resolver.version == SpecVersion::V3_0;
    let mut out = BTreeSet::new();
    let Ok((schema, _, _)) = resolver.deref(schema, pointer) else {
        return out;
    };
    let mut objects = vec![schema];
    if let Some(Value::Array(members)) = schema.get("allOf") {
        for member in members {
            if let Ok((member, _, _)) = resolver.deref(member, pointer) {
                objects.push(member);
            }
        }
    }
    for object in objects {
        let Some(Value::Object(properties)) = object.get("properties") else {
            continue;
        };
        for (name, property) in properties {
            let Ok((property, _, _)) = resolver.deref(property, pointer) else {
                continue;
            };
            let items = property
                .get("items")
                .and_then(|items| resolver.deref(items, pointer).ok())
                .map(|(items, _, _)| items);
            if body::is_binary_schema(property, v30)
                || items.is_some_and(|items| body::is_binary_schema(items, v30))
            {
                out.insert(name.clone());
            }
        }
    }
    out
}

/// Adds `contentEncoding: base64` to binary properties of a bundled multipart schema.
fn mark_base64(schema: &mut Value, binary: &BTreeSet<String>) {
    let Some(Value::Object(properties)) = schema.get_mut("properties") else {
        return;
    };
    for name in binary {
        let Some(Value::Object(property)) = properties.get_mut(name) else {
            continue;
        };
        let target = match property.get_mut("items") {
            Some(Value::Object(items)) => items,
            _ => property,
        };
        target.insert("contentEncoding".into(), json!("base64"));
    }
}
