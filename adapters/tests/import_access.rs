//! Imported operations are not a confused deputy. An application imports a remote opkit
//! service (over MCP and through its OpenAPI document) with its own credentials — a token the
//! remote takes for an admin — and serves its registry over HTTP to its own users. As an
//! attacker would try it:
//!
//! - anonymous, and as a user with no roles, call the imported `admin.purge` through the
//!   application: refused, because an import without a rule is internal, and because the
//!   remote's own rule (`roles = ["admin"]`) comes across with the import;
//! - the application's own rules (for the whole import, per operation) hold in front of the
//!   remote; the trusted in-process path still runs every imported operation.
#![cfg(all(
    feature = "http-server",
    feature = "mcp-server",
    feature = "openapi",
    feature = "mcp"
))]

mod serve_support;

use opkit::prelude::*;
use opkit_adapters::ImportAccess;
use opkit_adapters::http_server::{HttpServer, StaticTokens};
use opkit_adapters::mcp::{McpConnection, McpOptions};
use opkit_adapters::mcp_server::McpServer;
use opkit_adapters::openapi::{OpenApiAuth, OpenApiImporter, OpenApiOptions};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The remote: `files.read` for anyone, `admin.purge` for admins; counts purges.
fn remote(purges: &Arc<AtomicUsize>) -> OperationRegistry {
    let registry = OperationRegistry::new();
    registry
        .register(
            OperationSpec::new("files", "read", OperationKind::Query)
                .input_schema(json!({"type": "object"})),
            Handler::unary(|_input, _ctx| async move { Ok(json!("contents")) }),
        )
        .unwrap();
    let purges = purges.clone();
    registry
        .register(
            OperationSpec::new("admin", "purge", OperationKind::Mutation)
                .input_schema(json!({"type": "object"}))
                .access(AccessRule::roles(["admin"])),
            Handler::unary(move |_input, _ctx| {
                let purges = purges.clone();
                async move {
                    purges.fetch_add(1, Ordering::SeqCst);
                    Ok(json!("purged"))
                }
            }),
        )
        .unwrap();
    registry
}

/// The remote takes the application's token for an admin.
fn remote_tokens() -> StaticTokens {
    StaticTokens::new().with("app-token", Identity::new("app").with_roles(["admin"]))
}

/// The application's own users.
fn app_tokens() -> StaticTokens {
    StaticTokens::new()
        .with(
            "alice-token",
            Identity::new("alice").with_scopes(["files:read"]),
        )
        .with("root-token", Identity::new("root").with_roles(["admin"]))
}

/// What a POST to the application's `/ops/<id>` answers, as `who` (a token, or anonymous).
async fn post(app: &serve_support::Served, id: &str, who: Option<&str>) -> (u16, Value) {
    let mut request = reqwest::Client::new()
        .post(app.url(&format!("/ops/{id}")))
        .json(&json!({}));
    if let Some(token) = who {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// The status a refusal of `who` has: `401` for an anonymous caller (sign in), `403` for
/// one signed in.
fn refusal(who: Option<&str>) -> u16 {
    if who.is_some() { 403 } else { 401 }
}

/// The application: `registry` served over HTTP with its users' tokens.
async fn app(registry: &OperationRegistry) -> serve_support::Served {
    serve_support::serve(
        HttpServer::new(registry.clone())
            .identity_resolver(app_tokens())
            .router(),
    )
    .await
}

/// The remote served over MCP and HTTP; the imports of it with `access`, one registry each.
async fn imports(
    purges: &Arc<AtomicUsize>,
    access: impl Fn() -> ImportAccess,
) -> (
    Vec<(&'static str, OperationRegistry)>,
    Vec<serve_support::Served>,
) {
    let served = remote(purges);
    let mcp = serve_support::serve(
        axum::Router::new().nest(
            "/mcp",
            McpServer::new(served.clone())
                .identity_resolver(remote_tokens())
                .router(),
        ),
    )
    .await;
    let http = serve_support::serve(
        HttpServer::new(served)
            .identity_resolver(remote_tokens())
            .router(),
    )
    .await;
    let mut options = McpOptions::new("remote").bearer_token("app-token");
    options.access = access();
    let connection = McpConnection::connect_http(&mcp.url("/mcp"), options)
        .await
        .unwrap();
    let over_mcp = OperationRegistry::new();
    connection.register_into(&over_mcp).unwrap();

    let document: Value = reqwest::get(http.url("/openapi.json"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let mut options = OpenApiOptions::new("remote")
        .base_url(http.url(""))
        .auth(OpenApiAuth::new().bearer("app-token"));
    options.access = access();
    let import = OpenApiImporter::new(options)
        .import_value(document)
        .unwrap();
    let over_http = OperationRegistry::new();
    import.register_into(&over_http).unwrap();
    // The connection lives as long as the operations registered from it.
    drop(connection);
    (
        vec![("MCP", over_mcp), ("OpenAPI", over_http)],
        vec![mcp, http],
    )
}

#[tokio::test]
async fn an_import_without_a_rule_is_internal() {
    let purges = Arc::new(AtomicUsize::new(0));
    let (imported, _servers) = imports(&purges, ImportAccess::new).await;
    for (how, registry) in imported {
        let app = app(&registry).await;
        for id in ["remote.admin_purge", "remote.files_read"] {
            for who in [None, Some("alice-token")] {
                let (status, body) = post(&app, id, who).await;
                assert_eq!(status, refusal(who), "{how} {id} as {who:?}: {body}");
                assert_eq!(
                    body["code"], "ACCESS_DENIED",
                    "{how} {id} as {who:?}: {body}"
                );
            }
        }
        // The remote's rule came across: even the application's admin is held to it, and
        // the files operation, which the remote left public, is internal here.
        let purge = registry.spec("remote.admin_purge").unwrap();
        assert_eq!(purge.access, AccessRule::roles(["admin"]), "{how}");
        assert!(
            registry
                .spec("remote.files_read")
                .unwrap()
                .access
                .is_internal(),
            "{how}"
        );
        // The trusted in-process path runs it.
        let envelope = registry
            .execute("remote.files_read", json!({}), &OperationContext::default())
            .await
            .unwrap();
        assert_eq!(envelope.data, json!("contents"), "{how}");
    }
    assert_eq!(purges.load(Ordering::SeqCst), 0, "nothing was purged");
}

#[tokio::test]
async fn the_remote_rule_holds_in_front_of_a_public_import() {
    let purges = Arc::new(AtomicUsize::new(0));
    let (imported, _servers) =
        imports(&purges, || ImportAccess::new().all(AccessRule::public())).await;
    for (how, registry) in imported {
        let app = app(&registry).await;
        let (status, body) = post(&app, "remote.files_read", None).await;
        assert_eq!(status, 200, "{how}: {body}");
        for who in [None, Some("alice-token")] {
            let (status, body) = post(&app, "remote.admin_purge", who).await;
            assert_eq!(status, refusal(who), "{how} as {who:?}: {body}");
        }
        let (status, body) = post(&app, "remote.admin_purge", Some("root-token")).await;
        assert_eq!(status, 200, "{how}: {body}");
    }
    assert_eq!(
        purges.load(Ordering::SeqCst),
        2,
        "one purge per import, by root"
    );
}

#[tokio::test]
async fn a_rule_by_name_wins_over_the_import_and_the_remote() {
    let purges = Arc::new(AtomicUsize::new(0));
    let (imported, _servers) = imports(&purges, || {
        ImportAccess::new()
            .all(AccessRule::public())
            .operation("files_read", AccessRule::scopes(["files:read"]))
            .operation("admin_purge", AccessRule::internal())
    })
    .await;
    for (how, registry) in imported {
        let app = app(&registry).await;
        assert_eq!(post(&app, "remote.files_read", None).await.0, 401, "{how}");
        assert_eq!(
            post(&app, "remote.files_read", Some("alice-token")).await.0,
            200,
            "{how}"
        );
        assert_eq!(
            post(&app, "remote.admin_purge", Some("root-token")).await.0,
            403,
            "{how}"
        );
    }
    assert_eq!(purges.load(Ordering::SeqCst), 0);
}
