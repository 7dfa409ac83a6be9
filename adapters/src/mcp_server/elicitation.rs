//! [`ctx.elicit`](opkit::OperationContext::elicit) over MCP: the [`Elicitor`] a tool call's
//! context gets. A 2025-11-25 client is asked in the call (`elicitation/create`, a request
//! from the server to the client on the call's stream); a client that did not declare the
//! `elicitation` capability gets [`CallError::unavailable`] in the operation, which decides
//! what to do without an answer.

use futures::future::BoxFuture;
use opkit::CallError;
use opkit::elicit::{ElicitAction, ElicitRequest, ElicitResponse, Elicitor};
use rmcp::model::{ElicitRequestParams, ElicitationAction, ElicitationSchema};
use rmcp::service::{Peer, RoleServer};

/// Asks the client of one MCP session.
pub(crate) struct PeerElicitor {
    pub(crate) peer: Peer<RoleServer>,
}

impl Elicitor for PeerElicitor {
    fn elicit(
        &self,
        request: ElicitRequest,
    ) -> BoxFuture<'static, Result<ElicitResponse, CallError>> {
        let peer = self.peer.clone();
        Box::pin(async move {
            let declared = peer
                .peer_info()
                .is_some_and(|info| info.capabilities.elicitation.is_some());
            if !declared {
                return Err(CallError::unavailable(
                    "this operation asks the user a question, and the MCP client did not declare the `elicitation` capability",
                )
                .with_details(serde_json::json!({"elicitation": false, "edge": "mcp"})));
            }
            let schema: ElicitationSchema = serde_json::from_value(request.schema.clone())
                .map_err(|error| {
                    CallError::execution(format!(
                        "the question's answer type cannot be an MCP elicitation form (a flat object of strings, numbers, booleans and enums): {error}"
                    ))
                })?;
            let params = ElicitRequestParams::FormElicitationParams {
                meta: None,
                message: request.message,
                requested_schema: schema,
            };
            let result = peer.create_elicitation(params).await.map_err(|error| {
                CallError::transport(format!(
                    "the MCP client did not answer the question: {error}"
                ))
            })?;
            let action = match result.action {
                ElicitationAction::Accept => ElicitAction::Accept,
                ElicitationAction::Decline => ElicitAction::Decline,
                _ => ElicitAction::Cancel,
            };
            Ok(ElicitResponse::new(action, result.content))
        })
    }
}
