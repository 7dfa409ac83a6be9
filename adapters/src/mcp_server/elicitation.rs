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
use opkit::elicit::{
    ClientRequest, ElicitAction, ElicitRequest, ElicitResponse, Elicitor, capability_of,
    missing_capability,
};
use parking_lot::Mutex;
use rmcp::ErrorData as McpError;
use rmcp::model::{
    ElicitRequestParams, ElicitationAction, ElicitationSchema, InputRequiredResult, InputResponses,
    RequestStateCodec, SealOptions,
};
use rmcp::service::{Peer, RoleServer};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::sync::Arc;
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
    .with_details(json!({"elicitation": false, "edge": "mcp", "requiredCapability": "elicitation"}))
}

/// Asks the client of one MCP session.
pub(crate) struct PeerElicitor {
    /// Shared with the call's reporter: one clone of the peer per call.
    pub(crate) peer: Arc<Peer<RoleServer>>,
}

impl Elicitor for PeerElicitor {
    fn request(&self, request: ClientRequest) -> BoxFuture<'static, Result<Value, CallError>> {
        let capability = capability_of(&request.method).to_owned();
        if !self.declared(&capability) {
            let error = missing_capability(&request.method, &capability);
            return Box::pin(std::future::ready(Err(error)));
        }
        Box::pin(send_in_call(self.peer.clone(), request))
    }

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

impl PeerElicitor {
    /// Whether the session's client declared `capability`.
    fn declared(&self, capability: &str) -> bool {
        let Some(info) = self.peer.peer_info() else {
            return false;
        };
        let capabilities = &info.capabilities;
        match capability {
            "sampling" => capabilities.sampling.is_some(),
            "roots" => capabilities.roots.is_some(),
            "elicitation" => capabilities.elicitation.is_some(),
            _ => false,
        }
    }
}

/// `request` for the peer's method: sampling and roots (deprecated from 2026-07-28, served to
/// older clients in the call).
#[allow(deprecated)]
async fn send_in_call(
    peer: Arc<Peer<RoleServer>>,
    request: ClientRequest,
) -> Result<Value, CallError> {
    let failed = |error: String| {
        CallError::transport(format!(
            "the MCP client did not answer `{}`: {error}",
            request.method
        ))
    };
    match request.method.as_str() {
        "sampling/createMessage" => {
            let params: rmcp::model::CreateMessageRequestParams =
                serde_json::from_value(request.params.clone()).map_err(|error| {
                    CallError::execution(format!("`sampling/createMessage` params: {error}"))
                })?;
            let result = peer
                .create_message(params)
                .await
                .map_err(|error| failed(error.to_string()))?;
            serde_json::to_value(result).map_err(|error| failed(error.to_string()))
        }
        "roots/list" => {
            let result = peer
                .list_roots()
                .await
                .map_err(|error| failed(error.to_string()))?;
            serde_json::to_value(result).map_err(|error| failed(error.to_string()))
        }
        method => Err(CallError::execution(format!(
            "an MCP server does not send `{method}` to its client"
        ))),
    }
}

/// An `ElicitResult` as the operation sees it (anything but accept or decline is a cancel).
pub(crate) fn response_of(value: &Value) -> ElicitResponse {
    let action = match value.get("action").and_then(Value::as_str) {
        Some("accept") => ElicitAction::Accept,
        Some("decline") => ElicitAction::Decline,
        _ => ElicitAction::Cancel,
    };
    ElicitResponse::new(action, value.get("content").cloned())
}

/// The params of the `elicitation/create` that asks `request` (a form).
pub(crate) fn form_params(request: &ElicitRequest) -> Value {
    json!({
        "mode": "form",
        "message": request.message,
        "requestedSchema": request.schema,
    })
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
    /// The capabilities the client declared for this request (`elicitation`, `sampling`,
    /// `roots`).
    declared: Vec<&'static str>,
    next: AtomicUsize,
    used: Mutex<Vec<(String, Value)>>,
    /// The requests reached without an answer, in the order reached: `(key, {method, params})`.
    pending: Mutex<Vec<(String, Value)>>,
}

impl Rounds {
    /// This round of the call `subject` (a tool, prompt or resource name): the answers
    /// `request_state` seals (checked against the key and `subject`) and the new ones.
    pub(crate) fn open(
        codec: &RequestStateCodec,
        subject: &str,
        request_state: Option<&str>,
        fresh: Option<InputResponses>,
        declared: Vec<&'static str>,
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
            if !answer.is_object() {
                return Err(McpError::invalid_params(
                    format!("inputResponses[{key:?}] is not a result object"),
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
            pending: Mutex::new(Vec::new()),
        })
    }

    /// Whether this round brings answers: sealed ones of earlier rounds, or `inputResponses`.
    pub(crate) fn answered(&self) -> bool {
        !self.earlier.is_empty() || !self.fresh.is_empty()
    }

    /// The position of the next request the operation reaches, and its key: `key`, or the
    /// method's capability and the position (`elicitation-0`).
    pub(crate) fn place(&self, method: &str, key: Option<String>) -> (usize, String) {
        let index = self.next.fetch_add(1, Ordering::SeqCst);
        let key = key.unwrap_or_else(|| format!("{}-{index}", capability_of(method)));
        (index, key)
    }

    /// The answer given to `method`'s request `key` reached at position `index`: an earlier
    /// round's, or this round's (checked against what the method returns).
    pub(crate) fn given(
        &self,
        index: usize,
        key: &str,
        method: &str,
    ) -> Result<Option<Value>, CallError> {
        let answer = match self.earlier.get(index) {
            Some((asked, answer)) if asked == key => Some(answer.clone()),
            _ => self.fresh.get(key).cloned(),
        };
        if let Some(answer) = &answer {
            check_result(method, key, answer)?;
        }
        Ok(answer)
    }

    /// The answer to request `key` (`{method, params}`) reached at position `index` (see
    /// [`Self::given`]), or `None` after recording it as pending.
    fn answer(&self, index: usize, key: &str, request: Value) -> Result<Option<Value>, CallError> {
        let method = request["method"].as_str().unwrap_or_default();
        match self.given(index, key, method)? {
            Some(answer) => {
                self.used.lock().push((key.to_owned(), answer.clone()));
                Ok(Some(answer))
            }
            None => {
                self.pending.lock().push((key.to_owned(), request));
                Ok(None)
            }
        }
    }

    /// The input-required result of a run that reached a question without an answer.
    pub(crate) fn input_required(
        &self,
        codec: &RequestStateCodec,
        subject: &str,
    ) -> Option<InputRequiredResult> {
        let pending = std::mem::take(&mut *self.pending.lock());
        if pending.is_empty() {
            return None;
        }
        let mut requests = rmcp::model::InputRequests::new();
        for (key, request) in pending {
            requests.insert(key, serde_json::from_value(request).ok()?);
        }
        let sealed = Sealed {
            answers: std::mem::take(&mut *self.used.lock()),
        };
        let options = SealOptions::new()
            .associated_data(subject.as_bytes())
            .ttl(ROUND_TTL);
        let state = codec.seal_json_with(&sealed, &options).ok()?;
        Some(InputRequiredResult::new(Some(requests), Some(state)))
    }
}

/// The [`Elicitor`] of one round: asks [`Rounds`].
pub(crate) struct RoundElicitor(pub(crate) std::sync::Arc<Rounds>);

/// The error a request without an answer yet gets: the call ends with an input-required
/// result, and runs again with the answer.
fn pending() -> CallError {
    CallError::aborted(
        "waiting for the client's answer: the client is asked, and the call runs again with it",
    )
    .with_details(json!({"elicitation": "pending"}))
}

/// Checks that `answer` is what `method` returns (an elicitation result has an `action`).
fn check_result(method: &str, key: &str, answer: &Value) -> Result<(), CallError> {
    let ok = match method {
        "elicitation/create" => {
            matches!(
                answer.get("action").and_then(Value::as_str),
                Some("accept" | "decline" | "cancel")
            ) && answer.get("content").is_none_or(Value::is_object)
        }
        "sampling/createMessage" => answer.get("content").is_some(),
        "roots/list" => answer.get("roots").is_some_and(Value::is_array),
        _ => true,
    };
    if ok {
        Ok(())
    } else {
        Err(CallError::validation(
            "inputResponses",
            vec![opkit::Violation {
                path: format!("/{key}"),
                message: format!("not a `{method}` result"),
            }],
        ))
    }
}

impl RoundElicitor {
    /// Asks `method` with `params` under `key` (or the request's position).
    fn ask(
        &self,
        method: &str,
        params: Value,
        key: Option<String>,
    ) -> Result<Option<Value>, CallError> {
        let rounds = &self.0;
        let capability = capability_of(method);
        if !rounds.declared.contains(&capability) {
            return Err(missing_capability(method, capability));
        }
        let (index, key) = rounds.place(method, key);
        rounds.answer(index, &key, json!({"method": method, "params": params}))
    }
}

impl Elicitor for RoundElicitor {
    fn elicit(
        &self,
        request: ElicitRequest,
    ) -> BoxFuture<'static, Result<ElicitResponse, CallError>> {
        let result = form(&request.schema).and_then(|_| {
            self.ask(
                "elicitation/create",
                form_params(&request),
                request.key.clone(),
            )
        });
        let outcome = match result {
            Ok(Some(answer)) => Ok(response_of(&answer)),
            Ok(None) => Err(pending()),
            Err(error) if capability_error(&error) => Err(undeclared()),
            Err(error) => Err(error),
        };
        Box::pin(std::future::ready(outcome))
    }

    fn request(&self, request: ClientRequest) -> BoxFuture<'static, Result<Value, CallError>> {
        let outcome = match self.ask(&request.method, request.params, request.key) {
            Ok(Some(answer)) => Ok(answer),
            Ok(None) => Err(pending()),
            Err(error) => Err(error),
        };
        Box::pin(std::future::ready(outcome))
    }
}

/// `true` for a [`missing_capability`] error.
fn capability_error(error: &CallError) -> bool {
    error
        .details
        .as_ref()
        .is_some_and(|details| details.get("requiredCapability").is_some())
}
