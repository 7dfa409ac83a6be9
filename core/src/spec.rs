//! `OperationSpec` and `OperationKind`: what an operation is, independent of how it runs.

use crate::access::AccessRule;
use crate::edge::EdgeOptionsError;
use crate::error::ErrorKind;
use crate::schema::Schema;
use crate::state::StateKey;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::fmt;

/// How an operation is called and what it returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum OperationKind {
    /// Reads; returns one result. Called with `execute`.
    Query,
    /// Changes something; returns one result. Called with `execute`.
    Mutation,
    /// Returns a stream of results. Called with `subscribe`.
    Subscription,
}

impl OperationKind {
    /// The wire form: `"QUERY"`, `"MUTATION"` or `"SUBSCRIPTION"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Query => "QUERY",
            Self::Mutation => "MUTATION",
            Self::Subscription => "SUBSCRIPTION",
        }
    }

    /// `true` for subscriptions (streamed results).
    pub const fn is_stream(self) -> bool {
        matches!(self, Self::Subscription)
    }
}

impl fmt::Display for OperationKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The description of an operation: its id, kind, schemas and access rule.
///
/// Built with [`OperationSpec::new`] and the builder methods; `#[operation]` builds it for you.
///
/// ```
/// use opkit::{OperationKind, OperationSpec};
/// let spec = OperationSpec::new("math", "add", OperationKind::Query)
///     .description("Adds two integers.")
///     .input_schema(serde_json::json!({"type": "object"}));
/// assert_eq!(spec.id(), "math.add");
/// assert!(spec.has_unknown_output());
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct OperationSpec {
    /// The namespace, e.g. `math` (segments of `[A-Za-z_][A-Za-z0-9_]*` joined by `.`).
    pub namespace: String,
    /// The name within the namespace, e.g. `add`.
    pub name: String,
    /// Query, mutation or subscription.
    pub kind: OperationKind,
    /// What the operation does (the doc comment of an `#[operation]` fn).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// JSON Schema (2020-12) of the input object. It reads as a [`Value`] (it derefs to the
    /// self-contained schema); see [`Schema`] for schemas sharing definitions.
    pub input_schema: Schema,
    /// JSON Schema (2020-12) of the output data; `true` or `{}` means Unknown.
    pub output_schema: Schema,
    /// Who may call the operation through the call protocol.
    #[serde(default)]
    pub access: AccessRule,
    /// Free-form facts adapters keep about the operation (e.g. the MCP tool's real name and
    /// annotations, the HTTP method and path).
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub extensions: Map<String, Value>,
    /// Where the operation was defined (`file:line` for `#[operation]`, the adapter otherwise);
    /// used in duplicate-id errors.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
    /// The application errors the operation may answer with, beside the protocol's (the
    /// HTTP server documents a response for each; see [`ErrorKind`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<ErrorKind>,
    /// The application state types the operation reads (its `State<T>` parameters), so a
    /// registry can report a missing one at startup
    /// ([`OperationRegistry::check_states`](crate::OperationRegistry::check_states)). Not
    /// part of the wire form.
    #[serde(skip)]
    pub states: Vec<StateKey>,
    /// The named middleware layers the operation asks for (`#[operation(layer = "..")]`):
    /// middleware registered with [`Scope::Layer`](crate::middleware::Scope::Layer) of one of
    /// these names runs for its calls.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub layers: Vec<String>,
    /// How long one call may run (`#[operation(timeout = "5s")]`): each call gets a deadline
    /// this far from its start (an earlier deadline of the caller's stays), on every path.
    #[serde(skip)]
    pub timeout: Option<std::time::Duration>,
    /// The options the operation gives each edge, by the edge's name: the groups of its
    /// attribute other than opkit's own (`#[operation(mcp(resource = ".."), http(..))]` gives
    /// `{"mcp": {"resource": ".."}, "http": {..}}`), keys as written there. Core carries them
    /// without knowing them; each edge reads its own, typed, with
    /// [`edge_options`](Self::edge_options) and checks them when it starts, so a new edge
    /// option, or an edge of the application's, needs no change to this type or to the
    /// attribute (see [`edge`](crate::edge)).
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub edges: Map<String, Value>,
}

impl OperationSpec {
    /// A spec with an open input schema (`{"type":"object"}`), Unknown output and public access.
    pub fn new(namespace: impl Into<String>, name: impl Into<String>, kind: OperationKind) -> Self {
        Self {
            namespace: namespace.into(),
            name: name.into(),
            kind,
            description: None,
            input_schema: Schema::new(serde_json::json!({"type": "object"})),
            output_schema: Schema::new(Value::Bool(true)),
            access: AccessRule::default(),
            extensions: Map::new(),
            origin: None,
            errors: Vec::new(),
            states: Vec::new(),
            layers: Vec::new(),
            timeout: None,
            edges: Map::new(),
        }
    }

    /// The id: `namespace.name`.
    pub fn id(&self) -> String {
        format!("{}.{}", self.namespace, self.name)
    }

    /// Sets the description.
    #[must_use]
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Sets the input schema (a [`Value`] or a [`Schema`]).
    #[must_use]
    pub fn input_schema(mut self, schema: impl Into<Schema>) -> Self {
        self.input_schema = schema.into();
        self
    }

    /// Sets the output schema (`true` or `{}` for Unknown).
    #[must_use]
    pub fn output_schema(mut self, schema: impl Into<Schema>) -> Self {
        self.output_schema = schema.into();
        self
    }

    /// Sets the access rule.
    #[must_use]
    pub fn access(mut self, access: AccessRule) -> Self {
        self.access = access;
        self
    }

    /// Records a free-form fact about the operation.
    #[must_use]
    pub fn extension(mut self, key: impl Into<String>, value: Value) -> Self {
        self.extensions.insert(key.into(), value);
        self
    }

    /// Declares an application error the operation may answer with (documented by the HTTP
    /// server's OpenAPI document with its status).
    #[must_use]
    pub fn error(mut self, kind: ErrorKind) -> Self {
        if !self.errors.contains(&kind) {
            self.errors.push(kind);
        }
        self
    }

    /// Declares that the handler reads the application state `T`
    /// ([`OperationContext::state`](crate::OperationContext::state)), so that
    /// [`OperationRegistry::check_states`](crate::OperationRegistry::check_states) reports
    /// it missing before the first call.
    #[must_use]
    pub fn requires_state<T: Send + Sync + 'static>(mut self) -> Self {
        let key = StateKey::of::<T>();
        if !self.states.contains(&key) {
            self.states.push(key);
        }
        self
    }

    /// Asks for the middleware layer `name` (see [`Scope::Layer`](crate::middleware::Scope::Layer)).
    #[must_use]
    pub fn layer(mut self, name: impl Into<String>) -> Self {
        let name = name.into();
        if !self.layers.contains(&name) {
            self.layers.push(name);
        }
        self
    }

    /// Gives each call a deadline `timeout` from its start (the `timeout` field).
    ///
    /// ```
    /// use opkit::{OperationKind, OperationSpec};
    /// use std::time::Duration;
    /// let spec = OperationSpec::new("reports", "build", OperationKind::Mutation)
    ///     .timeout(Duration::from_secs(5));
    /// assert_eq!(spec.timeout, Some(Duration::from_secs(5)));
    /// ```
    #[must_use]
    pub fn timeout(mut self, timeout: std::time::Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Gives the edge `edge` the options `options` (a JSON object, keys as an attribute
    /// group writes them), replacing any it had.
    #[must_use]
    pub fn with_edge_options(mut self, edge: impl Into<String>, options: Value) -> Self {
        self.edges.insert(edge.into(), options);
        self
    }

    /// Sets one option `key` of the edge `edge` to `value`, keeping its others.
    ///
    /// ```
    /// use opkit::{OperationKind, OperationSpec};
    /// let spec = OperationSpec::new("notes", "get", OperationKind::Query)
    ///     .with_edge_option("mcp", "resource", serde_json::json!("notes://{id}"))
    ///     .with_edge_option("mcp", "tool_name", serde_json::json!("get_note"));
    /// assert_eq!(spec.edges["mcp"]["resource"], "notes://{id}");
    /// assert_eq!(spec.edges["mcp"]["tool_name"], "get_note");
    /// ```
    #[must_use]
    pub fn with_edge_option(mut self, edge: &str, key: impl Into<String>, value: Value) -> Self {
        let group = self
            .edges
            .entry(edge.to_owned())
            .or_insert_with(|| Value::Object(Map::new()));
        if !group.is_object() {
            *group = Value::Object(Map::new());
        }
        if let Value::Object(options) = group {
            options.insert(key.into(), value);
        }
        self
    }

    /// The options the operation gives the edge `edge`, read as `T` (`None` when it gives
    /// none); [`EdgeOptionsError`] naming the operation, the edge and what is wrong when they
    /// do not read as `T`. An edge calls it for every operation when it starts.
    ///
    /// ```
    /// use opkit::{OperationKind, OperationSpec};
    /// use serde::Deserialize;
    ///
    /// /// The options of an application's own edge, `#[operation(grpc(method = ".."))]`.
    /// #[derive(Debug, Deserialize)]
    /// #[serde(deny_unknown_fields)]
    /// struct GrpcOptions {
    ///     method: String,
    /// }
    ///
    /// let spec = OperationSpec::new("notes", "get", OperationKind::Query)
    ///     .with_edge_option("grpc", "method", serde_json::json!("GetNote"));
    /// let options: GrpcOptions = spec.edge_options("grpc").unwrap().unwrap();
    /// assert_eq!(options.method, "GetNote");
    /// let wrong = spec.clone().with_edge_option("grpc", "methd", serde_json::json!("x"));
    /// let error = wrong.edge_options::<GrpcOptions>("grpc").unwrap_err();
    /// assert!(error.to_string().contains("unknown field `methd`"), "{error}");
    /// ```
    pub fn edge_options<T: serde::de::DeserializeOwned>(
        &self,
        edge: &str,
    ) -> Result<Option<T>, EdgeOptionsError> {
        let Some(options) = self.edges.get(edge) else {
            return Ok(None);
        };
        serde_path_to_error::deserialize(options)
            .map(Some)
            .map_err(|error| {
                let reason = match error.path().to_string().as_str() {
                    "." => error.inner().to_string(),
                    path => format!("`{path}`: {}", error.inner()),
                };
                EdgeOptionsError::new(self.id(), edge, reason)
            })
    }

    /// Records where the operation was defined.
    #[must_use]
    pub fn origin(mut self, origin: impl Into<String>) -> Self {
        self.origin = Some(origin.into());
        self
    }

    /// `true` when the output schema is Unknown (`true` or `{}`): no normalization, no validation.
    pub fn has_unknown_output(&self) -> bool {
        self.output_schema.is_unknown()
    }
}

/// Checks a namespace (`seg(.seg)*`) or a name (one segment) against `[A-Za-z_][A-Za-z0-9_]*`.
pub(crate) fn check_name(what: &str, text: &str, dotted: bool) -> Result<(), String> {
    let valid_segment = |segment: &str| {
        let mut chars = segment.chars();
        matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    let ok = if dotted {
        text.split('.').all(valid_segment)
    } else {
        valid_segment(text)
    };
    if ok {
        Ok(())
    } else {
        let rule = if dotted {
            "segments of [A-Za-z_][A-Za-z0-9_]* separated by `.`"
        } else {
            "[A-Za-z_][A-Za-z0-9_]*"
        };
        Err(format!("{what} {text:?} must match {rule}"))
    }
}
