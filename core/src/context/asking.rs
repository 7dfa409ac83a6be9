//! What a context asks the caller's client while its operation runs: its user, through the
//! edge's [`Elicitor`] (see [`crate::elicit`]), or any other request the client serves.

use super::OperationContext;
use crate::edge::Edge;
use crate::elicit::{ClientRequest, ElicitRequest, ElicitResponse, Elicited, Elicitor};
use crate::error::CallError;
use serde_json::Value;
use std::fmt;
use std::sync::Arc;

/// The context's [`Elicitor`], with a `Debug` that names no more than its presence.
#[derive(Clone)]
pub(super) struct ElicitorSlot(Arc<dyn Elicitor>);

impl fmt::Debug for ElicitorSlot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Elicitor")
    }
}

impl OperationContext {
    /// Sets how the edge asks the caller's user a question ([`OperationContext::elicit`]).
    /// Nested calls keep it.
    #[must_use]
    pub fn with_elicitor(mut self, elicitor: Arc<dyn Elicitor>) -> Self {
        self.extras_mut().elicitor = Some(ElicitorSlot(elicitor));
        self
    }

    /// `true` when the call's edge can ask its user a question.
    pub fn can_elicit(&self) -> bool {
        self.elicitor().is_some()
    }

    /// The edge's [`Elicitor`], when it set one.
    fn elicitor(&self) -> Option<&Arc<dyn Elicitor>> {
        Some(&self.extras.as_deref()?.elicitor.as_ref()?.0)
    }

    /// Asks the caller's user a question while the operation runs, and waits for the
    /// answer, typed as `T` (the form's schema is derived from `T`; see [`crate::elicit`]).
    ///
    /// Over MCP the client asks its user; through an edge with no way to ask, the call gets
    /// [`CallError::unavailable`] naming the edge.
    ///
    /// ```
    /// # let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    /// # runtime.block_on(async {
    /// #[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
    /// struct Confirm {
    ///     /// Delete them?
    ///     confirm: bool,
    /// }
    /// let ctx = opkit::OperationContext::new();
    /// // No edge that can ask: a typed error, not a hang.
    /// let error = ctx.elicit::<Confirm>("Delete 40 notes?").await.unwrap_err();
    /// assert_eq!(error.kind, Some(opkit::ErrorKind::Unavailable));
    /// assert!(opkit::elicit::cannot_ask(&error));
    /// # });
    /// ```
    pub async fn elicit<T>(&self, message: impl Into<String>) -> Result<Elicited<T>, CallError>
    where
        T: serde::de::DeserializeOwned + schemars::JsonSchema,
    {
        let request = ElicitRequest::new(message, crate::elicit::answer_schema::<T>());
        crate::elicit::typed(self.elicit_raw(request).await?)
    }

    /// [`elicit`](Self::elicit) with a schema of your own; the answer as JSON.
    pub async fn elicit_raw(&self, request: ElicitRequest) -> Result<ElicitResponse, CallError> {
        match self.elicitor().cloned() {
            Some(elicitor) => elicitor.elicit(request).await,
            None => Err(crate::elicit::unavailable(self.edge().map(Edge::name))),
        }
    }

    /// Sends any other request to the caller's client (see [`Elicitor::request`]), e.g.
    /// `sampling/createMessage` to ask its model; the client's result as JSON. Through an
    /// edge without a client, or a client without the capability, the error names the
    /// capability ([`crate::elicit::missing_capability`]).
    pub async fn client_request(&self, request: ClientRequest) -> Result<Value, CallError> {
        match self.elicitor().cloned() {
            Some(elicitor) => elicitor.request(request).await,
            None => Err(crate::elicit::missing_capability(
                &request.method,
                crate::elicit::capability_of(&request.method),
            )),
        }
    }
}
