//! OpenAPI import: any HTTP API with an OpenAPI 3.0, 3.1 or 3.2 document becomes operations
//! in a registry, called through the same `execute`/`subscribe` and returning
//! [`http_envelope`](opkit::envelope::http_envelope)s.
//!
//! The manual is `adapters/docs/openapi.md`, included below. Reading the code:
//! `OpenApiImporter` below reads the document (`document.rs`, `refs.rs`, `bundle/`), `mapping/`
//! turns each HTTP operation into a spec and a plan, and `request.rs` / `response.rs` /
//! `sse_stream.rs` run a plan at call time.
#![doc = "\n"]
#![doc = include_str!("../../docs/openapi.md")]

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
    Credential, DEFAULT_MAX_REDIRECTS, DEFAULT_MAX_RESPONSE_BYTES, MIN_SCHEMA_BUDGET, OpenApiAuth,
    OpenApiOptions, SCHEMA_BUDGET_FACTOR, SseReconnect, default_client,
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
    /// The request carries the options' extra headers and uses their client and timeout. The
    /// default client follows no redirect to another origin (the headers would go along): a
    /// document served from elsewhere is fetched from its own URL, or with a client of your
    /// own ([`OpenApiOptions::client`]).
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
        self.options
            .client
            .clone()
            .unwrap_or_else(options::default_client)
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
