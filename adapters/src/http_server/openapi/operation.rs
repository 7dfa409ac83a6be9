//! An operation's part of the document: its schemas among the components, what every
//! documented route of it shares (summary, responses, security, extensions) and its RPC route
//! (`/ops/<id>`: `GET` with query parameters or `POST` with a body).

use super::errors::{kind_response, response_ref};
use super::{DocumentInfo, OpenApiVersion, OperationDoc, required_scopes};
use crate::http_server::query::{ParamStyle, QueryShape};
use crate::http_server::refs::{component_rewriter, rewrite_refs};
use crate::http_server::shared_components::{SharedComponents, query_view};
use opkit::schema::pointer;
use opkit::{OperationKind, OperationSpec};
use serde_json::{Map, Value, json};

/// A property schema (written relative to the input schema) with its local refs pointing
/// into the input's component.
pub(super) fn property_schema(schema: &Value, input_key: &str, defs_prefix: &str) -> Value {
    let mut schema = schema.clone();
    rewrite_refs(&mut schema, &mut component_rewriter(input_key, defs_prefix));
    schema
}

pub(super) fn parameters(shape: &QueryShape, input_key: &str, defs_prefix: &str) -> Vec<Value> {
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

impl<'a> OperationDoc<'a> {
    /// Adds the operation's input, output and envelope schemas to `components`.
    pub(super) fn new(
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
    pub(super) fn base(&self, operation_id: String, method: &str) -> Value {
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
    pub(super) fn rpc(&self) -> Vec<(String, Value)> {
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
}
