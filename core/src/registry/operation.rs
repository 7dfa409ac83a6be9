//! A registered operation: its spec, handler and validators, compiled once.
//!
//! Validators are compiled either at registration ([`Compile::Eager`], what
//! [`OperationRegistry::register`](super::OperationRegistry::register) does) or at the first
//! call that needs each side ([`Compile::Lazy`], what
//! [`OperationRegistry::register_lazy`](super::OperationRegistry::register_lazy) does). Either
//! way each side is compiled at most once and kept in a [`OnceLock`]: once it is set, a call
//! reads it with one atomic load.

use super::RegistryError;
use super::handler::Handler;
use crate::Bounds;
use crate::context::OperationContext;
use crate::envelope::OperationId;
use crate::error::CallError;
use crate::schema::{CompiledSchema, SchemaError, closed_form};
use crate::spec::OperationSpec;
use serde_json::Value;
use std::sync::{Arc, OnceLock};

/// When an operation's validators are compiled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Compile {
    /// At registration; a schema that does not compile refuses the operation.
    Eager,
    /// At the first use of each side; a schema that does not compile then counts as Unknown.
    Lazy,
}

/// The output half of an operation with a known output schema.
pub(crate) struct OutputCheck {
    pub(crate) validator: CompiledSchema,
    /// The schema closed by [`closed_form`] (sharing its import's closed definitions), when it
    /// has a closed form: data
    /// it accepts (and that holds no integral float) is what `cast` would return unchanged,
    /// and valid against the output schema, so the pipeline skips normalize and validate for
    /// it.
    pub(crate) closed: Option<CompiledSchema>,
}

/// One compiled side of an operation.
pub(crate) enum Side<T> {
    /// The schema is Unknown: nothing to check.
    Unknown,
    /// The compiled schema.
    Compiled(T),
    /// The schema does not compile (lazy registration only); the side counts as Unknown.
    Invalid(SchemaError),
}

impl<T> Side<T> {
    /// The compiled schema, if there is one to check against.
    pub(crate) fn compiled(&self) -> Option<&T> {
        match self {
            Side::Compiled(compiled) => Some(compiled),
            Side::Unknown | Side::Invalid(_) => None,
        }
    }
}

/// Everything the registry needs to run one operation.
pub(crate) struct Operation {
    pub(crate) id: Arc<str>,
    /// The id its results' local envelopes name: `id` shared, or the `&'static str` an
    /// `#[operation]` fn was compiled with (no count to keep per result; see `HandlerFacts`).
    pub(crate) result_id: OperationId,
    pub(crate) spec: Arc<OperationSpec>,
    pub(crate) handler: Handler,
    /// The input validator. Set at registration for [`Compile::Eager`], by the first call
    /// otherwise; `OnceLock` runs the compile once even when first calls race (the others
    /// wait for it), and a set value is never replaced.
    input: OnceLock<Side<CompiledSchema>>,
    /// The output validators; set like `input`.
    output: OnceLock<Side<OutputCheck>>,
    /// When the validators are compiled: a lazy operation logs a schema that does not
    /// compile, an eager one is refused with it.
    compile: Compile,
    /// The handler's results are serialized from the type the output schema is derived from
    /// (the codec's `from_type`, see `HandlerFacts`).
    pub(crate) output_from_type: bool,
    /// The handler may read its context beyond the call's bounds (the codec's
    /// `reads_context`); when it does not, the registry hands it the caller's context as is,
    /// without adding itself as env or its application state, and without the call's
    /// cancellation, which only the guard then holds.
    pub(crate) reads_context: bool,
}

/// How a call holds its operation: shared (`Arc<Operation>`, for a call that may outlive its
/// caller) or lent by the caller (`&Arc<Operation>`, for a call that does not outlive the
/// caller's own hold on it: no reference count is taken and dropped, which on a short call is
/// two atomic read-modify-writes, each waiting for the call's stores before it).
pub(crate) trait HeldOperation: Send + Sync + Unpin {
    /// The operation.
    fn get(&self) -> &Operation;

    /// The operation shared, for what must own it (a subscription's stream, a middleware
    /// chain's end): a clone of the reference when it was lent.
    fn shared(self) -> Arc<Operation>;
}

impl HeldOperation for Arc<Operation> {
    fn get(&self) -> &Operation {
        self
    }

    fn shared(self) -> Arc<Operation> {
        self
    }
}

impl HeldOperation for &Arc<Operation> {
    fn get(&self) -> &Operation {
        self
    }

    fn shared(self) -> Arc<Operation> {
        Arc::clone(self)
    }
}

impl Operation {
    /// The bounds the guard runs a call of this operation under, from `ctx`. A handler that
    /// reads nothing from its context gets it without the call's cancellation, which moves
    /// into the bounds the guard races it against (sharing a token costs a lock to clone and
    /// another to drop); one that reads it shares it.
    pub(crate) fn bounds(&self, ctx: &mut OperationContext) -> Bounds {
        if self.reads_context {
            ctx.bounds()
        } else {
            ctx.take_bounds()
        }
    }

    pub(crate) fn build(
        spec: OperationSpec,
        handler: Handler,
        compile: Compile,
    ) -> Result<Self, RegistryError> {
        let id = spec.id();
        crate::spec::check_name("namespace", &spec.namespace, true)
            .and_then(|()| crate::spec::check_name("name", &spec.name, false))
            .map_err(|message| RegistryError::InvalidName {
                id: id.clone(),
                message,
            })?;
        if spec.kind.is_stream() != handler.is_stream() {
            return Err(RegistryError::HandlerKindMismatch {
                id,
                kind: spec.kind,
            });
        }
        let id: Arc<str> = Arc::from(id);
        let operation = Self {
            result_id: OperationId::from(&id),
            id,
            spec: Arc::new(spec),
            handler,
            input: OnceLock::new(),
            output: OnceLock::new(),
            compile,
            output_from_type: false,
            reads_context: true,
        };
        if compile == Compile::Eager {
            operation.compile_now()?;
        }
        Ok(operation)
    }

    /// Compiles both sides now (when not yet done); `Err` names the first side whose schema
    /// does not compile.
    pub(crate) fn compile_now(&self) -> Result<(), RegistryError> {
        let invalid = |which: &'static str, error: &SchemaError| RegistryError::InvalidSchema {
            id: self.id.to_string(),
            which,
            error: error.clone(),
        };
        if let Side::Invalid(error) = self.input_side() {
            return Err(invalid("input", error));
        }
        if let Side::Invalid(error) = self.output_side() {
            return Err(invalid("output", error));
        }
        Ok(())
    }

    /// Checks `input` against the input schema (nothing to check when it is Unknown).
    pub(crate) fn check_input(&self, input: &Value) -> Result<(), CallError> {
        match self.input() {
            Some(schema) => schema
                .validate(input)
                .map_err(|violations| CallError::validation("input", violations)),
            None => Ok(()),
        }
    }

    /// The input validator (`None` when the input schema is Unknown or does not compile),
    /// compiled on first use.
    pub(crate) fn input(&self) -> Option<&CompiledSchema> {
        self.input_side().compiled()
    }

    /// The output validators (`None` when the output schema is Unknown or does not compile),
    /// compiled on first use.
    pub(crate) fn output(&self) -> Option<&OutputCheck> {
        self.output_side().compiled()
    }

    fn input_side(&self) -> &Side<CompiledSchema> {
        self.input.get_or_init(|| {
            let schema = &self.spec.input_schema;
            if schema.is_unknown() {
                return Side::Unknown;
            }
            self.compiled_or_warn("input", CompiledSchema::compile(schema))
        })
    }

    fn output_side(&self) -> &Side<OutputCheck> {
        self.output.get_or_init(|| {
            let schema = &self.spec.output_schema;
            if schema.is_unknown() {
                return Side::Unknown;
            }
            let check = CompiledSchema::compile(schema).map(|validator| OutputCheck {
                validator,
                closed: closed_form(schema)
                    .and_then(|closed| CompiledSchema::compile(&closed).ok()),
            });
            self.compiled_or_warn("output", check)
        })
    }

    /// A side from a compile result; a failure is logged (once: the side is set once).
    fn compiled_or_warn<T>(
        &self,
        which: &'static str,
        compiled: Result<T, SchemaError>,
    ) -> Side<T> {
        match compiled {
            Ok(compiled) => Side::Compiled(compiled),
            Err(error) => {
                if self.compile == Compile::Lazy {
                    tracing::warn!(
                    operation = %self.id,
                    schema = which,
                    %error,
                    "the {which} schema does not compile; the operation runs with an Unknown {which} schema"
                    );
                }
                Side::Invalid(error)
            }
        }
    }

    /// Where this operation came from, for error messages.
    pub(crate) fn describe(&self) -> String {
        match &self.spec.origin {
            Some(origin) => format!("{} {} defined at {origin}", self.spec.kind, self.id),
            None => format!("{} {}", self.spec.kind, self.id),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::OperationKind;
    use serde_json::json;
    use std::sync::Barrier;

    fn operation(
        input: serde_json::Value,
        output: serde_json::Value,
        compile: Compile,
    ) -> Operation {
        let spec = OperationSpec::new("api", "op", OperationKind::Query)
            .input_schema(input)
            .output_schema(output);
        let handler = Handler::unary(|input, _ctx| async move { Ok(input) });
        Operation::build(spec, handler, compile).unwrap()
    }

    #[test]
    fn results_name_a_compiled_in_id_only_when_it_is_the_registered_one() {
        let registry = crate::OperationRegistry::new();
        let typed = |id: &'static str| {
            let mut handler = Handler::unary(|input, _ctx| async move { Ok(input) });
            handler.1.id = Some(id);
            handler
        };
        let spec = |name: &str| OperationSpec::new("api", name, OperationKind::Query);
        registry
            .register_typed_parts(spec("op"), typed("api.op"))
            .unwrap();
        // A handler registered under a spec of another id: its results name that id.
        registry
            .register_typed_parts(spec("renamed"), typed("api.op"))
            .unwrap();
        let op = registry.inner.find("api.op").unwrap();
        assert!(op.result_id.is_static() && op.result_id == "api.op");
        let renamed = registry.inner.find("api.renamed").unwrap();
        assert!(!renamed.result_id.is_static() && renamed.result_id == "api.renamed");
        // A handler written by hand: the registry's shared id.
        registry
            .register(
                spec("dynamic"),
                Handler::unary(|input, _ctx| async move { Ok(input) }),
            )
            .unwrap();
        assert!(
            !registry
                .inner
                .find("api.dynamic")
                .unwrap()
                .result_id
                .is_static()
        );
    }

    #[test]
    fn eager_compiles_at_build_and_lazy_at_first_use() {
        let object = json!({"type": "object", "properties": {"n": {"type": "integer"}}});
        let eager = operation(object.clone(), object.clone(), Compile::Eager);
        assert!(eager.input.get().is_some() && eager.output.get().is_some());

        let lazy = operation(object.clone(), object, Compile::Lazy);
        assert!(lazy.input.get().is_none() && lazy.output.get().is_none());
        let input = lazy.input().expect("a known input schema compiles");
        assert!(!input.is_valid(&json!({"n": "x"})));
        // Each side compiles at its own first use.
        assert!(lazy.output.get().is_none());
        assert!(lazy.output().is_some_and(|output| output.closed.is_some()));
        // Later uses read the same compiled validator.
        assert!(std::ptr::eq(input, lazy.input().unwrap()));
    }

    #[test]
    fn an_uncompilable_schema_refuses_eager_and_is_unknown_when_lazy() {
        let bad = json!({"type": "no such type"});
        let spec = OperationSpec::new("api", "op", OperationKind::Query).output_schema(bad.clone());
        let handler = Handler::unary(|input, _ctx| async move { Ok(input) });
        let Err(error) = Operation::build(spec, handler, Compile::Eager) else {
            panic!("an uncompilable output schema was accepted");
        };
        assert!(matches!(
            error,
            RegistryError::InvalidSchema {
                which: "output",
                ..
            }
        ));

        let lazy = operation(bad, json!(true), Compile::Lazy);
        assert!(lazy.input().is_none(), "the broken side counts as Unknown");
        assert!(lazy.output().is_none(), "Unknown output");
        let Err(RegistryError::InvalidSchema { id, which, .. }) = lazy.compile_now() else {
            panic!("compile_now did not report the broken input schema");
        };
        assert_eq!((id.as_str(), which), ("api.op", "input"));
    }

    #[test]
    fn racing_first_uses_compile_once_and_share_the_result() {
        let schema = json!({"type": "object", "properties": {"n": {"type": "integer"}}});
        let lazy = operation(schema.clone(), schema, Compile::Lazy);
        let threads = 8;
        let barrier = Barrier::new(threads);
        let seen: Vec<usize> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..threads)
                .map(|_| {
                    scope.spawn(|| {
                        barrier.wait();
                        let input = lazy.input().unwrap();
                        assert!(input.is_valid(&json!({"n": 1})));
                        std::ptr::from_ref(input) as usize
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        // One compiled validator, seen by every thread.
        assert!(seen.windows(2).all(|pair| pair[0] == pair[1]), "{seen:?}");
    }
}
