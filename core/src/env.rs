//! `OperationEnv`: calling other operations by id, locally or through the call protocol
//! (through whichever [`EnvBackend`] the context carries).

use crate::context::{EnvBackend, EnvelopeStream, OperationContext};
use crate::envelope::ResponseEnvelope;
use crate::error::CallError;
use serde_json::Value;
use std::sync::Arc;

/// Namespace-keyed access to operations for code that calls other operations.
///
/// Inside a handler, `ctx.env()` gives an env whose calls carry the handler's request id as
/// `parent_request_id`, the caller's identity and the remaining deadline. Outside one,
/// [`OperationEnv::local`] and [`OperationEnv::new`] start from a fresh context.
///
/// ```
/// # tokio_test_block(async {
/// use opkit::{Handler, OperationEnv, OperationKind, OperationRegistry, OperationSpec};
/// use serde_json::json;
/// let registry = OperationRegistry::new();
/// registry.register(
///     OperationSpec::new("math", "double", OperationKind::Query),
///     Handler::unary(|input, _ctx| async move { Ok(json!(input["n"].as_i64().unwrap_or(0) * 2)) }),
/// ).unwrap();
/// let env = OperationEnv::local(registry);
/// let result = env.call("math.double", json!({"n": 21})).await.unwrap();
/// assert_eq!(result.data, json!(42));
/// # });
/// # fn tokio_test_block(f: impl std::future::Future<Output = ()>) {
/// #     tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(f)
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct OperationEnv {
    parent: Option<OperationContext>,
    root: OperationContext,
}

impl OperationEnv {
    /// An env over any backend, for calls that have no parent.
    pub fn new(backend: Arc<dyn EnvBackend>) -> Self {
        Self {
            parent: None,
            root: OperationContext::new().with_env(backend),
        }
    }

    /// Sets the context root calls start from (identity, deadline, ...). Its env backend is kept.
    #[must_use]
    pub fn with_context(mut self, ctx: OperationContext) -> Self {
        let backend = self.root.env_backend().cloned();
        self.root = match backend {
            Some(backend) if !ctx.has_env() => ctx.with_env(backend),
            _ => ctx,
        };
        self
    }

    pub(crate) fn from_parent(parent: OperationContext) -> Self {
        Self {
            root: parent.clone(),
            parent: Some(parent),
        }
    }

    /// The context a call made through this env runs with.
    fn call_context(&self) -> OperationContext {
        match &self.parent {
            Some(parent) => parent.child(),
            None => self
                .root
                .clone()
                .with_request_id(crate::context::new_request_id()),
        }
    }

    fn backend(&self, ctx: &OperationContext) -> Result<Arc<dyn EnvBackend>, CallError> {
        ctx.env_backend().cloned().ok_or_else(|| {
            CallError::transport(
                "this context has no env: run the call through a registry, a call handler, or an OperationEnv",
            )
        })
    }

    /// Calls a query or mutation by id.
    pub async fn call(&self, id: &str, input: Value) -> Result<ResponseEnvelope, CallError> {
        let ctx = self.call_context();
        let backend = self.backend(&ctx)?;
        backend.call(id, input, ctx).await
    }

    /// Subscribes to a subscription by id.
    pub async fn subscribe(&self, id: &str, input: Value) -> Result<EnvelopeStream, CallError> {
        let ctx = self.call_context();
        let backend = self.backend(&ctx)?;
        backend.subscribe(id, input, ctx).await
    }
}

impl OperationContext {
    /// The env for nested calls made on behalf of this call: they carry this request id as
    /// their parent, the identity, the deadline and a child of the cancellation signal.
    pub fn env(&self) -> OperationEnv {
        OperationEnv::from_parent(self.clone())
    }
}
