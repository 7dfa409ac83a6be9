//! [`CompiledDefinitions`]: the validators of one import's [`Definitions`](super::Definitions),
//! each compiled at first use and kept with the definitions (filled in by `shared_validate`).

use super::error::SchemaError;
use jsonschema::Validator;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, OnceLock};

/// One definition compiled on its own, or why it is not.
pub(super) type Slot = OnceLock<Result<Arc<Validator>, Unshareable>>;

/// The compiled definitions of one [`Definitions`], built at first use and kept with them.
pub(crate) struct CompiledDefinitions {
    /// Per definition: its validator, or why it cannot be shared (unset: not compiled yet).
    pub(super) slots: Box<[Slot]>,
    /// Per definition: it and every definition it reaches compiled.
    pub(super) closed: Box<[AtomicBool]>,
}

/// Why a definition is not compiled on its own.
#[derive(Clone)]
pub(super) enum Unshareable {
    /// Its meaning depends on the document around it: compile the self-contained form.
    Context,
    /// It does not compile.
    Invalid(SchemaError),
}

impl CompiledDefinitions {
    pub(crate) fn new(len: usize) -> Self {
        Self {
            slots: (0..len).map(|_| OnceLock::new()).collect(),
            closed: (0..len).map(|_| AtomicBool::new(false)).collect(),
        }
    }
}
