//! The Protected Resource Metadata document (RFC 9728) of an authenticator that publishes
//! one, served at `/.well-known/oauth-protected-resource` and at the form suffixed with the
//! resource's path.

use axum::Router;
use axum::routing::get;
use serde_json::Value;

/// The well-known path of Protected Resource Metadata (RFC 9728 §3).
pub(crate) const PROTECTED_RESOURCE_PATH: &str = "/.well-known/oauth-protected-resource";

/// Routes serving `document` at [`PROTECTED_RESOURCE_PATH`] followed by the path of the
/// document's `resource` (RFC 9728 §3.1) and, when `bare`, at [`PROTECTED_RESOURCE_PATH`]
/// itself too (where clients that predate the path-suffixed form look).
pub(crate) fn protected_resource_router(document: Value, bare: bool) -> Router {
    let suffixed = document
        .get("resource")
        .and_then(Value::as_str)
        .and_then(|resource| resource.parse::<http::Uri>().ok())
        .map(|uri| uri.path().trim_end_matches('/').to_owned())
        .filter(|path| !path.is_empty())
        .map(|path| format!("{PROTECTED_RESOURCE_PATH}{path}"));
    let serve = move || {
        let document = document.clone();
        async move {
            (
                [(http::header::CACHE_CONTROL, "max-age=300")],
                axum::Json(document),
            )
        }
    };
    let mut router = Router::new();
    if bare || suffixed.is_none() {
        router = router.route(PROTECTED_RESOURCE_PATH, get(serve.clone()));
    }
    if let Some(path) = suffixed {
        router = router.route(&path, get(serve));
    }
    router
}
