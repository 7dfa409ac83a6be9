//! The registry's middleware ([`Layers`]), the chain one call passes through, and [`Next`].

use super::{Call, Middleware, Outcome, Scope};
use crate::error::CallError;
use crate::spec::OperationSpec;
use futures::future::BoxFuture;
use std::fmt;
use std::sync::Arc;

/// The middleware one call passes through, outermost first.
pub(crate) type Chain = Arc<[Arc<dyn Middleware>]>;

/// The middleware registered on a registry, in registration order. Replaced whole when one is
/// added (registration happens at startup, reading it per call).
#[derive(Clone, Default)]
pub(crate) struct Layers {
    entries: Vec<(Scope, Arc<dyn Middleware>)>,
    /// The whole chain, when every entry covers every operation: calls share it.
    everywhere: Option<Chain>,
}

impl fmt::Debug for Layers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.entries.iter().map(|(scope, _)| scope))
            .finish()
    }
}

impl Layers {
    /// Adds `middleware` innermost.
    pub(crate) fn push(&mut self, scope: Scope, middleware: Arc<dyn Middleware>) {
        self.entries.push((scope, middleware));
        self.everywhere = self
            .entries
            .iter()
            .all(|(scope, _)| *scope == Scope::All)
            .then(|| {
                self.entries
                    .iter()
                    .map(|(_, layer)| layer.clone())
                    .collect()
            });
    }

    /// The chain a call of `id` passes through; `None` when no middleware covers it.
    pub(crate) fn chain_for(&self, id: &str, spec: &OperationSpec) -> Option<Chain> {
        if let Some(chain) = &self.everywhere {
            return Some(chain.clone());
        }
        let chain: Vec<Arc<dyn Middleware>> = self
            .entries
            .iter()
            .filter(|(scope, _)| scope.covers(id, spec))
            .map(|(_, layer)| layer.clone())
            .collect();
        (!chain.is_empty()).then(|| chain.into())
    }
}

/// The rest of the chain after a middleware: the middleware registered after it, then the
/// operation itself.
pub struct Next {
    chain: Chain,
    index: usize,
}

impl fmt::Debug for Next {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Next")
            .field("remaining", &(self.chain.len() - self.index))
            .finish()
    }
}

impl Next {
    /// The start of `chain`.
    pub(crate) fn start(chain: Chain) -> Self {
        Self { chain, index: 0 }
    }

    /// Runs `call` through the rest of the chain and the operation.
    pub fn run(self, call: Call) -> BoxFuture<'static, Result<Outcome, CallError>> {
        match self.chain.get(self.index).cloned() {
            Some(layer) => layer.handle(
                call,
                Next {
                    chain: self.chain,
                    index: self.index + 1,
                },
            ),
            None => call.finish(),
        }
    }
}
