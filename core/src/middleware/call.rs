//! [`Call`]: one call as a middleware sees it — the operation, the caller's context and the
//! input — and the [`Endpoint`] that runs it once the chain is through.

use super::Outcome;
use crate::context::OperationContext;
use crate::error::CallError;
use crate::spec::OperationSpec;
use futures::future::BoxFuture;
use serde_json::Value;
use std::any::Any;
use std::fmt;
use std::sync::Arc;
use sync_wrapper::SyncWrapper;

/// One call on its way to the operation's handler, as a [`Middleware`](super::Middleware)
/// sees it.
pub struct Call {
    id: Arc<str>,
    spec: Arc<OperationSpec>,
    ctx: OperationContext,
    /// Behind `SyncWrapper` (only reached through `&mut self` or by value), so `Call` is
    /// `Sync` whatever the typed input is.
    input: SyncWrapper<CallInput>,
    typed: bool,
    endpoint: SyncWrapper<Box<dyn Endpoint>>,
}

impl fmt::Debug for Call {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Call")
            .field("id", &self.id)
            .field("kind", &self.spec.kind)
            .field("ctx", &self.ctx)
            .field("typed", &self.typed)
            .finish_non_exhaustive()
    }
}

/// The input of a call: JSON, or the typed value of a typed call, turned into JSON only when
/// a middleware reads it.
pub(crate) enum CallInput {
    /// A JSON call's input (or one a middleware set).
    Json(Value),
    /// A typed call's input, and its JSON form once a middleware asked for it.
    Typed {
        value: Box<dyn TypedInput>,
        json: Option<Value>,
    },
}

/// A typed call's input, type-erased.
pub(crate) trait TypedInput: Send {
    /// The input's JSON form.
    fn to_json(&self) -> Result<Value, CallError>;
    /// The typed value, to downcast.
    fn into_any(self: Box<Self>) -> Box<dyn Any + Send>;
}

/// What runs at the end of the chain: the registry's handler for a JSON call, the fn itself
/// for a typed call.
pub(crate) trait Endpoint: Send {
    fn run(
        self: Box<Self>,
        input: CallInput,
        ctx: OperationContext,
    ) -> BoxFuture<'static, Result<Outcome, CallError>>;
}

impl Call {
    pub(crate) fn new(
        id: Arc<str>,
        spec: Arc<OperationSpec>,
        ctx: OperationContext,
        input: CallInput,
        endpoint: Box<dyn Endpoint>,
    ) -> Self {
        Self {
            id,
            spec,
            ctx,
            typed: matches!(input, CallInput::Typed { .. }),
            input: SyncWrapper::new(input),
            endpoint: SyncWrapper::new(endpoint),
        }
    }

    /// Runs the call's endpoint (the end of the chain).
    pub(crate) fn finish(self) -> BoxFuture<'static, Result<Outcome, CallError>> {
        self.endpoint
            .into_inner()
            .run(self.input.into_inner(), self.ctx)
    }

    /// The operation's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The operation's spec: kind, access rule, layers, extensions.
    pub fn spec(&self) -> &OperationSpec {
        &self.spec
    }

    /// The context the handler will get: the caller's identity, request ids, deadline,
    /// cancellation, trace and [`edge`](crate::edge).
    pub fn ctx(&self) -> &OperationContext {
        &self.ctx
    }

    /// The context, to change before the handler gets it: a state value
    /// ([`OperationContext::with_state`]), a shorter deadline, a session.
    ///
    /// ```
    /// # use opkit::middleware::{self, Call, Next};
    /// struct Tenant(String);
    /// let tag_tenant = middleware::from_fn(|mut call: Call, next: Next| {
    ///     let tenant = call.ctx().identity().map_or("public".to_owned(), |who| who.id.clone());
    ///     let ctx = call.ctx().clone().with_state(Tenant(tenant));
    ///     *call.ctx_mut() = ctx;
    ///     next.run(call)
    /// });
    /// # let _ = tag_tenant;
    /// ```
    pub fn ctx_mut(&mut self) -> &mut OperationContext {
        &mut self.ctx
    }

    /// The input as JSON. For a typed call it is serialized here, on the first read (a
    /// typed call whose middleware reads no input serializes nothing); an input type that
    /// cannot be serialized is `EXECUTION_ERROR`.
    pub fn input(&mut self) -> Result<&Value, CallError> {
        match self.input.get_mut() {
            CallInput::Json(value) => Ok(value),
            CallInput::Typed { value, json } => {
                if json.is_none() {
                    *json = Some(value.to_json()?);
                }
                Ok(json.as_ref().unwrap_or_else(|| unreachable!("set above")))
            }
        }
    }

    /// Replaces the input. A typed call then decodes its input from this JSON (an input type
    /// that cannot be deserialized is `EXECUTION_ERROR`).
    pub fn set_input(&mut self, input: Value) {
        self.input = SyncWrapper::new(CallInput::Json(input));
        self.typed = false;
    }

    /// `true` for a typed call (`add::call(&ctx, ..)`), whose input and result are Rust
    /// values until a middleware reads them as JSON.
    pub fn is_typed(&self) -> bool {
        self.typed
    }
}
