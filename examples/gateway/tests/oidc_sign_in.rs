//! The gateway signing callers in with a real OpenID provider (`oidc-provider`, the
//! adapters' OAuth peer): tokens for the gateway's `/api` and `/mcp` resources, a caller
//! whose token lacks the rule's scope refused over HTTP (`curl`) and MCP (the official
//! TypeScript SDK client), an anonymous caller pointed to the Protected Resource Metadata.

mod support;

use opkit_testkit::oidc::OidcProvider;
use serde_json::{Value, json};
use support::{GatewayProcess, curl_post_with};

async fn token(issuer: &str, client: &str, scope: &str, resource: &str) -> String {
    let answer: Value = reqwest::Client::new()
        .post(format!("{issuer}/token"))
        .basic_auth(client, Some(format!("{client}-secret")))
        .form(&[
            ("grant_type", "client_credentials"),
            ("scope", scope),
            ("resource", resource),
        ])
        .send()
        .await
        .expect("the provider answers")
        .json()
        .await
        .expect("a JSON answer");
    answer["access_token"]
        .as_str()
        .unwrap_or_else(|| panic!("a token: {answer}"))
        .to_owned()
}

fn config(issuer: &str, public_url: &str, fastapi: &str) -> String {
    format!(
        r#"[sign_in]
oidc = {{ issuer = "{issuer}", public_url = "{public_url}" }}

[[sources]]
namespace = "shop"
openapi = "{fastapi}/openapi.json"

[[rules]]
namespace = "shop"
scopes = ["notes:read"]

[[rules]]
operation = "shop.create_item"
scopes = ["notes:admin"]
"#
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn callers_sign_in_with_the_providers_tokens() {
    let provider = OidcProvider::start();
    let issuer = provider.issuer().to_owned();
    let fastapi = opkit_testkit::peers::start_fastapi();
    let port = opkit_testkit::ports::free_port();
    let base = format!("http://127.0.0.1:{port}");
    let text = config(&issuer, &base, &fastapi.base_url());
    let gateway = tokio::task::spawn_blocking(move || {
        GatewayProcess::start_at(&text, &[], &format!("127.0.0.1:{port}"))
    })
    .await
    .expect("the gateway starts");
    assert_eq!(gateway.base, base);

    let (status, reply) = curl_post_with(
        &gateway.op_url("shop.get_item"),
        None,
        &json!({"item_id": 1}),
    );
    assert_eq!(status, 401, "{reply}");

    let reader = token(&issuer, "reader", "notes:read", &format!("{base}/api")).await;
    let reader_header = format!("authorization: Bearer {reader}");
    let (status, reply) = curl_post_with(
        &gateway.op_url("shop.get_item"),
        Some(&reader_header),
        &json!({"item_id": 1}),
    );
    assert_eq!(status, 200, "{reply}");
    let item = json!({"body": {"name": "pen", "price": 1.5}});
    let (status, reply) = curl_post_with(
        &gateway.op_url("shop.create_item"),
        Some(&reader_header),
        &item,
    );
    assert_eq!(status, 403, "{reply}");
    let writer = token(
        &issuer,
        "writer",
        "notes:read notes:admin",
        &format!("{base}/api"),
    )
    .await;
    let (status, reply) = curl_post_with(
        &gateway.op_url("shop.create_item"),
        Some(&format!("authorization: Bearer {writer}")),
        &item,
    );
    assert_eq!(status, 200, "{reply}");

    // Over MCP, with tokens for the MCP resource.
    let reader = token(&issuer, "reader", "notes:read", &format!("{base}/mcp")).await;
    let calls = json!([
        {"name": "shop.get_item", "arguments": {"item_id": 2}},
        {"name": "shop.create_item", "arguments": item},
    ]);
    let report = support::ts_client(&gateway.mcp_url(), &reader, &calls).await;
    let allowed = &report["calls"][0];
    assert!(
        allowed.get("error").is_none() && allowed["result"]["isError"] != true,
        "{allowed}"
    );
    let refused = &report["calls"][1];
    assert!(refused.to_string().contains("ACCESS_DENIED"), "{refused}");
}
