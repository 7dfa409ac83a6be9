//! OpenAPI import: any HTTP API with an OpenAPI 3.0, 3.1 or 3.2 document becomes operations
//! in a registry, called through the same `execute`/`subscribe` and returning
//! [`http_envelope`](opkit::envelope::http_envelope)s.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use opkit::prelude::*;
//! use opkit_adapters::openapi::{OpenApiAuth, OpenApiImporter, OpenApiOptions};
//! use serde_json::json;
//!
//! let registry = OperationRegistry::new();
//! let options = OpenApiOptions::new("petstore")
//!     .base_url("http://127.0.0.1:4010")
//!     .auth(OpenApiAuth::new().api_key("special-key"));
//! let import = OpenApiImporter::new(options).import_file("petstore.yaml")?;
//! for skipped in &import.skipped {
//!     eprintln!("{skipped}");
//! }
//! import.register_into(&registry)?;
//!
//! let envelope = registry
//!     .execute("petstore.getPetById", json!({"petId": 1}), &OperationContext::default())
//!     .await?;
//! println!("{}", serde_json::to_string_pretty(&envelope)?);
//! # Ok(()) }
//! ```
//!
//! # What becomes what
//!
//! * **One operation per HTTP operation** (`paths.*.{get,put,post,delete,options,head,patch,trace}`,
//!   plus 3.2's `query` and `additionalOperations`): id `<namespace>.<name>`, the namespace
//!   from [`OpenApiOptions`], the name from `operationId` or method + path (see
//!   [naming](#names)). Kind: `SUBSCRIPTION` when the success response is
//!   `text/event-stream` (see *JSON or SSE* below when it offers more), `QUERY` for
//!   GET/HEAD/QUERY, `MUTATION` otherwise. Description:
//!   `summary` and `description`.
//! * **Input schema**: an object of the path, query, header and cookie parameters (by name)
//!   and `body`; **output schema**: the success response's JSON schema, self-contained
//!   when read (a `$ref` at the top replaced by its target; every other `$ref` pointing into the
//!   schema's own `$defs`, which holds exactly the definitions it reaches) and in JSON Schema 2020-12
//!   (3.0 schemas are converted: `nullable`, boolean `exclusiveMinimum`/`exclusiveMaximum`,
//!   `example`, `format: binary|byte`), or Unknown. Details in the source of `mapping`.
//! * **Handlers** send the request with reqwest and return `http_envelope(data, status,
//!   headers, contentType)`: JSON bodies parsed, text as a string, an empty body as `null`,
//!   **anything else as a base64 string**; headers lower-cased with repeated values joined
//!   by `", "`. A non-2xx status is `EXECUTION_ERROR` with `details: {status, headers,
//!   contentType, body}`; a timeout is `TIMEOUT`; a connection failure `TRANSPORT_ERROR`.
//! * **SSE** subscriptions yield one [`http_event_envelope`](opkit::envelope::http_event_envelope)
//!   per event, `contentType: "text/event-stream"` (the `headers` snapshot keeps the
//!   response's full `content-type`), data parsed as JSON when it is JSON, and the event's
//!   type, id and retry in the optional `meta.sse` (see [`opkit::envelope::SseEventMeta`]).
//!   When the item schema declares JSON (the 3.2 `itemSchema` with `contentSchema`, as
//!   FastAPI emits it), a frame whose data does not parse is skipped with a warning; the
//!   data schema is the operation's output schema, so each item is cast and validated like a
//!   reply. The HTTP connection is owned by the stream: dropping the stream closes it. **A
//!   connection that drops** before the stream ends is resumed with `Last-Event-ID` after
//!   the stream's `retry` delay, for idempotent methods only, at most
//!   [`SseReconnect::max_attempts`] times in a row (see [`SseReconnect`]); a stream that
//!   ends cleanly is over. An event larger than [`OpenApiOptions::max_sse_event_bytes`]
//!   ([`DEFAULT_MAX_SSE_EVENT_BYTES`], 16 MiB) ends the stream with an `EXECUTION_ERROR`
//!   naming the limit (`details: {"limit": "maxSseEventBytes", "max": <bytes>}`) and closes
//!   the connection.
//! * **JSON or SSE**: a success response that offers `text/event-stream` *and* another
//!   media type (OpenAI's `createChatCompletion`: `application/json` or an event stream,
//!   chosen by `stream` in the body) becomes two operations: `<name>` (a query or mutation
//!   asking for the other media type) and `<name>_stream` (a subscription asking for
//!   `text/event-stream`). Their `extensions.openapi` name each other (`stream` on the call,
//!   `unary` on the subscription). The input is the same: a body flag such as `stream: true`
//!   is the caller's to set.
//! * **Served by opkit**: an operation of a document opkit's own HTTP server generated
//!   (recognised by its `x-opkit-id` and `x-opkit-kind`) is imported as the operation that
//!   was served: the `x-opkit-alias` twins are skipped, the kind is `x-opkit-kind`, the input
//!   schema is the request body's (the input is the body), the data is the served envelope's
//!   `data`, a failure is the served `CallError` as sent, and an event stream ends at its
//!   `complete` event (`error` fails it). Every such operation is called with `POST` and a
//!   JSON body. Details in the source of `served`.
//! * **Replies** are cast to the output schema by the registry's pipeline; when that changes
//!   a reply, a rate-limited `tracing::warn!` names the operation and the JSON pointers
//!   dropped, replaced and invented. [`OpenApiOptions::normalization`] can instead validate
//!   only, or leave replies alone (see [`Normalization`]).

//! # Limits
//!
//! | bound | default | exceeding it |
//! |---|---|---|
//! | one SSE event ([`OpenApiOptions::max_sse_event_bytes`]) | 16 MiB | the subscription ends with `EXECUTION_ERROR` naming the limit |
//! | one response body of a query or mutation ([`OpenApiOptions::max_response_bytes`]) | 64 MiB | the call fails with `EXECUTION_ERROR` naming the limit (`details.limit: "maxResponseBytes"`); the rest is not read |
//! | a chain of references (`$ref` to `$ref` ...) | cycles, and 10 000 hops | the operation is skipped: "the reference chain is circular ..." |
//! | nesting of one schema (within one definition) while it is bundled | 256 levels | the operation is skipped: "the schema is nested too deeply" |
//! | schema work of one import ([`OpenApiOptions::max_schema_nodes`]) | [`SCHEMA_BUDGET_FACTOR`] × the document's nodes, at least [`MIN_SCHEMA_BUDGET`] | [`OpenApiError::SchemaBudget`] |
//! | nesting of a document given as text | 127 levels (JSON), 128 (YAML) | [`OpenApiError::Parse`] with the parser's "recursion limit exceeded" |
//!
//! Shared and recursive schemas are not copied: the import holds each once, in one
//! [`Definitions`](opkit::schema::Definitions) shared (through an `Arc`) by every operation
//! schema of the import ([`Schema::with_definitions`](opkit::schema::Schema::with_definitions)).
//! An operation schema reads as self-contained: its `$defs`, holding exactly the definitions
//! it reaches, are built the first time it is read, and kept. Validators do not read it:
//! each compiles only its operation's root, and each definition is compiled once per import
//! and shared by every validator that reaches it (see
//! [`CompiledSchema`](opkit::schema::CompiledSchema)). Serving does not keep it either: the
//! MCP server builds each `tools/list` page's schemas for that page, and the HTTP server's
//! OpenAPI document places the shared definitions once, as components. A recursive schema
//! validates values of any depth. Response bodies are read
//! whole (bounded by the request timeout, not by size).
//!
//! # Decisions
//!
//! * **Versions**: the document is parsed into a `serde_json::Value` and branched on
//!   `openapi` `major.minor` (3.0, 3.1, 3.2; the patch is ignored; Swagger 2.0 and other
//!   versions are rejected with the pointer `/swagger` or `/openapi`). **3.2 is accepted**:
//!   `itemSchema`, the `query` method, `additionalOperations`, `in: querystring` and
//!   `style: cookie` are understood; other 3.2 additions are ignored like unknown keys.
//!   `itemSchema` is honoured in 3.1 documents too, since FastAPI emits it there.
//! * **YAML** is read with `serde_norway` (the maintained fork of `serde_yaml`;
//!   `serde_yml` is deprecated and `yaml-rust2` has no serde bridge) straight into JSON;
//!   integers beyond 64 bits become floats, as JSON reads them. JSON is detected by a
//!   leading `{`.
//! * **References**: only local (`#/...`) references; an external file or URL, an anchor,
//!   or a dangling pointer skips the operation that needs it (the skip names the pointer).
//! * **Bodies**: JSON, form-urlencoded, multipart, text and raw media types (see
//!   the `body` module); binary request bodies and binary multipart fields are **base64
//!   strings in the input**. **GET and HEAD request bodies are not imported**.
//! * **Header parameters named `Accept`, `Content-Type` or `Authorization` are ignored**, as
//!   the specification says: `Accept` comes from the success response's media type,
//!   `Content-Type` from the body's, `Authorization` from the security schemes.
//! * **Auth** comes from [`OpenApiAuth`] and is matched to the document's security schemes
//!   per operation (see [`OpenApiAuth`]).
//! * **Servers**: [`OpenApiOptions::base_url`] replaces them all; otherwise the first server
//!   of the operation, path item or root (default `/`), with variables substituted, and a
//!   relative URL resolved against the document's URL (an error for a document read from a
//!   string or file: set `base_url`).
//! * **Skipping**: an operation that cannot be mapped (bad parameter, undeclared path
//!   parameter, unresolvable `$ref`, ...) is left out with a `tracing::warn!` and listed in
//!   [`OpenApiImport::skipped`] with the pointer and reason; nothing panics. Schema
//!   keywords the validator cannot take degrade with a warning instead (a `pattern` in
//!   ECMA-262 syntax the regex engine rejects, `$recursiveAnchor`/`$recursiveRef`, a name
//!   listed twice in `required`: see the `sanitize` module); draft-04 boolean
//!   `exclusiveMinimum`/`exclusiveMaximum` in 3.1 documents (a `jsonSchemaDialect` of
//!   draft-04) are converted like 3.0's.
//! * **Validators** are compiled once per operation, by the registry, **at the operation's
//!   first call**: [`register_into`](OpenApiImport::register_into) registers with
//!   [`OperationRegistry::register_lazy`], so importing a thousand operations compiles
//!   nothing (the import itself compiles none either), and an operation never called never
//!   pays for its validators. A schema the validator still refuses at that first call makes
//!   that side of the operation Unknown, with a warning;
//!   [`OperationRegistry::compile_validators`] compiles an operation's validators ahead of
//!   time and reports such a schema as an error.
//!
//! # Names
//!
//! `operationId` is sanitized to `[A-Za-z_][A-Za-z0-9_]*` (other characters become `_`,
//! case is kept, a leading digit gets a `_` prefix); without one the name is
//! `<method>_<path>` with `{param}` → `by_<param>` (`GET /pets/{petId}` →
//! `get_pets_by_petId`). When names collide, operations in a deterministic order (paths
//! sorted, then methods get, put, post, delete, options, head, patch, trace, query) keep the
//! name for the first and add `_2`, `_3`, ... to the others. The subscription twin of an
//! operation offering JSON or SSE is `<name>_stream`, and takes part in the collisions like
//! any name (it comes just before its operation).
//!
//! # Tracing
//!
//! Each request an imported operation sends runs in a client span (`opkit.path =
//! "openapi"`, see [`opkit::trace`]), a child of the calling context's span, and carries it
//! as the W3C `traceparent` and `tracestate` headers. For an SSE subscription the span covers
//! the request up to the event stream's headers (reconnects send the same context).

mod auth;
mod body;
mod bundle;
mod convert;
mod document;
mod error;
mod mapping;
mod media;
mod naming;
mod normalize;
mod options;
mod params;
mod refs;
mod request;
mod response;
mod sanitize;
mod served_replies;
mod servers;
mod sse;
mod sse_stream;
mod yaml;
mod yaml_depth;

pub use document::SpecVersion;
pub use error::{OpenApiError, SkippedOperation};
pub use normalize::Normalization;
pub use options::{
    Credential, DEFAULT_MAX_RESPONSE_BYTES, MIN_SCHEMA_BUDGET, OpenApiAuth, OpenApiOptions,
    SCHEMA_BUDGET_FACTOR, SseReconnect,
};
pub use sse::{DEFAULT_MAX_SSE_EVENT_BYTES, SseError, SseEvent, SseParser};

use opkit::{Handler, OperationRegistry, OperationSpec, RegistryError};
use std::path::Path;
use std::sync::Arc;
use url::Url;

/// Imports OpenAPI documents with one set of [`OpenApiOptions`].
#[derive(Debug, Clone)]
pub struct OpenApiImporter {
    options: OpenApiOptions,
}

/// One imported operation: its spec and its handler.
#[derive(Debug, Clone)]
pub struct ImportedOperation {
    /// The operation's spec (its `extensions["openapi"]` holds the method, path, pointer,
    /// base URL and `operationId`).
    pub spec: OperationSpec,
    /// The handler that sends the HTTP request.
    pub handler: Handler,
}

/// The result of an import: the operations, and the ones that were skipped.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct OpenApiImport {
    /// The document's OpenAPI version.
    pub version: SpecVersion,
    /// `info.title`, when present.
    pub title: Option<String>,
    /// The imported operations, in the document's (deterministic) order.
    pub operations: Vec<ImportedOperation>,
    /// The operations that could not be mapped, each with the pointer and reason.
    pub skipped: Vec<SkippedOperation>,
}

impl OpenApiImport {
    /// The `(spec, handler)` pairs, for registering by hand.
    pub fn into_pairs(self) -> Vec<(OperationSpec, Handler)> {
        self.operations
            .into_iter()
            .map(|op| (op.spec, op.handler))
            .collect()
    }

    /// The ids of the imported operations.
    pub fn ids(&self) -> Vec<String> {
        self.operations.iter().map(|op| op.spec.id()).collect()
    }

    /// Registers every operation; stops at the first registry error (a duplicate id, most
    /// likely from importing the same namespace twice). Returns the registered ids.
    ///
    /// Operations are added with [`OperationRegistry::register_lazy`]: no validator is
    /// compiled here; each operation's are compiled once, at its first call. A schema the
    /// validator still refuses then (the import already degrades the keywords it knows it
    /// cannot take) makes that side of the operation Unknown, with a `tracing::warn!` naming
    /// the operation and the error, rather than losing the operation.
    /// [`OperationRegistry::compile_validators`] compiles an operation's validators ahead of
    /// its first call.
    pub fn register_into(self, registry: &OperationRegistry) -> Result<Vec<String>, RegistryError> {
        let mut ids = Vec::with_capacity(self.operations.len());
        for op in self.operations {
            let id = op.spec.id();
            registry.register_lazy(op.spec, op.handler)?;
            ids.push(id);
        }
        Ok(ids)
    }
}

impl OpenApiImporter {
    /// An importer with these options.
    pub fn new(options: OpenApiOptions) -> Self {
        Self { options }
    }

    /// The options.
    pub fn options(&self) -> &OpenApiOptions {
        &self.options
    }

    /// Imports a document held in a string (JSON or YAML).
    pub fn import_str(&self, text: &str) -> Result<OpenApiImport, OpenApiError> {
        let value = document::parse_text(text)?;
        self.import_value(value)
    }

    /// Imports a document already parsed into JSON.
    pub fn import_value(&self, value: serde_json::Value) -> Result<OpenApiImport, OpenApiError> {
        self.import_document(value, None)
    }

    /// Imports a document from a file (JSON or YAML).
    pub fn import_file(&self, path: impl AsRef<Path>) -> Result<OpenApiImport, OpenApiError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| OpenApiError::Io {
            path: path.display().to_string(),
            source,
        })?;
        self.import_str(&text)
    }

    /// Fetches a document from a URL (JSON or YAML); relative server URLs resolve against it.
    ///
    /// The request carries the options' extra headers and uses their client and timeout.
    pub async fn import_url(&self, url: &str) -> Result<OpenApiImport, OpenApiError> {
        let fetch_error = |message: String| OpenApiError::Fetch {
            url: url.to_owned(),
            message,
        };
        let parsed = Url::parse(url).map_err(|error| fetch_error(error.to_string()))?;
        let client = self.client();
        let mut request = client.get(parsed);
        for (name, value) in &self.options.headers {
            request = request.header(name, value);
        }
        if let Some(timeout) = self.options.timeout {
            request = request.timeout(timeout);
        }
        let response = request
            .send()
            .await
            .map_err(|error| fetch_error(error.to_string()))?;
        if !response.status().is_success() {
            return Err(fetch_error(format!("HTTP {}", response.status())));
        }
        let location = response.url().clone();
        let text = response
            .text()
            .await
            .map_err(|error| fetch_error(error.to_string()))?;
        let value = document::parse_text(&text)?;
        self.import_document(value, Some(location))
    }

    fn client(&self) -> reqwest::Client {
        self.options.client.clone().unwrap_or_default()
    }

    fn check_options(&self) -> Result<(), OpenApiError> {
        let namespace = &self.options.namespace;
        let valid = !namespace.is_empty()
            && namespace.split('.').all(|segment| {
                let mut chars = segment.chars();
                matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
                    && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
            });
        if !valid {
            return Err(OpenApiError::Options(format!(
                "the namespace {namespace:?} must be segments of [A-Za-z_][A-Za-z0-9_]* separated by `.`"
            )));
        }
        if let Some(base) = &self.options.base_url {
            let url = Url::parse(base)
                .map_err(|error| OpenApiError::Options(format!("base_url {base:?}: {error}")))?;
            if !matches!(url.scheme(), "http" | "https") {
                return Err(OpenApiError::Options(format!(
                    "base_url {base:?} is not http(s)"
                )));
            }
        }
        Ok(())
    }

    fn import_document(
        &self,
        value: serde_json::Value,
        location: Option<Url>,
    ) -> Result<OpenApiImport, OpenApiError> {
        self.check_options()?;
        let doc = Arc::new(document::check(value, location)?);
        let (mapped, skipped) = mapping::map_document(&doc, &self.options).map_err(
            |mapping::Exceeded { limit, operations }| OpenApiError::SchemaBudget {
                limit,
                operations,
            },
        )?;
        for skip in &skipped {
            tracing::warn!(
                method = %skip.method,
                path = %skip.path,
                pointer = %skip.pointer,
                reason = %skip.reason,
                "OpenAPI operation skipped"
            );
        }
        let shared = Arc::new(request::ApiClient {
            client: self.client(),
            timeout: self.options.timeout,
            max_sse_event_bytes: self.options.max_sse_event_bytes,
            max_response_bytes: self.options.max_response_bytes,
            sse_reconnect: self.options.sse_reconnect,
        });
        let operations = mapped
            .into_iter()
            .map(|mapping::Mapped { spec, plan }| {
                let plan = Arc::new(plan);
                let handler = if plan.sse.is_some() {
                    request::stream(plan, shared.clone())
                } else {
                    request::unary(plan, shared.clone())
                };
                ImportedOperation { spec, handler }
            })
            .collect();
        Ok(OpenApiImport {
            version: doc.version,
            title: doc
                .root
                .pointer("/info/title")
                .and_then(|t| t.as_str())
                .map(str::to_owned),
            operations,
            skipped,
        })
    }
}

#[cfg(test)]
mod tests;
