//! Responses: the success response of an operation and, for each of its modes (the call
//! and, when the response also offers SSE, the `_stream` subscription), the output schema,
//! `Accept` header, SSE reading and the normalizer of the replies.
//!
//! The success response is the lowest `2xx` code, else `2XX`, else `default`. See the
//! module doc of [`super`] for how the output schema is chosen.

use super::{Found, OutputSource};
use crate::openapi::bundle::{Definitions, SchemaBundle};
use crate::openapi::document::{Document, join_pointer};
use crate::openapi::error::MapError;
use crate::openapi::media::MediaType;
use crate::openapi::normalize::{Normalization, Normalizer, SchemaSource};
use crate::openapi::options::OpenApiOptions;
use crate::openapi::refs::Resolver;
use crate::openapi::sse::EventData;
use opkit::schema::json_type_name;
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// A success response, dereferenced: the response object and its pointer.
pub(super) type Success<'a> = (&'a Value, String);

/// The operation's success response; `None` when it declares none.
pub(super) fn success<'a>(
    resolver: Resolver<'a>,
    op: &Found<'a>,
    operation: &'a Map<String, Value>,
) -> Result<Option<Success<'a>>, MapError> {
    let responses_pointer = join_pointer(&op.pointer, "responses");
    match operation.get("responses") {
        Some(Value::Object(responses)) => match success_response(responses) {
            Some(code) => {
                let pointer = join_pointer(&responses_pointer, code);
                let (response, pointer, _) = resolver.deref(&responses[code], &pointer)?;
                if !declares_schema(response) {
                    warn_of_a_schema_elsewhere(resolver, op, responses, code, &responses_pointer);
                }
                Ok(Some((response, pointer)))
            }
            None => Ok(None),
        },
        Some(other) => Err(MapError::new(
            &responses_pointer,
            format!(
                "`responses` must be an object, found {}",
                json_type_name(other)
            ),
        )),
        None => Ok(None),
    }
}

/// `true` when a response object declares a schema for any of its media types.
fn declares_schema(response: &Value) -> bool {
    response
        .get("content")
        .and_then(Value::as_object)
        .is_some_and(|content| content.values().any(|media| media.get("schema").is_some()))
}

/// Warns when the chosen success response `code` declares no schema while another `2xx`
/// response does (an API that answers errors with `200` and puts the real schema under
/// `201`): the output keeps the chosen response's, Unknown, and the log says which code
/// would have given one.
fn warn_of_a_schema_elsewhere(
    resolver: Resolver<'_>,
    op: &Found<'_>,
    responses: &Map<String, Value>,
    code: &str,
    responses_pointer: &str,
) {
    let with_schema = responses.iter().find(|(other, response)| {
        other.as_str() != code
            && other.len() == 3
            && other.starts_with('2')
            && resolver
                .deref(response, &join_pointer(responses_pointer, other))
                .is_ok_and(|(response, _, _)| declares_schema(response))
    });
    if let Some((other, _)) = with_schema {
        tracing::warn!(
            operation = %format!("{} {}", op.method.to_uppercase(), op.path),
            at = %responses_pointer,
            chosen = code,
            with_schema = %other,
            "OpenAPI success response {code} (the lowest 2xx) declares no schema while {other} does: the output is read from {code} and is Unknown; a document that answers errors with {code} should be corrected"
        );
    }
}

/// One mode's output side.
#[derive(Debug)]
pub(super) struct Output {
    /// The schema the pipeline casts to (Unknown when the declared one moved).
    pub schema: Value,
    /// The declared schema, moved to the `openapi` extension because the pipeline does not
    /// cast (normalization is not `On`).
    pub moved: Option<Value>,
    pub accept: Option<String>,
    /// `Some` for the subscription mode.
    pub sse: Option<EventData>,
    pub normalizer: Arc<Normalizer>,
}

/// The output side of the operation `id` in one mode (`streaming` for the subscription).
pub(super) fn output<'a>(
    doc: &Arc<Document>,
    defs: &Definitions<'a>,
    success: Option<&Success<'a>>,
    streaming: bool,
    id: String,
    options: &OpenApiOptions,
) -> Result<Output, MapError> {
    let mut bundle = SchemaBundle::new(defs);
    let (schema, accept, sse) = match success {
        Some((response, response_pointer)) => {
            response_output(&mut bundle, response, response_pointer, streaming)?
        }
        None => (Value::Bool(true), None, None),
    };
    // The schema the pipeline casts to refers into the shared definitions; one moved to
    // the extension (the pipeline does not cast) is a self-contained copy.
    let mut schema = if options.normalization == Normalization::On {
        bundle.finish_shared(schema)?
    } else {
        bundle.finish(schema)?
    };
    let declared = !opkit::schema::is_unknown(&schema);
    if sse.is_none()
        && let Some((response, response_pointer)) = success
        && let Some(media) = json_without_schema(response)
    {
        tracing::warn!(
            operation = %id,
            at = %response_pointer,
            media,
            "OpenAPI success response is JSON without a schema: the output of {id} is Unknown"
        );
    }
    let mut moved = None;
    if options.normalization != Normalization::On && declared {
        // The pipeline would cast: the declared schema moves to the extension.
        moved = Some(std::mem::replace(&mut schema, Value::Bool(true)));
    }
    // The normalizer rebuilds the schema at the first reply rather than holding a copy.
    let source = (declared && options.normalization != Normalization::Off)
        .then_some(success)
        .flatten()
        .map(|(_, response_pointer)| {
            let source = OutputSource {
                doc: doc.clone(),
                response_pointer: response_pointer.clone(),
                streaming: sse.is_some(),
            };
            Box::new(move || source.build()) as SchemaSource
        });
    let normalizer = Arc::new(Normalizer::new(options.normalization, id, source));
    Ok(Output {
        schema,
        moved,
        accept,
        sse,
        normalizer,
    })
}

/// `true` when the success response offers `text/event-stream` and another media type:
/// the operation is imported twice, as a call and as a subscription.
pub(super) fn offers_both_modes(resolver: Resolver<'_>, op: &Found<'_>) -> bool {
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
pub(super) fn response_output<'a>(
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
    let chosen = chosen_media(content);
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

/// The media type whose body becomes the output (event streams aside): JSON first, then
/// text, then any other type, then wildcards; within one class a variant that declares a
/// `schema` wins over one that does not (`application/json` without a schema beside
/// `application/json; charset=utf-8` with one), then exactly `application/json`, then the
/// key, so the choice never depends on the document's key order.
fn chosen_media(content: &Map<String, Value>) -> Option<&str> {
    content
        .iter()
        .filter(|(key, _)| !MediaType::parse(key).is_event_stream())
        .min_by_key(|(key, entry)| {
            let m = MediaType::parse(key);
            let class = if m.is_json() {
                0
            } else if m.is_text() {
                1
            } else if m.essence.contains('*') {
                3
            } else {
                2
            };
            let without_schema = entry.get("schema").is_none();
            let not_plain_json = m.essence != "application/json";
            (class, without_schema, not_plain_json, key.as_str())
        })
        .map(|(key, _)| key.as_str())
}

/// The media type of a success response whose body is JSON but declares no schema: the
/// output is Unknown for want of one. `None` when the response has a usable schema, no
/// content, or content that is not JSON.
fn json_without_schema(response: &Value) -> Option<&str> {
    let Some(Value::Object(content)) = response.get("content") else {
        return None;
    };
    let key = chosen_media(content)?;
    (MediaType::parse(key).is_json() && content[key].get("schema").is_none()).then_some(key)
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

#[cfg(test)]
mod tests {
    use super::super::tests::{document, found};
    use super::*;

    fn doc_with(responses: Value) -> Arc<Document> {
        Arc::new(document(
            json!({"openapi": "3.2.0", "info": {"title": "t", "version": "1"},
            "paths": {"/r": {"get": {"responses": responses}}}}),
        ))
    }

    /// The output of `GET /r` in one mode, with normalization `normalization`.
    fn output_of(
        doc: &Arc<Document>,
        streaming: bool,
        normalization: Normalization,
    ) -> Result<Output, MapError> {
        let resolver = Resolver {
            root: &doc.root,
            version: doc.version,
        };
        let defs = Definitions::new(resolver, usize::MAX);
        let op = found(resolver, "/r", "get");
        let success = success(resolver, &op, op.operation.as_object().unwrap())?;
        let options = OpenApiOptions::new("t").normalization(normalization);
        output(
            doc,
            &defs,
            success.as_ref(),
            streaming,
            "t.r".into(),
            &options,
        )
    }

    #[test]
    fn the_success_response_is_the_lowest_2xx_then_2xx_then_default() {
        let codes = |keys: &[&str]| {
            let map: Map<String, Value> = keys.iter().map(|k| (k.to_string(), json!({}))).collect();
            success_response(&map).map(str::to_owned)
        };
        assert_eq!(codes(&["default", "204", "201"]).as_deref(), Some("201"));
        assert_eq!(codes(&["default", "2XX", "404"]).as_deref(), Some("2XX"));
        assert_eq!(codes(&["default", "404"]).as_deref(), Some("default"));
        assert_eq!(codes(&["404"]), None);
    }

    #[test]
    fn json_text_and_binary_outputs() {
        let doc = doc_with(
            json!({"200": {"content": {"text/plain": {}, "application/json": {"schema": {"type": "integer"}}}}}),
        );
        let out = output_of(&doc, false, Normalization::On).unwrap();
        assert_eq!(out.schema, json!({"type": "integer"}));
        assert_eq!(out.accept.as_deref(), Some("application/json"));
        assert!(out.moved.is_none() && out.sse.is_none());

        let out = output_of(&doc, false, Normalization::Off).unwrap();
        assert_eq!(out.schema, json!(true), "moved to the extension");
        assert_eq!(out.moved, Some(json!({"type": "integer"})));

        let doc = doc_with(json!({"200": {"content": {"image/png": {}}}}));
        let out = output_of(&doc, false, Normalization::On).unwrap();
        assert_eq!(
            out.schema,
            json!({"type": "string", "contentEncoding": "base64", "contentMediaType": "image/png"})
        );

        let doc = doc_with(json!({"204": {}}));
        let out = output_of(&doc, false, Normalization::On).unwrap();
        assert_eq!(out.schema, json!(true));
        assert!(out.accept.is_none());
    }

    #[test]
    fn sse_outputs_and_both_modes() {
        let doc = doc_with(json!({"200": {"content": {
            "application/json": {"schema": {"type": "array"}},
            "text/event-stream": {"itemSchema": {"properties": {"data": {"contentSchema": {"type": "object"}}}}}
        }}}));
        let resolver = Resolver {
            root: &doc.root,
            version: doc.version,
        };
        assert!(offers_both_modes(resolver, &found(resolver, "/r", "get")));
        let out = output_of(&doc, true, Normalization::On).unwrap();
        assert_eq!(out.schema, json!({"type": "object"}));
        assert_eq!(out.accept.as_deref(), Some("text/event-stream"));
        assert_eq!(out.sse, Some(EventData::Json));
        let unary = output_of(&doc, false, Normalization::On).unwrap();
        assert_eq!(unary.schema, json!({"type": "array"}));

        let doc = doc_with(
            json!({"200": {"content": {"text/event-stream": {"schema": {"type": "string"}}}}}),
        );
        let resolver = Resolver {
            root: &doc.root,
            version: doc.version,
        };
        assert!(!offers_both_modes(resolver, &found(resolver, "/r", "get")));
        let out = output_of(&doc, true, Normalization::On).unwrap();
        assert_eq!((out.schema, out.sse), (json!(true), Some(EventData::Sniff)));
    }

    /// The WARN messages logged while `f` runs.
    fn warnings_of<T>(f: impl FnOnce() -> T) -> (T, Vec<String>) {
        use std::sync::Mutex;
        use tracing_subscriber::layer::SubscriberExt;
        struct Capture(Arc<Mutex<Vec<String>>>);
        struct Fields(String);
        impl tracing::field::Visit for Fields {
            fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
                self.0.push_str(&format!("{}={value:?} ", field.name()));
            }
        }
        impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Capture {
            fn on_event(
                &self,
                event: &tracing::Event<'_>,
                _: tracing_subscriber::layer::Context<'_, S>,
            ) {
                if *event.metadata().level() == tracing::Level::WARN {
                    let mut fields = Fields(String::new());
                    event.record(&mut fields);
                    self.0.lock().unwrap().push(fields.0);
                }
            }
        }
        let seen = Arc::new(Mutex::new(Vec::new()));
        let subscriber = tracing_subscriber::registry().with(Capture(seen.clone()));
        let value = tracing::subscriber::with_default(subscriber, f);
        let seen = seen.lock().unwrap().clone();
        (value, seen)
    }

    #[test]
    fn a_json_variant_with_a_schema_wins_over_one_without() {
        // The pattern of five APIs.guru documents: the bare type without a schema beside the
        // same type with a charset and the schema. Key order must not matter.
        for content in [
            json!({"application/json": {}, "application/json; charset=utf-8": {"schema": {"type": "integer"}}}),
            json!({"application/json; charset=utf-8": {"schema": {"type": "integer"}}, "application/json": {}}),
        ] {
            let doc = doc_with(json!({"200": {"content": content}}));
            let (out, warnings) =
                warnings_of(|| output_of(&doc, false, Normalization::On).unwrap());
            assert_eq!(out.schema, json!({"type": "integer"}));
            assert_eq!(
                out.accept.as_deref(),
                Some("application/json; charset=utf-8")
            );
            assert!(warnings.is_empty(), "{warnings:?}");
        }
        // A `+json` type with a schema wins over a bare `application/json` without one.
        let doc = doc_with(json!({"200": {"content": {
            "application/json": {}, "application/vnd.api+json": {"schema": {"type": "object"}}
        }}}));
        let out = output_of(&doc, false, Normalization::On).unwrap();
        assert_eq!(out.schema, json!({"type": "object"}));
        // With a schema on both, plain `application/json` is still preferred.
        let doc = doc_with(json!({"200": {"content": {
            "application/vnd.api+json": {"schema": {"type": "object"}},
            "application/json": {"schema": {"type": "array"}}
        }}}));
        let out = output_of(&doc, false, Normalization::On).unwrap();
        assert_eq!(out.schema, json!({"type": "array"}));
    }

    #[test]
    fn json_content_without_any_schema_is_one_warning_naming_the_operation() {
        let doc = doc_with(json!({"200": {"content": {"application/json": {}, "text/plain": {}}}}));
        let (out, warnings) = warnings_of(|| output_of(&doc, false, Normalization::On).unwrap());
        assert_eq!(out.schema, json!(true));
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].contains("operation=t.r"), "{warnings:?}");
        assert!(
            warnings[0].contains("/paths/~1r/get/responses/200"),
            "{warnings:?}"
        );
        // No content, or content that is not JSON, is not a loss.
        for responses in [
            json!({"204": {}}),
            json!({"200": {"content": {"image/png": {}}}}),
            json!({"200": {"content": {"application/json": {"schema": {}}}}}),
        ] {
            let doc = doc_with(responses);
            let (_, warnings) = warnings_of(|| output_of(&doc, false, Normalization::On).unwrap());
            assert!(warnings.is_empty(), "{warnings:?}");
        }
    }

    #[test]
    fn a_lowest_2xx_without_a_schema_beside_one_with_is_a_warning() {
        let doc = doc_with(json!({
            "200": {"description": "errors, in fact"},
            "201": {"content": {"application/json": {"schema": {"type": "object"}}}},
            "204": {"description": "none"}
        }));
        let (out, warnings) = warnings_of(|| output_of(&doc, false, Normalization::On).unwrap());
        assert_eq!(
            out.schema,
            json!(true),
            "the lowest 2xx is still the one read"
        );
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].contains("GET /r"), "{warnings:?}");
        assert!(warnings[0].contains("with_schema=201"), "{warnings:?}");
        // Both without a schema, or the lowest with one: nothing to say.
        for responses in [
            json!({"200": {}, "201": {"description": "created"}}),
            json!({"200": {"content": {"application/json": {"schema": {}}}}, "201": {"content": {"application/json": {"schema": {"type": "object"}}}}}),
        ] {
            let doc = doc_with(responses);
            let (_, warnings) = warnings_of(|| output_of(&doc, false, Normalization::On).unwrap());
            assert!(warnings.is_empty(), "{warnings:?}");
        }
    }

    #[test]
    fn responses_must_be_an_object() {
        let doc = doc_with(json!([]));
        let error = output_of(&doc, false, Normalization::On).unwrap_err();
        assert_eq!(error.pointer, "/paths/~1r/get/responses");
    }
}
