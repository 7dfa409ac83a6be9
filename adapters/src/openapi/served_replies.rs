//! Replies of an operation served by opkit's own HTTP server (imported as such by
//! `mapping::served`): a failure body is the `CallError` sent, an SSE event an item, the end
//! of the stream or its error.

use opkit::CallError;
use opkit::envelope::unwrap_value;
use serde_json::Value;

/// The `CallError` of a served failure body, when it is one.
pub(crate) fn error(body: &Value) -> Option<CallError> {
    if !body.get("code").is_some_and(Value::is_string) {
        return None;
    }
    serde_json::from_value(body.clone()).ok()
}

/// What one served SSE event is.
#[derive(Debug, PartialEq)]
pub(crate) enum Event {
    /// An item: the served item's data.
    Item(Value),
    /// `event: complete`: the stream is over.
    Complete,
    /// `event: error`: the stream failed.
    Error(CallError),
}

/// Reads one served SSE event (its type and parsed data).
pub(crate) fn event(event_type: &str, data: Value, label: &str) -> Event {
    match event_type {
        "complete" => Event::Complete,
        "error" => Event::Error(error(&data).unwrap_or_else(|| {
            CallError::execution(format!("{label} ended the stream with an error: {data}"))
        })),
        _ => Event::Item(unwrap_value(data)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use opkit::ErrorKind;
    use serde_json::json;

    #[test]
    fn bodies_and_events_unwrap() {
        let envelope = json!({"data": {"sum": 3}, "meta": {"source": "local", "operationId": "math.add", "timestamp": 1}});
        assert_eq!(unwrap_value(envelope), json!({"sum": 3}));
        assert_eq!(
            unwrap_value(json!({"sum": 3})),
            json!({"sum": 3}),
            "kept whole"
        );
        let wire = serde_json::to_value(CallError::not_found("no note 7")).unwrap();
        let error = error(&wire).unwrap();
        assert_eq!(error.message, "no note 7");
        assert_eq!(error.kind, Some(ErrorKind::NotFound));
        assert_eq!(super::error(&json!({"message": "x"})), None);
        assert_eq!(
            event("complete", json!({"requestId": "r"}), "l"),
            Event::Complete
        );
        assert_eq!(
            event(
                "",
                json!({"data": 1, "meta": {"source": "local", "operationId": "a.b", "timestamp": 1}}),
                "l"
            ),
            Event::Item(json!(1))
        );
        match event("error", json!({"oops": 1}), "POST /ops/a.b") {
            Event::Error(error) => assert!(error.message.contains("POST /ops/a.b"), "{error}"),
            other => panic!("{other:?}"),
        }
    }
}
