//! What the Streamable HTTP endpoint checks before rmcp sees a request: the caller's
//! credentials (`401` with the authenticator's challenge), and, for an OAuth resource server,
//! that a token is there at all and holds the scopes of the tool it calls (`403` with
//! `error="insufficient_scope"`).

use super::{McpServerState, RequestIdentity};
use crate::http_server::{Authenticator, authenticate};
use axum::body::Body;
use axum::extract::Request;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::{Method, StatusCode, header};
use opkit::{CallError, ErrorCode, Identity};
use serde_json::Value;

/// The largest body read to find the tool a call names: rmcp's own body limit (4 MiB).
pub(super) const MAX_PEEKED_BODY: usize = 4 * 1024 * 1024;

/// Lets `request` through to rmcp with its caller's identity, or answers it.
pub(super) async fn admit(inner: &McpServerState, request: Request, next: Next) -> Response {
    let (mut parts, body) = request.into_parts();
    let authenticator = inner.authenticator.as_deref();
    let presented = parts.headers.contains_key(header::AUTHORIZATION);
    let identity = match authenticate(authenticator, &parts).await {
        Ok(identity) => identity,
        Err(error) => return refusal(authenticator, &error, presented),
    };
    let mut body = body;
    if inner.oauth {
        // An MCP client learns that it must sign in (and where) only from a `401`.
        let Some(identity) = &identity else {
            let error = CallError::unauthenticated("this MCP server needs a bearer access token");
            return refusal(authenticator, &error, false);
        };
        if parts.method == Method::POST {
            let bytes = match axum::body::to_bytes(body, MAX_PEEKED_BODY).await {
                Ok(bytes) => bytes,
                Err(_) => {
                    let error = CallError::new(
                        ErrorCode::ValidationError,
                        format!("the request body is larger than {MAX_PEEKED_BODY} bytes"),
                    );
                    return (StatusCode::PAYLOAD_TOO_LARGE, axum::Json(error)).into_response();
                }
            };
            if let Some(needed) = missing_scopes(inner, &bytes, identity)
                && let Some(authenticator) = authenticator
            {
                return insufficient_scope(authenticator, identity, &needed);
            }
            body = Body::from(bytes);
        }
    }
    parts.extensions.insert(RequestIdentity(identity));
    next.run(Request::from_parts(parts, body)).await
}

/// The scopes of the tool a `tools/call` in `body` names, when `identity` lacks one of them.
fn missing_scopes(inner: &McpServerState, body: &[u8], identity: &Identity) -> Option<Vec<String>> {
    let message: Value = serde_json::from_slice(body).ok()?;
    if message.get("method").and_then(Value::as_str) != Some("tools/call") {
        return None;
    }
    let tool = message.pointer("/params/name").and_then(Value::as_str)?;
    let names = inner.names.get(&inner.registry, inner.naming).ok()?;
    let needed = names.served(tool)?.spec.access.scopes.clone();
    (!needed.iter().all(|scope| identity.scopes.contains(scope))).then_some(needed)
}

/// `403` with the authenticator's `insufficient_scope` challenge.
fn insufficient_scope(
    authenticator: &dyn Authenticator,
    identity: &Identity,
    needed: &[String],
) -> Response {
    let missing: Vec<&str> = needed
        .iter()
        .filter(|scope| !identity.scopes.contains(scope))
        .map(String::as_str)
        .collect();
    let error = CallError::access_denied(format!(
        "identity `{}` lacks scope(s): {}",
        identity.id,
        missing.join(", ")
    ));
    let mut response = (StatusCode::FORBIDDEN, axum::Json(error)).into_response();
    if let Some(challenge) = authenticator.insufficient_scope(needed) {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, challenge);
    }
    response
}

/// The answer to refused or missing credentials: `401` with the authenticator's challenge
/// (`presented`: credentials were sent and refused), or the error's own status when it is not
/// a refusal (the authorization server unreachable: `503`).
fn refusal(
    authenticator: Option<&dyn Authenticator>,
    error: &CallError,
    presented: bool,
) -> Response {
    let status = match crate::http_server::status_of(error) {
        StatusCode::FORBIDDEN => StatusCode::UNAUTHORIZED,
        status => status,
    };
    let mut response = (status, axum::Json(error)).into_response();
    if status == StatusCode::UNAUTHORIZED
        && let Some(challenge) =
            authenticator.and_then(|authenticator| authenticator.challenge(presented))
    {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, challenge);
    }
    response
}
