//! A registered operation: its spec, handler and validators compiled once at registration.

use super::RegistryError;
use super::handler::Handler;
use crate::schema::{CompiledSchema, is_unknown};
use crate::spec::OperationSpec;
use serde_json::Value;
use std::sync::Arc;

/// The output half of an operation with a known output schema.
pub(crate) struct OutputCheck {
    pub(crate) schema: Value,
    pub(crate) validator: CompiledSchema,
    /// The schema closed by [`super::pipeline::closed_schema`], when it has a closed form: data
    /// it accepts (and that holds no integral float) is what `cast` would return unchanged,
    /// and valid against `schema`, so the pipeline skips normalize and validate for it.
    pub(crate) closed: Option<CompiledSchema>,
}

/// Everything the registry needs to run one operation, built once.
pub(crate) struct Operation {
    pub(crate) id: Arc<str>,
    pub(crate) spec: Arc<OperationSpec>,
    pub(crate) handler: Handler,
    /// `None` when the input schema is Unknown.
    pub(crate) input: Option<CompiledSchema>,
    /// `None` when the output schema is Unknown.
    pub(crate) output: Option<OutputCheck>,
    /// The handler's results are serialized from the type the output schema is derived from
    /// ([`TypedOperation::OUTPUT_FROM_TYPE`](crate::TypedOperation::OUTPUT_FROM_TYPE)).
    pub(crate) output_from_type: bool,
}

impl Operation {
    pub(crate) fn build(spec: OperationSpec, handler: Handler) -> Result<Self, RegistryError> {
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
        let compile = |which: &'static str, schema: &Value| {
            CompiledSchema::compile(schema).map_err(|error| RegistryError::InvalidSchema {
                id: id.clone(),
                which,
                error,
            })
        };
        let input = if is_unknown(&spec.input_schema) {
            None
        } else {
            Some(compile("input", &spec.input_schema)?)
        };
        let output = if is_unknown(&spec.output_schema) {
            None
        } else {
            Some(OutputCheck {
                validator: compile("output", &spec.output_schema)?,
                schema: spec.output_schema.clone(),
                closed: super::pipeline::closed_schema(&spec.output_schema)
                    .and_then(|closed| CompiledSchema::compile(&closed).ok()),
            })
        };
        Ok(Self {
            id: Arc::from(id),
            spec: Arc::new(spec),
            handler,
            input,
            output,
            output_from_type: false,
        })
    }

    /// Where this operation came from, for error messages.
    pub(crate) fn describe(&self) -> String {
        match &self.spec.origin {
            Some(origin) => format!("{} {} defined at {origin}", self.spec.kind, self.id),
            None => format!("{} {}", self.spec.kind, self.id),
        }
    }
}
