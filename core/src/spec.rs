//! `OperationSpec` and `OperationKind`: what an operation is, independent of how it runs.

use crate::access::AccessRule;
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
    /// The REST route the HTTP server also serves the operation at
    /// (`#[operation(http(method = "PATCH", path = "/todos/{id}"))]`), beside its RPC route.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http: Option<HttpRoute>,
}

/// How an operation is served as a REST route, beside its RPC route (`/ops/<id>`): the
/// method and path, the success status and the body's shape. Declared with
/// `#[operation(http(..))]` or [`OperationSpec::http`]; served by the HTTP server of
/// `opkit-adapters`, which documents there how the path, query and body map onto the input.
///
/// ```
/// use opkit::{HttpRoute, OperationKind, OperationSpec};
/// let spec = OperationSpec::new("todos", "create", OperationKind::Mutation)
///     .http(HttpRoute::new("POST", "/todos").status(201).location("/todos/{id}"));
/// assert_eq!(spec.http.unwrap().path_variables(), Vec::<&str>::new());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct HttpRoute {
    /// The method, upper case (`GET`, `POST`, `PUT`, `PATCH`, `DELETE`).
    pub method: String,
    /// The path, with `{name}` for each path variable (a field of the input).
    pub path: String,
    /// The status of a success (200 unless given; 204 sends no body).
    pub status: u16,
    /// `true`: the body is the whole envelope, as on the RPC route; `false` (the default):
    /// the body is the bare `data`, what REST clients expect.
    #[serde(default)]
    pub envelope: bool,
    /// A `Location` header for a success, with `{name}` filled from the output's fields
    /// (`/todos/{id}` after a create).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
    /// The largest request body the route takes, in bytes (the server's limit when `None`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body_limit: Option<usize>,
}

impl HttpRoute {
    /// `method` (any case) at `path`, answering 200 with the bare data.
    pub fn new(method: impl Into<String>, path: impl Into<String>) -> Self {
        Self {
            method: method.into().to_ascii_uppercase(),
            path: path.into(),
            status: 200,
            envelope: false,
            location: None,
            body_limit: None,
        }
    }

    /// The status of a success.
    #[must_use]
    pub fn status(mut self, status: u16) -> Self {
        self.status = status;
        self
    }

    /// Sends the whole envelope as the body, not the bare data.
    #[must_use]
    pub fn envelope(mut self) -> Self {
        self.envelope = true;
        self
    }

    /// A `Location` header template, filled from the output's fields.
    #[must_use]
    pub fn location(mut self, location: impl Into<String>) -> Self {
        self.location = Some(location.into());
        self
    }

    /// The largest request body the route takes, in bytes.
    #[must_use]
    pub fn body_limit(mut self, bytes: usize) -> Self {
        self.body_limit = Some(bytes);
        self
    }

    /// The names of the path's `{variables}`, in order.
    pub fn path_variables(&self) -> Vec<&str> {
        self.path
            .split('/')
            .filter_map(|segment| segment.strip_prefix('{')?.strip_suffix('}'))
            .collect()
    }
}

impl OperationSpec {
    /// Extension key: the name tool servers (the MCP server) serve the operation under,
    /// instead of one derived from its id (`#[operation(tool_name = "..")]` sets it).
    pub const EXT_TOOL_NAME: &'static str = "opkit.toolName";

    /// Extension key: a JSON object tool servers add to the tool's `_meta` (the MCP server,
    /// on `tools/list`), e.g. `{"ui": {"resourceUri": "ui://notes/list"}}`. Keys opkit sets
    /// itself (`opkit/…`) keep opkit's values.
    ///
    /// ```
    /// use opkit::{OperationKind, OperationSpec};
    /// let spec = OperationSpec::new("notes", "list", OperationKind::Query).extension(
    ///     OperationSpec::EXT_TOOL_META,
    ///     serde_json::json!({"ui": {"resourceUri": "ui://notes/list"}}),
    /// );
    /// assert!(spec.extensions[OperationSpec::EXT_TOOL_META].is_object());
    /// ```
    pub const EXT_TOOL_META: &'static str = "opkit.toolMeta";

    /// Extension key: the operation is an MCP *resource* at this URI, or a resource
    /// template when the URI has `{variables}` (RFC 6570 level 1, each an input field):
    /// `{"uri": "notes://{id}"}`, optionally with `"mimeType"`. `resources/read` runs it; a
    /// subscription with the same URI backs `resources/subscribe`. Served as a resource, it
    /// is not also a tool. `#[operation(resource = "notes://{id}")]` sets it.
    ///
    /// ```
    /// use opkit::{OperationKind, OperationSpec};
    /// let spec = OperationSpec::new("notes", "get", OperationKind::Query).mcp_resource("notes://{id}");
    /// assert_eq!(spec.extensions[OperationSpec::EXT_MCP_RESOURCE]["uri"], "notes://{id}");
    /// ```
    pub const EXT_MCP_RESOURCE: &'static str = "opkit.mcpResource";

    /// Extension key: the operation is an MCP *prompt* (`prompts/get` runs it with the
    /// prompt's arguments as input; its data is the prompt's messages, see
    /// `opkit::envelope::PromptMessage`). Served as a prompt, it is not also a tool.
    /// `#[operation(prompt)]` sets it.
    pub const EXT_MCP_PROMPT: &'static str = "opkit.mcpPrompt";

    /// Extension key: where the MCP server finds the completions (`completion/complete`) of
    /// a prompt's arguments or a resource template's variables — an object from argument
    /// name to the id of a *query* that completes it: `{"topic": "notes.topics"}`. The query
    /// gets `value` (what the user typed so far) and, when its input has the fields,
    /// `argument` (the argument's name) and `arguments` (the other arguments already given,
    /// an object of strings); its data is the completions, a list of strings (at most 100
    /// are sent) or an object `{"values": [..], "total": n, "hasMore": bool}`. Arguments
    /// without one complete from the values their field's schema lists (`enum`, `const`s).
    /// `#[operation(prompt, complete(topic = "notes.topics"))]` sets it.
    ///
    /// ```
    /// use opkit::{OperationKind, OperationSpec};
    /// let spec = OperationSpec::new("notes", "summarize", OperationKind::Query)
    ///     .mcp_prompt()
    ///     .mcp_completion("topic", "notes.topics");
    /// assert_eq!(spec.extensions[OperationSpec::EXT_MCP_COMPLETE]["topic"], "notes.topics");
    /// ```
    pub const EXT_MCP_COMPLETE: &'static str = "opkit.mcpComplete";

    /// Extension key: over MCP, the operation runs as a *task* (the
    /// `io.modelcontextprotocol/tasks` extension) for a client that negotiated tasks: the call
    /// answers at once with the task, which the client polls (`tasks/get`) to its result,
    /// answers questions of (`tasks/update`) and cancels (`tasks/cancel`, which reaches the
    /// operation's cancellation). Its value is `"optional"` (other clients call it as usual;
    /// `#[operation(task)]`) or `"required"` (other clients are refused with -32021;
    /// `#[operation(task = "required")]`), or `"after_input"`
    /// (`#[operation(task = "after_input")]`): for a 2026-07-28 client that negotiated tasks
    /// the operation first runs in the request, and a question it asks there ends the call
    /// with an input-required result (no task yet); the call that brings the answers starts
    /// the task, in which the operation runs again from the start with those answers (a
    /// later question is asked through the task). Other clients call it as with `"optional"`.
    pub const EXT_MCP_TASK: &'static str = "opkit.mcpTask";

    /// Lets the operation run as an MCP task (see [`Self::EXT_MCP_TASK`]); `required`
    /// refuses clients that cannot follow one.
    #[must_use]
    pub fn mcp_task(self, required: bool) -> Self {
        let support = if required { "required" } else { "optional" };
        self.extension(Self::EXT_MCP_TASK, Value::from(support))
    }

    /// Lets the operation gather its input by input-required rounds and become an MCP task
    /// once the client has answered (`"after_input"`, see [`Self::EXT_MCP_TASK`]).
    ///
    /// ```
    /// use opkit::{OperationKind, OperationSpec};
    /// let spec = OperationSpec::new("jobs", "deploy", OperationKind::Mutation).mcp_task_after_input();
    /// assert_eq!(spec.extensions[OperationSpec::EXT_MCP_TASK], "after_input");
    /// ```
    #[must_use]
    pub fn mcp_task_after_input(self) -> Self {
        self.extension(Self::EXT_MCP_TASK, Value::from("after_input"))
    }

    /// Marks the operation an MCP resource at `uri` (see [`Self::EXT_MCP_RESOURCE`]).
    #[must_use]
    pub fn mcp_resource(self, uri: impl Into<String>) -> Self {
        self.extension(
            Self::EXT_MCP_RESOURCE,
            serde_json::json!({"uri": uri.into()}),
        )
    }

    /// Completes the MCP argument `argument` (a prompt argument or template variable of this
    /// operation) with the query `completer` (see [`Self::EXT_MCP_COMPLETE`]).
    #[must_use]
    pub fn mcp_completion(
        mut self,
        argument: impl Into<String>,
        completer: impl Into<String>,
    ) -> Self {
        let entry = self
            .extensions
            .entry(Self::EXT_MCP_COMPLETE.to_owned())
            .or_insert_with(|| Value::Object(Map::new()));
        if !entry.is_object() {
            *entry = Value::Object(Map::new());
        }
        if let Value::Object(map) = entry {
            map.insert(argument.into(), Value::String(completer.into()));
        }
        self
    }

    /// Marks the operation an MCP prompt (see [`Self::EXT_MCP_PROMPT`]).
    #[must_use]
    pub fn mcp_prompt(self) -> Self {
        self.extension(Self::EXT_MCP_PROMPT, Value::Bool(true))
    }

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
            http: None,
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

    /// Serves the operation also as the REST route `route` (see [`HttpRoute`]).
    #[must_use]
    pub fn http(mut self, route: HttpRoute) -> Self {
        self.http = Some(route);
        self
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
