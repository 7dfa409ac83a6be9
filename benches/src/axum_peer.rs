//! The axum servers a user writes instead of opkit's `HttpServer`, for the serving benches and
//! the profile's in-process HTTP paths: `router` (`Json<In> -> Json<Out>`) and
//! `checked_router` (the equal-work peer of issue 36: the body as a `Value`, checked against
//! the operation's input schema with a compiled `jsonschema` validator, a 400 naming the
//! violations when it does not match, then deserialized). Routes: `/add`, `/medium` and
//! `/list`.

use crate::{AddIn, ListIn, MediumIn, Sum, add, check_input, compute, input_validator, records};
use std::sync::Arc;

/// The handlers a user writes with axum's `Json` extractor: no input check beyond the types.
pub fn router() -> axum::Router {
    use axum::Json;
    use axum::routing::post;
    axum::Router::new()
        .route(
            "/add",
            post(|Json(input): Json<AddIn>| async move {
                Json(Sum {
                    sum: input.a + input.b,
                })
            }),
        )
        .route(
            "/medium",
            post(|Json(input): Json<MediumIn>| async move { Json(compute(input)) }),
        )
        .route(
            "/list",
            post(|Json(input): Json<ListIn>| async move { Json(records(input.count)) }),
        )
}

/// The axum handlers a user writes to answer invalid inputs as opkit does (issue 36): the body
/// as a `Value`, checked against the operation's input schema with a compiled `jsonschema`
/// validator (400 naming the violations), then deserialized into the input type.
pub fn checked_router() -> axum::Router {
    use axum::routing::post;
    let add_schema = Arc::new(input_validator(&add::spec()));
    let medium_schema = Arc::new(input_validator(&crate::medium::spec()));
    let list_schema = Arc::new(input_validator(&crate::list::spec()));
    axum::Router::new()
        .route(
            "/add",
            post(move |body: axum::Json<serde_json::Value>| {
                let schema = add_schema.clone();
                async move {
                    let input: AddIn = checked_body(&schema, body)?;
                    Ok::<_, Rejection>(axum::Json(Sum {
                        sum: input.a + input.b,
                    }))
                }
            }),
        )
        .route(
            "/medium",
            post(move |body: axum::Json<serde_json::Value>| {
                let schema = medium_schema.clone();
                async move {
                    let input: MediumIn = checked_body(&schema, body)?;
                    Ok::<_, Rejection>(axum::Json(compute(input)))
                }
            }),
        )
        .route(
            "/list",
            post(move |body: axum::Json<serde_json::Value>| {
                let schema = list_schema.clone();
                async move {
                    let input: ListIn = checked_body(&schema, body)?;
                    Ok::<_, Rejection>(axum::Json(records(input.count)))
                }
            }),
        )
}

/// A 400 and its reason.
type Rejection = (axum::http::StatusCode, String);

/// The JSON body, checked by `schema`, as a `T`.
fn checked_body<T: serde::de::DeserializeOwned>(
    schema: &jsonschema::Validator,
    axum::Json(body): axum::Json<serde_json::Value>,
) -> Result<T, Rejection> {
    let bad_request = |reason: String| (axum::http::StatusCode::BAD_REQUEST, reason);
    check_input(schema, &body).map_err(bad_request)?;
    serde_json::from_value(body).map_err(|error| bad_request(error.to_string()))
}
