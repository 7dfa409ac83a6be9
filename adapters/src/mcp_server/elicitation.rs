//! [`ctx.elicit`](opkit::OperationContext::elicit) over MCP: the [`Elicitor`] a call's
//! context gets.
//!
//! - A client before 2026-07-28 is asked in the call ([`PeerElicitor`]: `elicitation/create`,
//!   a request from the server to the client on the call's stream).
//! - A 2026-07-28 client cannot be sent requests; it is asked over several round trips
//!   ([`Rounds`]): the first question the operation reaches without an answer ends the call
//!   with an input-required result naming the question, and a `requestState` sealing the
//!   answers given so far (with the server's key, bound to the tool, prompt or resource it
//!   was given for). The client calls again with the answer in `inputResponses` and the
//!   state; the operation runs again from the start and every question it asked before gets
//!   its earlier answer. A state that does not open (forged, another server's, expired) is
//!   refused with invalid params.
//!
//! A client that did not declare the `elicitation` capability gets [`CallError::unavailable`]
//! in the operation, which decides what to do without an answer.

use futures::future::BoxFuture;
use opkit::CallError;
use opkit::elicit::{ElicitAction, ElicitRequest, ElicitResponse, Elicitor};
use parking_lot::Mutex;
use rmcp::ErrorData as McpError;
use rmcp::model::{
    ElicitRequestParams, ElicitationAction, ElicitationSchema, InputRequiredResult, InputResponses,
    RequestStateCodec, SealOptions,
};
use rmcp::service::{Peer, RoleServer};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// How long a sealed `requestState` stays valid: a person answers within it.
const ROUND_TTL: Duration = Duration::from_secs(30 * 60);

/// A codec with a random key (two random v4 UUIDs: 244 random bits), for a server given none.
pub(crate) fn random_codec() -> RequestStateCodec {
    let key = format!("{}{}", opkit::new_request_id(), opkit::new_request_id());
    RequestStateCodec::new_unchecked(key.into_bytes())
}

/// The error a question gets when the client declared no `elicitation` capability.
fn undeclared() -> CallError {
    CallError::unavailable(
        "this operation asks the user a question, and the MCP client did not declare the `elicitation` capability",
    )
    .with_details(json!({"elicitation": false, "edge": "mcp"}))
}

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
                return Err(undeclared());
            }
            let schema = form(&request.schema)?;
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

/// The elicitation form of an answer's schema, or why it cannot be one.
fn form(schema: &Value) -> Result<ElicitationSchema, CallError> {
    serde_json::from_value(schema.clone()).map_err(|error| {
        CallError::execution(format!(
            "the question's answer type cannot be an MCP elicitation form (a flat object of strings, numbers, booleans and enums): {error}"
        ))
    })
}

/// What a sealed `requestState` holds: the answers given so far, in the order asked.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Sealed {
    answers: Vec<(String, Value)>,
}

/// The questions and answers of one round of a multi-round call (see the module docs).
///
/// Invariant: `used` holds, in order, the answers the operation received in this run (the
/// earlier rounds' and this round's); `pending` is the first question it reached without
/// one. Both are written only by `elicit`, which runs inside the call; the handler reads
/// them after the call has ended.
pub(crate) struct Rounds {
    /// The answers of earlier rounds, from the opened state.
    earlier: Vec<(String, Value)>,
    /// This round's `inputResponses`.
    fresh: InputResponses,
    /// Whether the client declared the `elicitation` capability for this request.
    declared: bool,
    next: AtomicUsize,
    used: Mutex<Vec<(String, Value)>>,
    pending: Mutex<Option<(String, ElicitRequest)>>,
}

impl Rounds {
    /// This round of the call `subject` (a tool, prompt or resource name): the answers
    /// `request_state` seals (checked against the key and `subject`) and the new ones.
    pub(crate) fn open(
        codec: &RequestStateCodec,
        subject: &str,
        request_state: Option<&str>,
        fresh: Option<InputResponses>,
        declared: bool,
    ) -> Result<Self, McpError> {
        let earlier = match request_state {
            None => Vec::new(),
            Some(sealed) => {
                codec
                    .open_json_with::<Sealed>(sealed, subject.as_bytes())
                    .map_err(|error| {
                        McpError::invalid_params(
                            format!("requestState integrity check failed: {error}"),
                            None,
                        )
                    })?
                    .answers
            }
        };
        let fresh = fresh.unwrap_or_default();
        for (key, answer) in &fresh {
            let action = answer.get("action").and_then(Value::as_str);
            let content_ok = answer.get("content").is_none_or(Value::is_object);
            if !matches!(action, Some("accept" | "decline" | "cancel")) || !content_ok {
                return Err(McpError::invalid_params(
                    format!(
                        "inputResponses[{key:?}] is not an elicitation result (an object with `action` accept, decline or cancel, and an object `content`)"
                    ),
                    Some(json!({ "key": key })),
                ));
            }
        }
        Ok(Self {
            earlier,
            fresh,
            declared,
            next: AtomicUsize::new(0),
            used: Mutex::new(Vec::new()),
            pending: Mutex::new(None),
        })
    }

    /// The input-required result of a run that reached a question without an answer.
    pub(crate) fn input_required(
        &self,
        codec: &RequestStateCodec,
        subject: &str,
    ) -> Option<InputRequiredResult> {
        let (key, question) = self.pending.lock().take()?;
        let request = json!({
            "method": "elicitation/create",
            "params": {
                "mode": "form",
                "message": question.message,
                "requestedSchema": question.schema,
            }
        });
        let request = serde_json::from_value(request).ok()?;
        let sealed = Sealed {
            answers: std::mem::take(&mut *self.used.lock()),
        };
        let options = SealOptions::new()
            .associated_data(subject.as_bytes())
            .ttl(ROUND_TTL);
        let state = codec.seal_json_with(&sealed, &options).ok()?;
        let mut requests = rmcp::model::InputRequests::new();
        requests.insert(key, request);
        Some(InputRequiredResult::new(Some(requests), Some(state)))
    }

    /// The answer `value` (an `ElicitResult`) as the operation sees it.
    fn response(value: &Value) -> ElicitResponse {
        let action = match value.get("action").and_then(Value::as_str) {
            Some("accept") => ElicitAction::Accept,
            Some("decline") => ElicitAction::Decline,
            _ => ElicitAction::Cancel,
        };
        ElicitResponse::new(action, value.get("content").cloned())
    }
}

/// The [`Elicitor`] of one round: asks [`Rounds`].
pub(crate) struct RoundElicitor(pub(crate) std::sync::Arc<Rounds>);

impl Elicitor for RoundElicitor {
    fn elicit(
        &self,
        request: ElicitRequest,
    ) -> BoxFuture<'static, Result<ElicitResponse, CallError>> {
        let rounds = self.0.clone();
        Box::pin(async move {
            if !rounds.declared {
                return Err(undeclared());
            }
            form(&request.schema)?;
            let index = rounds.next.fetch_add(1, Ordering::SeqCst);
            let key = request
                .key
                .clone()
                .unwrap_or_else(|| format!("elicitation-{index}"));
            let answer = match rounds.earlier.get(index) {
                Some((asked, answer)) if *asked == key => Some(answer.clone()),
                _ => rounds.fresh.get(&key).cloned(),
            };
            if let Some(answer) = answer {
                rounds.used.lock().push((key, answer.clone()));
                return Ok(Rounds::response(&answer));
            }
            let mut pending = rounds.pending.lock();
            if pending.is_none() {
                *pending = Some((key, request));
            }
            Err(CallError::aborted(
                "waiting for the user's answer: the client is asked, and the call runs again with it",
            )
            .with_details(json!({"elicitation": "pending"})))
        })
    }
}
