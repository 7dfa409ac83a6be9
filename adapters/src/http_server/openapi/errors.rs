//! The error responses of the document: one `components/responses` entry per status the
//! server answers, each with the `CallError` body, and the status of each error kind.

use super::DocumentInfo;
use opkit::ErrorKind;
use serde_json::{Map, Value, json};

fn error_response(description: &str) -> Value {
    json!({
        "description": description,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/CallError"}}}
    })
}

/// The `components/responses` entry and the status of each application error kind.
pub(super) fn kind_response(kind: ErrorKind) -> (&'static str, &'static str, &'static str) {
    match kind {
        ErrorKind::NotFound => (
            "404",
            "ResourceNotFound",
            "`NOT_FOUND` (kind; code `EXECUTION_ERROR`): what the call is about does not exist; or `OPERATION_NOT_FOUND`: no such operation.",
        ),
        ErrorKind::Conflict => (
            "409",
            "Conflict",
            "`CONFLICT` (kind; code `EXECUTION_ERROR`): the call conflicts with the current state.",
        ),
        ErrorKind::Unprocessable => (
            "422",
            "Unprocessable",
            "`UNPROCESSABLE` (kind; code `VALIDATION_ERROR`): the input breaks a rule of the domain.",
        ),
        ErrorKind::RateLimited => (
            "429",
            "RateLimited",
            "`RATE_LIMITED` (kind; code `EXECUTION_ERROR`): too many calls; retry later.",
        ),
        ErrorKind::Unauthenticated => (
            "401",
            "Unauthenticated",
            "`UNAUTHENTICATED` (kind; code `ACCESS_DENIED`): the caller must authenticate.",
        ),
        ErrorKind::Unavailable => (
            "503",
            "Unavailable",
            "`UNAVAILABLE` (kind; code `EXECUTION_ERROR`): a dependency is down; retry later. Or `ABORTED`: the call was cancelled.",
        ),
        // `ErrorKind` is non-exhaustive: a kind added later is documented as a server error
        // until it gets its own entry.
        _ => (
            "500",
            "ExecutionError",
            "`EXECUTION_ERROR`: the operation failed (returned an error or panicked).",
        ),
    }
}

/// `components/responses`: one entry per error status.
pub(super) fn error_responses(info: &DocumentInfo) -> Map<String, Value> {
    let mut responses = Map::new();
    let entries = [
        (
            "BadRequest",
            "`VALIDATION_ERROR`: the input does not match the input schema (`details` lists every violation as `{path, message}`), or the request is malformed.",
        ),
        (
            "Forbidden",
            "`ACCESS_DENIED`: the caller's identity does not satisfy the operation's access rule.",
        ),
        (
            "NotFound",
            "`OPERATION_NOT_FOUND`: no such operation (it may have been removed).",
        ),
        (
            "PayloadTooLarge",
            "`VALIDATION_ERROR`: the request body is larger than the server's limit.",
        ),
        (
            "UnsupportedMediaType",
            "`VALIDATION_ERROR`: the request body is not `application/json`.",
        ),
        (
            "ExecutionError",
            "`EXECUTION_ERROR`: the operation failed (returned an error or panicked).",
        ),
        (
            "TransportError",
            "`TRANSPORT_ERROR`: a service the operation depends on could not be reached.",
        ),
        ("Aborted", "`ABORTED`: the call was cancelled."),
        (
            "Timeout",
            "`TIMEOUT`: the operation did not finish before its deadline.",
        ),
        (
            "RequestTimeout",
            "`TIMEOUT`: the request body did not arrive before the request timeout.",
        ),
        (
            "InvalidInput",
            "`VALIDATION_ERROR`: the input parsed but does not match the input schema (`details` lists every violation as `{path, message}`).",
        ),
    ];
    for (name, description) in entries {
        responses.insert(name.to_owned(), error_response(description));
    }
    for kind in ErrorKind::ALL {
        let (_, name, description) = kind_response(kind);
        responses
            .entry(name.to_owned())
            .or_insert_with(|| error_response(description));
    }
    if info.authenticated {
        let unauthorized = error_response(
            "`ACCESS_DENIED` (kind `UNAUTHENTICATED`): the request's credentials were not accepted, or the operation needs an identity and the call is anonymous.",
        );
        responses.insert("Unauthorized".to_owned(), unauthorized);
    }
    responses
}

/// A reference to the `components/responses` entry `name`.
pub(super) fn response_ref(name: &str) -> Value {
    json!({"$ref": format!("#/components/responses/{name}")})
}
