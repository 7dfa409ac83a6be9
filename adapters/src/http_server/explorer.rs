//! The operations explorer: one page, served with the API, where a person sees every
//! operation and tries it.
//!
//! The page is self-contained — its HTML, CSS and JavaScript are embedded in the crate
//! (`explorer/`, plain code with no dependencies, about 40 KB) and nothing is fetched from
//! elsewhere — and it reads the same OpenAPI document that clients read, so it cannot drift
//! from the API. Enable it with [`HttpServer::explorer`](super::HttpServer::explorer).

use super::state::{ServerState, original_uri};
use axum::extract::{OriginalUri, State};
use axum::response::{IntoResponse, Response};
use http::{HeaderValue, Uri, header};
use serde_json::json;
use std::sync::Arc;

const PAGE: &str = include_str!("explorer/index.html");
const STYLE: &str = include_str!("explorer/style.css");
const SCRIPT: &str = include_str!("explorer/app.js");

/// The page for routes mounted at `base` (`""` at the root), linking the MCP endpoint at
/// `mcp` when there is one.
pub(crate) fn page(base: &str, mcp: Option<&str>) -> String {
    let config = json!({
        "openapi": format!("{base}/openapi.json"),
        "ops": format!("{base}/ops/"),
        "mcp": mcp,
    });
    // `</` would end the script element early; JSON allows `<\/`.
    let config = config.to_string().replace("</", "<\\/");
    PAGE.replacen("/*STYLE*/", STYLE, 1)
        .replacen("/*CONFIG*/", &config, 1)
        .replacen("/*SCRIPT*/", SCRIPT, 1)
}

/// `GET <explorer path>`.
pub(crate) async fn explorer(
    State(shared): State<Arc<ServerState>>,
    original: Option<axum::Extension<OriginalUri>>,
    uri: Uri,
) -> Response {
    let base = shared.base_path(&original_uri(original, &uri), &uri);
    let mcp = shared
        .explorer
        .as_ref()
        .and_then(|explorer| explorer.mcp.as_deref());
    let mut response = axum::response::Html(page(&base, mcp)).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'",
        ),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::page;

    #[test]
    fn the_page_is_whole_and_its_config_cannot_end_the_script() {
        let html = page("/api</script>", Some("/mcp"));
        assert!(
            !html.contains("/*STYLE*/")
                && !html.contains("/*SCRIPT*/")
                && !html.contains("/*CONFIG*/")
        );
        assert!(
            html.contains(r#""openapi":"/api<\/script>/openapi.json""#),
            "{}",
            &html[..200]
        );
        assert_eq!(html.matches("</script>").count(), 2);
        assert!(
            html.len() < 200 * 1024,
            "the page stays small: {} bytes",
            html.len()
        );
    }
}
