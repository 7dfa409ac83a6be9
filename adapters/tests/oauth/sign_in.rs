//! The MCP import signs a user in with the authorization-code flow (feature `oauth-client`),
//! against a real OpenID provider (`oidc-provider`) in front of an opkit MCP server that
//! checks its tokens: the import registers itself with the provider (RFC 7591), takes the
//! "user" — a browser played by following the provider's redirects through its login and
//! consent — through the authorization URL, and calls with the token; a `403` for a missing
//! scope is answered by asking the user again for more, and a token the server stops
//! accepting by a refresh.
#![cfg(all(feature = "oauth", feature = "mcp-server", feature = "oauth-client"))]

use crate::mcp::Mcp;
use crate::oauth_support::Provider;
use opkit::OperationContext;
use opkit_adapters::mcp::{McpConnection, McpOptions};
use opkit_adapters::oauth::{AuthorizationCode, AuthorizeError};
use reqwest::header::{COOKIE, LOCATION, SET_COOKIE};
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// Where the provider sends the user back (nothing listens: [`browser`] stops there).
const REDIRECT_URI: &str = "http://127.0.0.1:9/callback";

/// The user's browser: follows the authorization URL's redirects, keeping the provider's
/// cookies, through its login and consent until one leads to the redirect URI — whose URL,
/// code and all, it gives back, as a desktop application's loopback listener would.
async fn browser(url: String) -> Result<String, AuthorizeError> {
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()?;
    let mut cookies: Vec<String> = Vec::new();
    let mut next = url;
    for _ in 0..10 {
        if next.starts_with(REDIRECT_URI) {
            return Ok(next);
        }
        let mut request = http.get(&next);
        if !cookies.is_empty() {
            request = request.header(COOKIE, cookies.join("; "));
        }
        let answer = request.send().await?;
        for value in answer.headers().get_all(SET_COOKIE) {
            let pair = value.to_str()?.split(';').next().unwrap_or_default();
            let name = pair.split('=').next().unwrap_or_default();
            cookies.retain(|cookie| !cookie.starts_with(&format!("{name}=")));
            cookies.push(pair.to_owned());
        }
        let location = answer
            .headers()
            .get(LOCATION)
            .ok_or_else(|| format!("{next} answered {} without a redirect", answer.status()))?
            .to_str()?;
        next = url::Url::parse(&next)?.join(location)?.to_string();
    }
    Err("the provider redirected more than 10 times".into())
}

/// A sign-in whose browser counts the times the user was asked.
fn counted_sign_in(asked: &Arc<AtomicUsize>) -> AuthorizationCode {
    let asked = asked.clone();
    AuthorizationCode::new(REDIRECT_URI, move |url: String| {
        asked.fetch_add(1, Ordering::SeqCst);
        browser(url)
    })
    .expect("a valid redirect URI")
    .client_name("opkit-sign-in-test")
    .scopes(["notes:read"])
}

#[tokio::test]
async fn the_import_signs_the_user_in_steps_up_and_refreshes() {
    let provider = Provider::start();
    let mcp = Mcp::start(&provider, false).await;
    let asked = Arc::new(AtomicUsize::new(0));
    let options = McpOptions::new("remote").sign_in(counted_sign_in(&asked));
    let connection = McpConnection::connect_http(&mcp.resource(), options)
        .await
        .expect("the import connects once the user signed in");
    assert_eq!(
        asked.load(Ordering::SeqCst),
        1,
        "the first 401 asks the user"
    );
    let ctx = OperationContext::new();

    let read = connection
        .call_tool("notes.read", json!({}), &ctx)
        .await
        .expect("a call with the token");
    assert_eq!(read.data["caller"]["id"], "alice", "{read:?}");
    assert_eq!(asked.load(Ordering::SeqCst), 1, "the token is reused");

    // `notes.write` needs `notes:write`, which the user has not granted yet: the server
    // answers 403 insufficient_scope, the user is asked for `notes:read notes:write`.
    let write = connection
        .call_tool("notes.write", json!({}), &ctx)
        .await
        .expect("the call after the step-up");
    assert_eq!(write.data["caller"]["id"], "alice", "{write:?}");
    let scopes = write.data["caller"]["scopes"].to_string();
    assert!(
        scopes.contains("notes:write") && scopes.contains("notes:read"),
        "the stepped-up token holds both scopes: {scopes}"
    );
    assert_eq!(asked.load(Ordering::SeqCst), 2, "one step-up");
    connection
        .call_tool("notes.write", json!({}), &ctx)
        .await
        .expect("again, with the stepped-up token");
    assert_eq!(asked.load(Ordering::SeqCst), 2, "no second step-up");

    // The provider withdraws the key that signed the token: the server refuses it (401);
    // the import refreshes it (the user granted `offline_access`, which the provider
    // advertises) and the call goes through without asking the user. (Signing in again
    // when no refresh works is the conformance suite's `auth/authorization-server-migration`.)
    provider.rotate(true).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let again = connection
        .call_tool("notes.read", json!({}), &ctx)
        .await
        .expect("the call with the refreshed token");
    assert_eq!(again.data["caller"]["id"], "alice", "{again:?}");
    assert_eq!(
        asked.load(Ordering::SeqCst),
        2,
        "a refresh does not ask the user"
    );
    connection.close();
}

#[tokio::test]
async fn a_user_who_does_not_sign_in_is_a_clear_error() {
    let provider = Provider::start();
    let mcp = Mcp::start(&provider, false).await;
    let sign_in = AuthorizationCode::new(REDIRECT_URI, |_url: String| async {
        Err::<String, AuthorizeError>("the user closed the window".into())
    })
    .expect("a valid redirect URI");
    let error = McpConnection::connect_http(&mcp.resource(), McpOptions::new("x").sign_in(sign_in))
        .await
        .expect_err("no token, no connection");
    let text = error.to_string();
    assert!(
        text.contains("the user was not signed in") && text.contains("closed the window"),
        "{text}"
    );

    // A redirect without a code (the provider's error answer, say) is named too.
    let sign_in = AuthorizationCode::new(REDIRECT_URI, |_url: String| async {
        Ok(format!("{REDIRECT_URI}?error=access_denied&state=x"))
    })
    .expect("a valid redirect URI");
    let error = McpConnection::connect_http(&mcp.resource(), McpOptions::new("x").sign_in(sign_in))
        .await
        .expect_err("no code, no connection");
    assert!(error.to_string().contains("signing in failed"), "{error}");
}

#[test]
fn bad_sign_in_settings_are_refused_up_front() {
    let authorize = |_url: String| async { Ok::<String, AuthorizeError>(String::new()) };
    let error = AuthorizationCode::new("not a uri", authorize).unwrap_err();
    assert!(error.to_string().contains("redirect"), "{error}");
    let plain = AuthorizationCode::new(REDIRECT_URI, authorize).unwrap();
    let error = plain
        .clone()
        .client_metadata_url("http://client.example/metadata.json")
        .unwrap_err();
    assert!(error.to_string().contains("not an https URL"), "{error}");
    let error = plain
        .client_metadata_url("https://client.example")
        .unwrap_err();
    assert!(error.to_string().contains("no path"), "{error}");
}
