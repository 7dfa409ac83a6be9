//! opkit's MCP client (the MCP import) under the official MCP conformance suite's client
//! scenarios: `conformance client --command "<this binary>" --scenario <name>` starts it
//! with the scenario's server URL as the last argument and the scenario's name in
//! `MCP_CONFORMANCE_SCENARIO`.
//!
//! It connects the way an application would ([`McpConnection::connect_http`], protocol era
//! `Auto`), which lists the tools; then it makes the calls the scenario expects, through a
//! registry like any imported operation, as a caller whose user accepts every question with
//! its form's defaults, and exits non-zero on failure.
//!
//! With the `oauth-client` feature it signs in when a scenario's server asks. The
//! `auth/client-credentials-*` scenarios give client credentials (`MCP_CONFORMANCE_CONTEXT`
//! holds `client_id` and `client_secret` or a private key): it uses the client-credentials
//! grant, finding the authorization server through the server's Protected Resource Metadata
//! ([`ClientCredentials::discovered`](opkit_adapters::oauth::ClientCredentials::discovered)).
//! `auth/wif-jwt-bearer` gives a workload JWT (workload identity federation) and
//! `auth/enterprise-managed-authorization` an ID token and the identity provider's token
//! endpoint (the ID-JAG exchange): both end in the JWT-bearer grant.
//! Every other `auth/*` scenario gets the authorization-code flow
//! ([`AuthorizationCode`](opkit_adapters::oauth::AuthorizationCode)) with the suite's client
//! metadata document URL, or the pre-registered client the context gives; the user's part —
//! the browser — is played by fetching the authorization URL from the scenario's
//! authorization server, which consents by itself, and reading the redirect it answers with.
//! In those scenarios it calls every tool the server lists, with no arguments.
//!
//! A server that declares skills (SEP-2640) has them listed; the `sep-2640-client-verify-*`
//! scenarios also load each one (`McpConnection::load_skill`), which refuses a tampered skill.
//!
//! `adapters/tests/mcp_conformance.rs` runs the scenarios.

use futures::future::BoxFuture;
use opkit::elicit::{ElicitAction, ElicitRequest, ElicitResponse, Elicitor};
use opkit::prelude::*;
use opkit_adapters::mcp::{McpConnection, McpOptions};
use serde_json::{Value, json};

/// The tools a scenario's server expects to be called, in order, and their arguments.
fn expected_calls(scenario: &str) -> Vec<(&'static str, Value)> {
    match scenario {
        "tools_call" => vec![("add_numbers", json!({"a": 5, "b": 3}))],
        "sse-retry" => vec![("test_reconnection", json!({}))],
        "elicitation-sep1034-client-defaults" => {
            vec![("test_client_elicitation_defaults", json!({}))]
        }
        // The server lists tools with invalid x-mcp-header annotations beside this one;
        // rmcp's transport drops those from the listing, so only this one is imported.
        "http-invalid-tool-headers" => vec![("valid_tool", json!({"region": "us-west1"}))],
        // The headers a call carries (`Mcp-Method`, `Mcp-Name`) are checked on this one.
        "http-standard-headers" => vec![("test_headers", json!({}))],
        "sep-2322-client-request-state" => vec![
            ("test_mrtr_echo_state", json!({})),
            ("test_mrtr_unrelated", json!({})),
            ("test_mrtr_no_state", json!({})),
            ("test_mrtr_no_result_type", json!({})),
        ],
        _ => Vec::new(),
    }
}

/// The user of this client: accepts every question with the defaults its form gives
/// (an imported tool's questions reach the importing operation's caller, here).
struct AcceptDefaults;

impl Elicitor for AcceptDefaults {
    fn elicit(
        &self,
        request: ElicitRequest,
    ) -> BoxFuture<'static, Result<ElicitResponse, CallError>> {
        let content: serde_json::Map<String, Value> = request
            .schema
            .get("properties")
            .and_then(Value::as_object)
            .map(|properties| {
                properties
                    .iter()
                    .filter_map(|(name, field)| Some((name.clone(), field.get("default")?.clone())))
                    .collect()
            })
            .unwrap_or_default();
        Box::pin(async move {
            Ok(ElicitResponse::new(
                ElicitAction::Accept,
                Some(Value::Object(content)),
            ))
        })
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::args().nth(1).ok_or(
        "usage: conformance_client <server URL> (MCP_CONFORMANCE_SCENARIO names the scenario)",
    )?;
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let options = signed_in(
        McpOptions::new("conformance").label("conformance"),
        &scenario,
    )?;
    let connection = McpConnection::connect_http(&url, options).await?;
    eprintln!(
        "connected ({}), tools: {:?}",
        connection.protocol_version().unwrap_or_default(),
        connection.tool_names()
    );
    let registry = OperationRegistry::new();
    connection.register_into(&registry)?;
    let mut calls: Vec<(String, Value)> = expected_calls(&scenario)
        .into_iter()
        .map(|(tool, arguments)| (tool.to_owned(), arguments))
        .collect();
    // Calls the scenario's context asks for (`toolCalls`), as the header scenarios give.
    let context: Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or_default();
    // They are sent as given, past the import's input check (`null` for a boolean, say):
    // the scenario checks how the arguments travel as headers.
    for call in context["toolCalls"].as_array().into_iter().flatten() {
        if let Some(tool) = call["name"].as_str() {
            let envelope = connection
                .call_tool(tool, call["arguments"].clone(), &OperationContext::new())
                .await?;
            eprintln!("{tool}: {}", serde_json::to_string(&envelope)?);
        }
    }
    if scenario.starts_with("auth/") {
        // The authorization scenarios check what happens around the calls (a step-up on
        // `tools/call`, say): each listed tool is called once.
        for tool in connection.tool_names() {
            calls.push((tool.to_owned(), json!({})));
        }
    }
    if scenario == "json-schema-2020-12-preservation" {
        // Echo the input schema the import holds for the focal tool (the one it was sent,
        // kept in `mcp.inputSchema` when it had to be opened up).
        let spec = connection
            .spec_for_tool("json_schema_2020_12_tool")
            .ok_or("the server does not list `json_schema_2020_12_tool`")?;
        let schema = spec
            .extensions
            .get("mcp.inputSchema")
            .cloned()
            .unwrap_or_else(|| spec.input_schema.clone().into_value());
        calls.push(("json_schema_echo".to_owned(), json!({ "schema": schema })));
    }
    use_skills(&connection, &scenario).await?;
    for (tool, arguments) in calls {
        let tool = tool.as_str();
        let id = connection
            .operation_id(tool)
            .ok_or_else(|| format!("the server does not list `{tool}`"))?;
        let ctx = OperationContext::new().with_elicitor(std::sync::Arc::new(AcceptDefaults));
        let envelope = registry.execute(&id, arguments, &ctx).await?;
        eprintln!("{tool}: {}", serde_json::to_string(&envelope)?);
        if envelope.is_error() {
            return Err(format!("`{tool}` failed").into());
        }
    }
    connection.close();
    Ok(())
}

/// What a host does with the server's skills (SEP-2640): it lists them, and loads one only
/// when its work needs it; the `sep-2640-client-verify-*` scenarios play that moment, so the
/// client loads each listed skill there (a tampered one is refused, and nothing of it is
/// used), and lists without loading everywhere else.
async fn use_skills(
    connection: &McpConnection,
    scenario: &str,
) -> Result<(), Box<dyn std::error::Error>> {
    let skills = connection.skills().await?;
    if skills.is_empty() {
        return Ok(());
    }
    eprintln!(
        "skills: {:?}",
        skills.iter().map(|skill| &skill.uri).collect::<Vec<_>>()
    );
    if scenario.starts_with("sep-2640-client-verify-") {
        for skill in &skills {
            match connection.load_skill(skill).await {
                Ok(loaded) => eprintln!("loaded {} ({} files)", loaded.uri, loaded.files.len()),
                Err(error) => eprintln!("not loaded: {error}"),
            }
        }
    }
    Ok(())
}

/// `options` with the sign-in the scenario calls for (when the `oauth-client` feature is on):
/// client credentials when its context gives some for that grant, the authorization-code flow
/// for the other `auth/*` scenarios.
fn signed_in(
    options: McpOptions,
    scenario: &str,
) -> Result<McpOptions, Box<dyn std::error::Error>> {
    let context: Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or_default();
    let id = context["client_id"].as_str();
    let secret = context["client_secret"].as_str();
    let key = context["private_key_pem"].as_str();
    let algorithm = context["signing_algorithm"].as_str().unwrap_or("ES256");
    if !scenario.starts_with("auth/") {
        return Ok(options);
    }
    #[cfg(feature = "oauth-client")]
    {
        use opkit_adapters::oauth::{AuthorizationCode, ClientCredentials, EnterpriseIdp};
        // Workload identity: the workload's JWT, for the JWT-bearer grant.
        if let (Some(id), Some(jwt)) = (id, context["valid_jwt"].as_str()) {
            let jwt = jwt.to_owned();
            // The suite runs its own authorization server, known only from the resource's
            // metadata: trusted here because the suite is the whole world of this client.
            let credentials =
                ClientCredentials::workload_identity(None, id, move || Ok(jwt.clone()))?
                    .trust_any_issuer();
            return Ok(options.oauth(credentials));
        }
        // Enterprise-managed authorization: the user's ID token, exchanged at the identity
        // provider for an ID-JAG, for the JWT-bearer grant.
        if let (Some(id), Some(secret), Some(id_token), Some(endpoint), Some(idp_client)) = (
            id,
            secret,
            context["idp_id_token"].as_str(),
            context["idp_token_endpoint"].as_str(),
            context["idp_client_id"].as_str(),
        ) {
            let id_token = id_token.to_owned();
            let idp = EnterpriseIdp::new(endpoint, idp_client, move || Ok(id_token.clone()));
            let credentials =
                ClientCredentials::enterprise_managed(None, id, secret, idp)?.trust_any_issuer();
            return Ok(options.oauth(credentials));
        }
        if scenario.starts_with("auth/client-credentials")
            && let Some(id) = id
        {
            let credentials = match (secret, key) {
                (_, Some(key)) => {
                    ClientCredentials::private_key_jwt(None, id, key.as_bytes(), algorithm)?
                }
                (Some(secret), None) => ClientCredentials::discovered(id, secret)?,
                (None, None) => return Err("the scenario gives no client secret or key".into()),
            };
            return Ok(options.oauth(credentials.trust_any_issuer()));
        }
        // DPoP where the authorization server offers it (`auth/dpop`, `auth/dpop-nonce`).
        let mut sign_in = AuthorizationCode::new(REDIRECT_URI, consent)?
            .client_name("opkit-conformance-client")
            .client_metadata_url(CLIENT_METADATA_URL)?
            .dpop(true);
        if let Some(id) = id {
            // The suite's authorization server is known only from its metadata.
            sign_in = sign_in
                .preregistered(id, secret.map(str::to_owned))
                .trust_any_issuer();
        }
        Ok(options.sign_in(sign_in))
    }
    #[cfg(not(feature = "oauth-client"))]
    {
        let _ = (id, secret, key, algorithm);
        eprintln!("the scenario signs in, but the `oauth-client` feature is off");
        Ok(options)
    }
}

/// Where the scenario's authorization server sends the user back (nothing listens there:
/// [`consent`] reads the redirect instead of following it).
#[cfg(feature = "oauth-client")]
const REDIRECT_URI: &str = "http://127.0.0.1:3333/callback";

/// The client metadata document URL the suite's authorization servers expect
/// (`auth/basic-cimd`).
#[cfg(feature = "oauth-client")]
const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";

/// The user's part of the authorization-code flow: the suite's authorization servers consent
/// at once, answering the authorization URL with a redirect to the redirect URI carrying the
/// code; that redirect's URL is what a browser would have been sent to.
#[cfg(feature = "oauth-client")]
async fn consent(url: String) -> Result<String, opkit_adapters::oauth::AuthorizeError> {
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()?;
    let answer = http.get(&url).send().await?;
    let location = answer
        .headers()
        .get(reqwest::header::LOCATION)
        .ok_or_else(|| {
            format!(
                "the authorization server answered {} without a redirect",
                answer.status()
            )
        })?;
    Ok(location.to_str()?.to_owned())
}
