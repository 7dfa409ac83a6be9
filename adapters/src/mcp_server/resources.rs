//! `resources/list`, `resources/templates/list`, `resources/read`, `resources/subscribe`
//! and `resources/unsubscribe`, from the operations of the [catalog](super::catalog).
//!
//! A read runs the query whose URI (or URI template) matches, through the registry's front
//! door, with the URI's variables as input; its reply becomes the contents:
//!
//! | the reply | contents |
//! |---|---|
//! | an MCP envelope (content blocks) | text blocks as text, image and audio as blobs, embedded resources as they are |
//! | a [`Binary`](opkit::binary::Binary) output | one blob, with the schema's `contentMediaType` |
//! | a string | one text, `text/plain` (or the extension's `mimeType`) |
//! | any other JSON | its JSON text, `application/json` (or the extension's `mimeType`) |
//!
//! A subscribe starts the subscription with the same URI (if there is one), and each of its
//! items sends `notifications/resources/updated` for the URI until the client unsubscribes
//! or the session ends. A resource with no such subscription can be subscribed to and never
//! reports a change.

use super::catalog::{Catalog, ResourceEntry};
use super::listing::page_of;
use super::replies::rpc_error;
use super::session::{Asked, McpHandler};
use futures::StreamExt;
use opkit::envelope::{McpContentBlock, ResponseMeta};
use opkit::middleware::Outcome;
use opkit::{CallError, ErrorKind, ResponseEnvelope};
use rmcp::ErrorData as McpError;
use rmcp::model::{
    ListResourceTemplatesResult, ListResourcesResult, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, ResourceUpdatedNotificationParam,
};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// A page of the `resources/list` result: the fixed resources from `cursor` on.
pub(crate) fn list(catalog: &Catalog, cursor: Option<&str>) -> ListResourcesResult {
    let (page, next) = page_of(&catalog.resources, |entry| &*entry.id, cursor);
    let resources: Vec<Value> = page.iter().map(|entry| describe(entry, "uri")).collect();
    let mut result = json!({ "resources": resources, "resultType": "complete" });
    if let Some(next) = next {
        result["nextCursor"] = json!(next);
    }
    from_json(result)
}

/// A page of the `resources/templates/list` result: the resource templates from `cursor` on.
pub(crate) fn templates(catalog: &Catalog, cursor: Option<&str>) -> ListResourceTemplatesResult {
    let (page, next) = page_of(&catalog.templates, |entry| &*entry.id, cursor);
    let templates: Vec<Value> = page
        .iter()
        .map(|entry| describe(entry, "uriTemplate"))
        .collect();
    let mut result = json!({ "resourceTemplates": templates, "resultType": "complete" });
    if let Some(next) = next {
        result["nextCursor"] = json!(next);
    }
    from_json(result)
}

/// One entry of a listing, its URI under `key`.
fn describe(entry: &ResourceEntry, key: &str) -> Value {
    let mut item = json!({
        key: entry.template.as_str(),
        "name": entry.name,
        "description": entry.spec.description.clone().unwrap_or_else(|| format!("{} {}", entry.spec.kind.as_str(), entry.id)),
    });
    if let Some(mime) = mime_of(entry) {
        item["mimeType"] = json!(mime);
    }
    if let Some(title) = super::options::title(&entry.spec) {
        item["title"] = json!(title);
    }
    if let Some(meta) = super::options::own_meta(&entry.spec) {
        item["_meta"] = json!(meta);
    }
    item
}

/// The MIME type a listing gives: the extension's, else what the output schema says.
fn mime_of(entry: &ResourceEntry) -> Option<String> {
    if let Some(mime) = &entry.mime_type {
        return Some(mime.clone());
    }
    let output = &entry.spec.output_schema;
    if opkit::binary::is_binary_schema(output) {
        return output
            .get("contentMediaType")
            .and_then(Value::as_str)
            .map(str::to_owned);
    }
    match output.get("type").and_then(Value::as_str) {
        Some("string") => Some("text/plain".to_owned()),
        Some("object" | "array" | "integer" | "number" | "boolean") => {
            Some("application/json".to_owned())
        }
        _ => None,
    }
}

/// A result type built from its wire JSON (every field here is one rmcp reads).
fn from_json<T: serde::de::DeserializeOwned + Default>(value: Value) -> T {
    serde_json::from_value(value).unwrap_or_default()
}

impl McpHandler {
    /// `resources/read`.
    pub(super) async fn read(
        &self,
        request: ReadResourceRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let uri = request.uri.as_str();
        let names = self.catalog()?;
        let Some((entry, input)) = names.catalog.reader(uri) else {
            return Err(McpError::resource_not_found(
                format!("no resource at {uri}"),
                Some(json!({ "uri": uri })),
            ));
        };
        let subject = format!("resource:{uri}");
        let state = request.request_state.as_deref();
        let responses = request.input_responses.clone();
        let asked = self
            .serve_asking(&entry.id, input, &subject, state, responses, context)
            .await?;
        let outcome = match asked {
            Asked::Done(outcome) => outcome,
            Asked::Input(questions) => return Ok(questions.into()),
        };
        let (hint, envelope) = match outcome {
            Ok(Outcome::Unary(reply)) => (
                reply.cache_hint(),
                reply.into_envelope().map_err(|e| rpc_error(&e))?,
            ),
            Ok(Outcome::Stream(_)) => {
                return Err(McpError::internal_error(
                    format!("the resource {uri} is served by a subscription"),
                    None,
                ));
            }
            Err(error) if error.kind == Some(ErrorKind::NotFound) => {
                return Err(McpError::resource_not_found(
                    error.message.clone(),
                    Some(json!({ "uri": uri })),
                ));
            }
            Err(error) => return Err(rpc_error(&error)),
        };
        let contents = contents(entry, uri, envelope)?;
        let mut result = json!({ "contents": contents, "resultType": "complete" });
        // A cached reply's freshness (a `Cache` middleware's), for 2026-07-28 clients.
        if let Some(hint) = hint {
            result["ttlMs"] = json!(u64::try_from(hint.ttl.as_millis()).unwrap_or(u64::MAX));
            result["cacheScope"] = json!(hint.scope.as_str());
        }
        serde_json::from_value::<ReadResourceResult>(result)
            .map(ReadResourceResponse::from)
            .map_err(|error| McpError::internal_error(error.to_string(), None))
    }

    /// `resources/subscribe`.
    pub(super) async fn watch(
        &self,
        uri: &str,
        context: &RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let names = self.catalog()?;
        let Some((entry, input)) = names.catalog.watcher(uri) else {
            return match names.catalog.reader(uri) {
                // Nothing reports its changes: subscribed, and never updated.
                Some(_) => Ok(()),
                None => Err(McpError::resource_not_found(
                    format!("no resource at {uri}"),
                    Some(json!({ "uri": uri })),
                )),
            };
        };
        let token = CancellationToken::new();
        // The subscription outlives this request: its own cancellation, not the request's.
        let outcome = self
            .serve_watcher(entry, input, context, Some(token.clone()))
            .await?;
        let mut items = match outcome {
            Ok(Outcome::Stream(items)) => items,
            Ok(Outcome::Unary(_)) => {
                return Err(McpError::internal_error(
                    format!("the updates of {uri} are served by a query"),
                    None,
                ));
            }
            Err(error) => return Err(rpc_error(&error)),
        };
        if let Some(previous) = self
            .watches
            .running
            .lock()
            .insert(uri.to_owned(), token.clone())
        {
            previous.cancel();
        }
        let peer = context.peer.clone();
        let watches = std::sync::Arc::downgrade(&self.watches);
        let uri = uri.to_owned();
        tokio::spawn(async move {
            loop {
                let item = tokio::select! {
                    () = token.cancelled() => break,
                    item = items.next() => item,
                };
                match item {
                    Some(Ok(_)) => {
                        let notice = ResourceUpdatedNotificationParam::new(uri.clone());
                        if peer.notify_resource_updated(notice).await.is_err() {
                            break; // the session is gone
                        }
                    }
                    Some(Err(error)) => {
                        tracing::debug!(%error, %uri, "a resource subscription ended with an error");
                        break;
                    }
                    None => break,
                }
            }
            if let Some(watches) = watches.upgrade() {
                let mut running = watches.running.lock();
                // Only this subscription's entry: a newer one for the URI keeps running.
                if running.get(&uri).is_some_and(|kept| kept == &token) {
                    running.remove(&uri);
                }
            }
        });
        Ok(())
    }

    /// Runs the subscription `entry` that reports a resource's changes, for the caller of
    /// `context` (with `cancellation` instead of the request's, when given).
    pub(super) async fn serve_watcher(
        &self,
        entry: &ResourceEntry,
        input: Value,
        context: &RequestContext<RoleServer>,
        cancellation: Option<CancellationToken>,
    ) -> Result<Result<Outcome, CallError>, McpError> {
        let identity = self.identity(context).await.map_err(|e| rpc_error(&e))?;
        let mut ctx = self.call_context(identity, context);
        if let Some(token) = cancellation {
            ctx = ctx.with_cancellation(token);
        }
        Ok(Box::pin(self.inner.registry.serve(&entry.id, input, ctx)).await)
    }

    /// `resources/unsubscribe`.
    pub(super) fn unwatch(&self, uri: &str) {
        if let Some(token) = self.watches.running.lock().remove(uri) {
            token.cancel();
        }
    }
}

/// The contents of a read (see the module docs).
fn contents(
    entry: &ResourceEntry,
    uri: &str,
    envelope: ResponseEnvelope,
) -> Result<Vec<Value>, McpError> {
    if envelope.is_error() {
        return Err(McpError::internal_error(
            format!("reading {uri} failed"),
            Some(envelope.data),
        ));
    }
    let output = &entry.spec.output_schema;
    if let ResponseMeta::Mcp(meta) = &envelope.meta {
        return Ok(meta
            .content
            .iter()
            .map(|block| block_contents(block, uri))
            .collect());
    }
    if opkit::binary::is_binary_schema(output) {
        let mime = mime_of(entry).unwrap_or_else(|| "application/octet-stream".to_owned());
        return Ok(vec![
            json!({"uri": uri, "mimeType": mime, "blob": envelope.data}),
        ]);
    }
    Ok(vec![match envelope.data {
        Value::String(text) => json!({
            "uri": uri,
            "mimeType": entry.mime_type.as_deref().unwrap_or("text/plain"),
            "text": text,
        }),
        data => json!({
            "uri": uri,
            "mimeType": entry.mime_type.as_deref().unwrap_or("application/json"),
            "text": data.to_string(),
        }),
    }])
}

/// The contents one content block of an MCP envelope gives.
fn block_contents(block: &McpContentBlock, uri: &str) -> Value {
    match block {
        McpContentBlock::Text { text, .. } => {
            json!({"uri": uri, "mimeType": "text/plain", "text": text})
        }
        McpContentBlock::Image {
            data, mime_type, ..
        }
        | McpContentBlock::Audio {
            data, mime_type, ..
        } => json!({"uri": uri, "mimeType": mime_type, "blob": data}),
        McpContentBlock::Resource { resource, .. } => {
            serde_json::to_value(resource).unwrap_or(Value::Null)
        }
        McpContentBlock::ResourceLink { .. } => json!({
            "uri": uri,
            "mimeType": "application/json",
            "text": serde_json::to_string(block).unwrap_or_default(),
        }),
    }
}
