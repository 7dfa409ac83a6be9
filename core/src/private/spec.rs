//! The spec of an `#[operation]` (its attribute facts and doc comment) and the codec its
//! JSON handler reads input and writes output with.

use super::*;

/// The compile-time facts of an `#[operation]`, from the attribute and the doc comment.
pub struct SpecParts {
    /// The namespace.
    pub namespace: &'static str,
    /// The name.
    pub name: &'static str,
    /// The kind.
    pub kind: OperationKind,
    /// The doc comment, when there is one.
    pub description: Option<&'static str>,
    /// Required scopes.
    pub scopes: &'static [&'static str],
    /// Accepted roles.
    pub roles: &'static [&'static str],
    /// The application errors declared with `errors(..)`.
    pub errors: &'static [ErrorKind],
    /// The keys of the fn's `State<T>` parameters.
    pub states: &'static [fn() -> StateKey],
    /// The file of the definition (`file!()`).
    pub origin: &'static str,
    /// Its line (`line!()`): the spec's origin is `file:line`.
    pub line: u32,
    /// `layer = ".."` (one per key): the named middleware layers it asks for.
    pub layers: &'static [&'static str],
    /// `timeout = ".."`, in milliseconds.
    pub timeout_ms: Option<u64>,
    /// The attribute's edge groups (`mcp(..)`, `http(..)`, an edge of the application's):
    /// each edge's name and its options as JSON text the macro wrote.
    pub edges: &'static [(&'static str, &'static str)],
}

impl SpecParts {
    /// The parts an attribute without optional keys gives (no description, access rule,
    /// errors, states, layers, timeout or edge options): the macro writes only what differs.
    pub const DEFAULT: SpecParts = SpecParts {
        namespace: "",
        name: "",
        kind: OperationKind::Query,
        description: None,
        scopes: &[],
        roles: &[],
        errors: &[],
        states: &[],
        origin: "",
        line: 0,
        layers: &[],
        timeout_ms: None,
        edges: &[],
    };
}

/// The spec of an operation, from its parts and schemas (built once per operation, by
/// [`OperationCache::spec`]).
pub(super) fn build_spec(
    parts: SpecParts,
    input_schema: fn() -> Value,
    output_schema: fn() -> Value,
) -> OperationSpec {
    let mut access = AccessRule::scopes(parts.scopes.iter().copied());
    access = access.with_roles(parts.roles.iter().copied());
    let mut spec = OperationSpec::new(parts.namespace, parts.name, parts.kind)
        .input_schema(input_schema())
        .output_schema(output_schema())
        .access(access)
        .origin(format!("{}:{}", parts.origin, parts.line));
    for kind in parts.errors {
        spec = spec.error(*kind);
    }
    spec.states = parts.states.iter().map(|key| key()).collect();
    for layer in parts.layers {
        spec = spec.layer(*layer);
    }
    spec.timeout = parts.timeout_ms.map(std::time::Duration::from_millis);
    for (edge, options) in parts.edges {
        // The macro wrote valid JSON; a group that is not is left out rather than guessed.
        if let Ok(options) = serde_json::from_str(options) {
            spec = spec.with_edge_options(*edge, options);
        }
    }
    spec.description = parts
        .description
        .map(normalize_doc)
        .filter(|doc| !doc.is_empty());
    spec
}

/// A doc comment as text: one leading space per line removed (`/// text` gives `" text"`),
/// blank lines at either end dropped.
pub(super) fn normalize_doc(doc: &str) -> String {
    let lines: Vec<&str> = doc
        .lines()
        .map(|line| line.strip_prefix(' ').unwrap_or(line).trim_end())
        .collect();
    lines.join("\n").trim_matches('\n').to_owned()
}

pub(super) fn generator(contract: Contract) -> SchemaGenerator {
    let mut settings = SchemaSettings::draft2020_12();
    settings.contract = contract;
    settings.into_generator()
}

/// The input schema of an operation whose whole input is `T` (a parameter `Input<T>`).
pub fn whole_input_schema<T: ParamSchema>() -> Value {
    crate::schema::input_schema_for::<T>()
}

/// The output schema of an operation whose data is `T`.
pub fn output_schema<T: OutputSchema>() -> Value {
    crate::schema::schema_for::<T>()
}

/// Reads a whole input of type `T` from JSON.
pub fn decode<T: ParamDeserialize>(input: Value) -> Result<T, serde_json::Error> {
    serde_json::from_value(input)
}

/// What a fn returned, as its handler's output: data stays in its type, serialized once by
/// whoever reads it (an edge's bytes, a `Value` envelope); an envelope's data is written as a
/// `Value` and the envelope passed on whole (as one with a `Value`'s data, the form every
/// operation's envelopes take).
///
/// `form` is what the caller makes of the data: kept in its type ([`DataForm::Typed`]) or
/// serialized into a `Value` now ([`DataForm::Value`], `execute`'s envelope).
pub fn encode<T: OutputSerialize + Send + 'static>(
    produced: Produced<T>,
    form: DataForm,
) -> Result<Output, serde_json::Error> {
    match produced {
        Produced::Data(data) => match form {
            DataForm::Typed => Ok(Output::data(data)),
            DataForm::Value => serde_json::to_value(data).map(Output::data_value),
        },
        Produced::Envelope(envelope) => envelope.into_value_envelope().map(Output::envelope),
    }
}

/// How an operation's JSON handler reads its input and writes its output.
pub struct Codec<I, D> {
    /// Reads the input.
    pub decode: fn(Value) -> Result<I, serde_json::Error>,
    /// Writes one result.
    pub encode: fn(Produced<D>, DataForm) -> Result<Output, serde_json::Error>,
    /// The results are serialized from the output type (the fn returns `T` or `Result<T, E>`,
    /// not an envelope), the type the output schema is derived from: the registry's pipeline
    /// wraps them without normalizing or validating them again.
    pub from_type: bool,
    /// The fn takes a context or application state, so the registry makes it a context with
    /// itself as env and its state; without, it hands on the caller's as is.
    pub reads_context: bool,
}

impl<I, D> Codec<I, D> {
    pub(super) fn decode(&self, id: &str, input: Value) -> Result<I, CallError> {
        (self.decode)(input).map_err(|error| invalid_input(id, error))
    }

    pub(super) fn encode(
        &self,
        id: &str,
        produced: Produced<D>,
        form: DataForm,
    ) -> Result<Output, CallError> {
        (self.encode)(produced, form).map_err(|error| unserializable_output(id, error))
    }

    /// What the handler built on this codec for operation `id` says of itself.
    pub(super) fn facts(&self, id: &'static str) -> HandlerFacts {
        HandlerFacts {
            output_from_type: self.from_type,
            reads_context: self.reads_context,
            id: Some(id),
        }
    }
}

// The errors apart from the generic `Codec`, so they are compiled once.
fn invalid_input(id: &str, error: serde_json::Error) -> CallError {
    CallError::new(
        ErrorCode::ValidationError,
        format!("the input of `{id}` is invalid: {error}"),
    )
}

fn unserializable_output(id: &str, error: serde_json::Error) -> CallError {
    CallError::execution(format!(
        "the output of `{id}` could not be serialized: {error}"
    ))
}

impl<I, D> Clone for Codec<I, D> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<I, D> Copy for Codec<I, D> {}
