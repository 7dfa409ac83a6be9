//! Operations served by opkit's own HTTP server, imported back as the operations they are.
//!
//! opkit's HTTP server (`opkit_adapters::http_server`) documents each operation with
//! `x-opkit-id` and `x-opkit-kind`, answers with the whole `ResponseEnvelope` as the body,
//! fails with the `CallError` wire JSON, and streams subscriptions as one envelope per SSE
//! `message` event, then `event: complete` or `event: error`. A generic OpenAPI client sees
//! a correct document of exactly that. This import recognises those operations by the
//! extensions (an operation that has `x-opkit-id` and a known `x-opkit-kind`) and imports
//! each as the operation that was served, so importing what opkit serves gives back the
//! same operations and the same data:
//!
//! | served | imported |
//! |---|---|
//! | `x-opkit-alias: true` (the `POST` twin of a `GET` operation) | not imported (the canonical operation is) |
//! | `x-opkit-kind` | the kind, whatever the HTTP method |
//! | the `POST` request body's schema (`<id>.Input`) | the input schema, as it is: the input is the body, not `{"body": ..}` |
//! | `data` of the `ResponseEnvelope` response schema | the output schema |
//! | a `200` body `{data, meta}` | `data` is the served data (the served meta is dropped: the imported envelope's meta is the HTTP call's) |
//! | a non-2xx body `{code, message, details?, kind?}` | that `CallError`, as sent |
//! | an SSE `message` event | one item whose data is the served item's data |
//! | `event: complete` | the end of the stream (not an item) |
//! | `event: error` | the stream's error: that `CallError` |
//!
//! Every operation is called with `POST /ops/<id>` and the input as its JSON body, whatever
//! its kind: the server answers every kind there, JSON keeps the input's types exactly (a
//! query string does not), and no URL length limit applies. A dropped subscription stream is
//! therefore not resumed (a `POST` is not sent twice). The import's
//! [`Normalization`](crate::openapi::Normalization) applies as for any operation; the served data
//! was already normalized by the serving registry.
//!
//! An operation with the extensions but not the shapes above (a document edited by hand,
//! another server using the same names) is imported like any other operation. Its replies
//! are read by `served_replies`.

use super::{Found, Mapped, OperationPlan};
use crate::openapi::auth;
use crate::openapi::body::{BodyKind, BodyPlan};
use crate::openapi::bundle::{Definitions, SchemaBundle};
use crate::openapi::document::join_pointer;
use crate::openapi::error::MapError;
use crate::openapi::normalize::{Normalization, Normalizer};
use crate::openapi::options::OpenApiOptions;
use crate::openapi::refs::Resolver;
use crate::openapi::sse::EventData;
use opkit::{OperationKind, OperationSpec};
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::Arc;

/// The opkit id and kind an operation was served with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Served {
    pub id: String,
    pub kind: OperationKind,
}

impl Served {
    /// The opkit operation behind an HTTP operation, when its extensions name one.
    pub fn of(operation: &Value) -> Option<Self> {
        let id = operation.get("x-opkit-id")?.as_str()?;
        // The kind as the server wrote it (`OperationKind`'s wire names).
        let kind = OperationKind::deserialize(operation.get("x-opkit-kind")?).ok()?;
        Some(Self {
            id: id.to_owned(),
            kind,
        })
    }
}

/// `true` for the `POST` twin opkit documents beside a `GET` operation: not imported.
pub(crate) fn is_alias(operation: &Value) -> bool {
    operation.get("x-opkit-alias") == Some(&Value::Bool(true)) && Served::of(operation).is_some()
}

/// Maps a served operation; `Ok(None)` when the document does not have the shapes opkit
/// serves (then it is mapped like any operation).
pub(crate) fn map<'a>(
    resolver: Resolver<'a>,
    defs: &Definitions<'a>,
    site: &Found<'a>,
    served: &Served,
    name: String,
    base_url: String,
    options: &OpenApiOptions,
) -> Result<Option<Mapped>, MapError> {
    let Some((post, post_pointer, input)) = request(resolver, defs, site, served)? else {
        return Ok(None);
    };
    let Some(mut output) = output(resolver, defs, site, served)? else {
        return Ok(None);
    };
    let id = format!("{}.{name}", options.namespace);
    let mut extension = json!({
        "method": "POST",
        "path": site.path,
        "pointer": post_pointer,
        "baseUrl": base_url,
        "operationId": post.get("operationId").cloned().unwrap_or(Value::Null),
        "served": served.id,
    });
    if options.normalization != Normalization::On && !opkit::schema::is_unknown(&output) {
        // The pipeline would cast: the declared schema moves to the extension.
        extension["outputSchema"] = std::mem::replace(&mut output, Value::Bool(true));
    }
    let access = options
        .access
        .rule_for(&name, site.operation.get("x-opkit-access"));
    let mut spec = OperationSpec::new(options.namespace.clone(), name, served.kind)
        .input_schema(input)
        .output_schema(output)
        .access(access)
        .origin(format!(
            "OpenAPI POST {} (served by opkit as {})",
            site.path, served.id
        ))
        .extension("openapi", extension);
    if let Some(description) = site.operation.as_object().and_then(super::describe) {
        spec = spec.description(description);
    }
    let plan = plan(resolver, post, site, served, id, base_url, options);
    Ok(Some(Mapped { spec, plan }))
}

/// The request of a served operation: the `POST` operation of the same path and id (this
/// one, or its twin), its pointer and its input schema (its JSON body's).
fn request<'a>(
    resolver: Resolver<'a>,
    defs: &Definitions<'a>,
    site: &Found<'a>,
    served: &Served,
) -> Result<Option<(&'a Value, String, Value)>, MapError> {
    let (post, post_pointer) = if site.method == "post" {
        (site.operation, site.pointer.clone())
    } else {
        match site.path_item.get("post") {
            Some(post) if Served::of(post).as_ref() == Some(served) => {
                (post, join_pointer(&site.path_item_pointer, "post"))
            }
            _ => return Ok(None),
        }
    };
    let Some(body) = post.get("requestBody") else {
        return Ok(None);
    };
    let (body, body_pointer, _) =
        resolver.deref(body, &join_pointer(&post_pointer, "requestBody"))?;
    let Some(input) = body.pointer("/content/application~1json/schema") else {
        return Ok(None);
    };
    let mut bundle = SchemaBundle::new(defs);
    let input_pointer = join_pointer(&body_pointer, "content/application~1json/schema");
    let input = bundle.schema(input, &input_pointer)?;
    Ok(Some((post, post_pointer, bundle.finish(input)?)))
}

/// The output of a served operation: `data` of the envelope its success response (or each
/// of its items) carries.
fn output<'a>(
    resolver: Resolver<'a>,
    defs: &Definitions<'a>,
    site: &Found<'a>,
    served: &Served,
) -> Result<Option<Value>, MapError> {
    let Some(success) = site.operation.pointer("/responses/200") else {
        return Ok(None);
    };
    let (success, success_pointer, _) = resolver.deref(
        success,
        &join_pointer(&join_pointer(&site.pointer, "responses"), "200"),
    )?;
    // A stream's item events: in the media type's `schema` (3.1) or `itemSchema` (3.2).
    let candidates: &[&str] = if served.kind.is_stream() {
        &[
            "/content/text~1event-stream/schema/oneOf/0/properties/data/contentSchema",
            "/content/text~1event-stream/itemSchema/oneOf/0/properties/data/contentSchema",
        ]
    } else {
        &["/content/application~1json/schema"]
    };
    let Some((envelope_at, envelope)) = candidates
        .iter()
        .find_map(|at| success.pointer(at).map(|envelope| (*at, envelope)))
    else {
        return Ok(None);
    };
    let (envelope, envelope_pointer, _) =
        resolver.deref(envelope, &format!("{success_pointer}{envelope_at}"))?;
    let Some(data) = envelope.pointer("/properties/data") else {
        return Ok(None);
    };
    let mut bundle = SchemaBundle::new(defs);
    let output = bundle.schema(data, &format!("{envelope_pointer}/properties/data"))?;
    bundle.finish(output).map(Some)
}

/// How a served operation is called: `POST` of its input as JSON, its reply JSON (or SSE
/// for a stream), the data taken as the serving registry cast and checked it.
fn plan(
    resolver: Resolver<'_>,
    post: &Value,
    site: &Found<'_>,
    served: &Served,
    id: String,
    base_url: String,
    options: &OpenApiOptions,
) -> OperationPlan {
    OperationPlan {
        operation_id: id.clone(),
        label: format!("POST {}", site.path),
        method: reqwest::Method::POST,
        path: site.path.clone(),
        base_url,
        params: Vec::new(),
        body: Some(BodyPlan {
            content_type: "application/json".to_owned(),
            kind: BodyKind::Json,
        }),
        accept: Some(
            if served.kind.is_stream() {
                "text/event-stream"
            } else {
                "application/json"
            }
            .to_owned(),
        ),
        auth: auth::resolve(resolver, post.get("security"), &options.auth),
        headers: options
            .headers
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        sse: served.kind.is_stream().then_some(EventData::Json),
        // The served data was cast and validated by the serving registry.
        normalizer: Arc::new(Normalizer::new(options.normalization, id, None)),
        served: true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn served_operations_are_recognised_by_both_extensions() {
        let op = json!({"x-opkit-id": "math.add", "x-opkit-kind": "QUERY"});
        assert_eq!(
            Served::of(&op),
            Some(Served {
                id: "math.add".into(),
                kind: OperationKind::Query
            })
        );
        assert_eq!(Served::of(&json!({"x-opkit-id": "math.add"})), None);
        assert_eq!(
            Served::of(&json!({"x-opkit-id": "a.b", "x-opkit-kind": "STREAM"})),
            None
        );
        let alias = json!({"x-opkit-id": "a.b", "x-opkit-kind": "QUERY", "x-opkit-alias": true});
        assert!(is_alias(&alias));
        assert!(
            !is_alias(&json!({"x-opkit-alias": true})),
            "not served by opkit"
        );
        assert!(!is_alias(&op));
    }
}
