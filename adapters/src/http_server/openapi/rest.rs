//! An operation's REST route in the document (`#[operation(http(method = .., path = ..))]`):
//! its path variables and query parameters, its body without the fields the path gives, and
//! its success response (the envelope or the bare output).

use super::errors::response_ref;
use super::operation::{parameters, property_schema};
use super::{OperationDoc, RestOperation};
use crate::http_server::query::QueryShape;
use crate::http_server::refs::add_component;
use crate::http_server::route::HttpRoute;
use crate::http_server::shared_components::query_view;
use opkit::OperationSpec;
use serde_json::{Map, Value, json};

impl OperationDoc<'_> {
    /// The REST route's operation, with its path and method.
    pub(super) fn rest(
        &self,
        route: &HttpRoute,
        components: &mut Map<String, Value>,
    ) -> RestOperation {
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
        let fields: Vec<&crate::http_server::query::QueryParam> = shape
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
    fn multipart_schema(&self, fields: &[&crate::http_server::query::QueryParam]) -> Value {
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
