//! The tools the official MCP conformance suite (`@modelcontextprotocol/conformance`) calls,
//! written as ordinary opkit operations and served over Streamable HTTP at `/mcp`:
//! content blocks through [`mcp_envelope`], an error, progress and log messages through the
//! context, and a tool with a JSON Schema 2020-12 input. `tool_name = ".."` gives each the
//! exact name the suite asks for. With `--skills DIR` it also serves the skills (SEP-2640) of
//! that directory (the suite's fixture is `adapters/peers/conformance/skills`).
//!
//! ```text
//! cargo run -p opkit-adapters --features mcp-server,mcp-skills --example conformance_server -- --port 3001 --skills adapters/peers/conformance/skills
//! npx @modelcontextprotocol/conformance server --url http://127.0.0.1:3001/mcp
//! ```
//!
//! `adapters/tests/mcp_conformance.rs` runs the suite against it.

use opkit::elicit::{ClientRequest, ElicitAction, ElicitRequest, ElicitResponse};
use opkit::envelope::{
    EmbeddedResource, McpContentBlock, McpMeta, PromptMessage, Role, mcp_envelope,
};
use opkit::prelude::*;
use opkit::report::LogLevel;
use opkit_adapters::mcp_server::{McpServer, McpSession, McpSpec, MemorySkill, Skills};
use serde_json::{Value, json};
use std::time::Duration;

/// A 1x1 red PNG.
const IMAGE: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
/// A minimal WAV file.
const AUDIO: &str = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=";

/// The envelope of a result made of content blocks only.
fn blocks(content: Vec<McpContentBlock>) -> ResponseEnvelope {
    let text = content.iter().find_map(|block| match block {
        McpContentBlock::Text { text, .. } => Some(text.clone()),
        _ => None,
    });
    mcp_envelope(
        text.map_or(Value::Null, Value::String),
        McpMeta::blocks(content),
    )
}

fn image() -> McpContentBlock {
    McpContentBlock::Image {
        data: IMAGE.into(),
        mime_type: "image/png".into(),
        annotations: None,
    }
}

fn resource(uri: &str, mime_type: &str, text: &str) -> McpContentBlock {
    McpContentBlock::Resource {
        resource: EmbeddedResource {
            uri: uri.into(),
            mime_type: Some(mime_type.into()),
            text: Some(text.into()),
            blob: None,
        },
        annotations: None,
    }
}

/// Returns a simple text.
#[operation(namespace = "conformance", mcp(tool_name = "test_simple_text"))]
async fn simple_text() -> ResponseEnvelope {
    blocks(vec![McpContentBlock::text(
        "This is a simple text response for testing.",
    )])
}

/// Returns an image (a 1x1 red PNG).
#[operation(namespace = "conformance", mcp(tool_name = "test_image_content"))]
async fn image_content() -> ResponseEnvelope {
    blocks(vec![image()])
}

/// Returns audio (a minimal WAV file).
#[operation(namespace = "conformance", mcp(tool_name = "test_audio_content"))]
async fn audio_content() -> ResponseEnvelope {
    blocks(vec![McpContentBlock::Audio {
        data: AUDIO.into(),
        mime_type: "audio/wav".into(),
        annotations: None,
    }])
}

/// Returns an embedded text resource.
#[operation(namespace = "conformance", mcp(tool_name = "test_embedded_resource"))]
async fn embedded_resource() -> ResponseEnvelope {
    blocks(vec![resource(
        "test://embedded-resource",
        "text/plain",
        "This is an embedded resource content.",
    )])
}

/// Returns a text, an image and an embedded resource.
#[operation(
    namespace = "conformance",
    mcp(tool_name = "test_multiple_content_types")
)]
async fn multiple_content_types() -> ResponseEnvelope {
    blocks(vec![
        McpContentBlock::text("Multiple content types test:"),
        image(),
        resource(
            "test://mixed-content-resource",
            "application/json",
            r#"{"test":"data","value":123}"#,
        ),
    ])
}

/// Sends three log messages while it runs.
#[operation(namespace = "conformance", mcp(tool_name = "test_tool_with_logging"))]
async fn tool_with_logging(ctx: &OperationContext) -> String {
    ctx.log(LogLevel::Info, "Tool execution started");
    tokio::time::sleep(Duration::from_millis(50)).await;
    ctx.log(LogLevel::Info, "Tool processing data");
    tokio::time::sleep(Duration::from_millis(50)).await;
    ctx.log(LogLevel::Info, "Tool execution completed");
    "Tool with logging executed successfully".to_owned()
}

/// Reports progress 0, 50 and 100 out of 100.
#[operation(namespace = "conformance", mcp(tool_name = "test_tool_with_progress"))]
async fn tool_with_progress(ctx: &OperationContext) -> String {
    for step in [0.0, 50.0, 100.0] {
        ctx.progress(step, Some(100.0), Some(&format!("{step}% done")));
        if step < 100.0 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    "Tool with progress executed successfully".to_owned()
}

/// Closes its own SSE stream mid-call (SEP-1699), then answers: the client gets the answer
/// by resuming the stream with `Last-Event-ID`.
#[operation(namespace = "conformance", mcp(tool_name = "test_reconnection"))]
async fn reconnection(ctx: &OperationContext) -> Result<String, CallError> {
    let session = ctx
        .edge()
        .and_then(|edge| edge.fact::<McpSession>())
        .ok_or_else(|| CallError::execution("not called over MCP"))?;
    if !session.close_sse_stream(Duration::from_millis(500)).await {
        return Err(CallError::execution("this call has no SSE stream to close"));
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    Ok("Reconnection test completed".to_owned())
}

/// Always fails.
#[operation(namespace = "conformance", mcp(tool_name = "test_error_handling"))]
async fn error_handling() -> Result<String, CallError> {
    Err(CallError::execution(
        "This tool intentionally returns an error for testing",
    ))
}

/// A static text resource for testing.
#[operation(
    namespace = "conformance",
    mcp(resource = "test://static-text", tool_name = "static-text")
)]
async fn static_text() -> String {
    "This is the content of the static text resource.".to_owned()
}

/// A static binary resource (image) for testing.
#[operation(
    namespace = "conformance",
    mcp(resource = "test://static-binary", tool_name = "static-binary")
)]
async fn static_binary() -> ResponseEnvelope {
    blocks(vec![image()])
}

/// What the resource template reads.
#[derive(serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
struct TemplateData {
    id: String,
    template_test: bool,
    data: String,
}

/// A resource template with parameter substitution.
#[operation(
    namespace = "conformance",
    mcp(resource = "test://template/{id}/data", tool_name = "template")
)]
async fn template_data(id: String) -> TemplateData {
    TemplateData {
        data: format!("Data for ID: {id}"),
        id,
        template_test: true,
    }
}

/// A resource that changes every 3 seconds.
#[operation(
    namespace = "conformance",
    mcp(resource = "test://watched-resource", tool_name = "watched-resource")
)]
async fn watched_resource() -> String {
    format!(
        "Watched resource content at {:?}",
        std::time::SystemTime::now()
    )
}

/// The changes of `test://watched-resource`: an item every 3 seconds (at most 100).
#[operation(
    namespace = "conformance",
    subscription,
    mcp(resource = "test://watched-resource")
)]
fn watched_resource_changes() -> impl futures::Stream<Item = u32> + Send + 'static {
    futures::stream::unfold(0_u32, |n| async move {
        if n >= 100 {
            return None;
        }
        tokio::time::sleep(Duration::from_secs(3)).await;
        Some((n, n + 1))
    })
}

/// A simple prompt without arguments.
#[operation(
    namespace = "conformance",
    mcp(prompt, tool_name = "test_simple_prompt")
)]
async fn simple_prompt() -> Vec<PromptMessage> {
    vec![PromptMessage::user("This is a simple prompt for testing.")]
}

/// The arguments of `test_prompt_with_arguments`.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct PromptArguments {
    /// First test argument
    arg1: String,
    /// Second test argument
    arg2: String,
}

/// A prompt with required arguments.
#[operation(
    namespace = "conformance",
    mcp(prompt, tool_name = "test_prompt_with_arguments")
)]
async fn prompt_with_arguments(Input(args): Input<PromptArguments>) -> String {
    format!(
        "Prompt with arguments: arg1='{}', arg2='{}'",
        args.arg1, args.arg2
    )
}

/// The argument of `test_prompt_with_embedded_resource`.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
struct EmbedArguments {
    /// URI of the resource to embed
    resource_uri: String,
}

/// A prompt that includes an embedded resource.
#[operation(
    namespace = "conformance",
    mcp(prompt, tool_name = "test_prompt_with_embedded_resource")
)]
async fn prompt_with_embedded_resource(Input(args): Input<EmbedArguments>) -> Vec<PromptMessage> {
    vec![
        PromptMessage {
            role: Role::User,
            content: resource(
                &args.resource_uri,
                "text/plain",
                "Embedded resource content for testing.",
            ),
        },
        PromptMessage::user("Please process the embedded resource above."),
    ]
}

/// A prompt that includes image content.
#[operation(
    namespace = "conformance",
    mcp(prompt, tool_name = "test_prompt_with_image")
)]
async fn prompt_with_image() -> Vec<PromptMessage> {
    vec![
        PromptMessage {
            role: Role::User,
            content: image(),
        },
        PromptMessage::user("Please analyze the image above."),
    ]
}

/// What the user did with a question, as the conformance tools report it.
fn answered(prefix: &str, response: &ElicitResponse) -> String {
    let action = match response.action {
        ElicitAction::Accept => "accept",
        ElicitAction::Decline => "decline",
        ElicitAction::Cancel => "cancel",
    };
    let content = response.content.clone().unwrap_or_else(|| json!({}));
    format!("{prefix}: action={action}, content={content}")
}

/// Tests server-initiated elicitation (user input request).
#[operation(namespace = "conformance", mcp(tool_name = "test_elicitation"))]
async fn elicitation(ctx: &OperationContext, message: String) -> Result<String, CallError> {
    let schema = json!({
        "type": "object",
        "properties": {"response": {"type": "string", "description": "User's response"}},
        "required": ["response"]
    });
    let response = ctx.elicit_raw(ElicitRequest::new(message, schema)).await?;
    Ok(answered("User response", &response))
}

/// Tests elicitation with default values per SEP-1034.
#[operation(
    namespace = "conformance",
    mcp(tool_name = "test_elicitation_sep1034_defaults")
)]
async fn elicitation_defaults(ctx: &OperationContext) -> Result<String, CallError> {
    let schema = json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "User name", "default": "John Doe"},
            "age": {"type": "integer", "description": "User age", "default": 30},
            "score": {"type": "number", "description": "User score", "default": 95.5},
            "status": {"type": "string", "description": "User status", "enum": ["active", "inactive", "pending"], "default": "active"},
            "verified": {"type": "boolean", "description": "Verification status", "default": true}
        },
        "required": []
    });
    let message = "Please review and update the form fields with defaults";
    let response = ctx.elicit_raw(ElicitRequest::new(message, schema)).await?;
    Ok(answered("Elicitation completed", &response))
}

/// Tests elicitation with enum schema improvements per SEP-1330.
#[operation(
    namespace = "conformance",
    mcp(tool_name = "test_elicitation_sep1330_enums")
)]
async fn elicitation_enums(ctx: &OperationContext) -> Result<String, CallError> {
    let schema = json!({
        "type": "object",
        "properties": {
            "untitledSingle": {"type": "string", "description": "Select one option", "enum": ["option1", "option2", "option3"]},
            "titledSingle": {"type": "string", "description": "Select one option with titles", "oneOf": [
                {"const": "value1", "title": "First Option"},
                {"const": "value2", "title": "Second Option"},
                {"const": "value3", "title": "Third Option"}
            ]},
            "legacyEnum": {"type": "string", "description": "Select one option (legacy)", "enum": ["opt1", "opt2", "opt3"], "enumNames": ["Option One", "Option Two", "Option Three"]},
            "untitledMulti": {"type": "array", "description": "Select multiple options", "minItems": 1, "maxItems": 3, "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
            "titledMulti": {"type": "array", "description": "Select multiple options with titles", "minItems": 1, "maxItems": 3, "items": {"anyOf": [
                {"const": "value1", "title": "First Choice"},
                {"const": "value2", "title": "Second Choice"},
                {"const": "value3", "title": "Third Choice"}
            ]}}
        },
        "required": []
    });
    let message = "Please select options from the enum fields";
    let response = ctx.elicit_raw(ElicitRequest::new(message, schema)).await?;
    Ok(answered("Elicitation completed", &response))
}

/// One string field's question, named `key` (the multi-round tools' questions).
async fn ask_text(
    ctx: &OperationContext,
    key: &str,
    message: &str,
    field: &str,
) -> Result<String, CallError> {
    let schema = json!({
        "type": "object",
        "properties": {field: {"type": "string"}},
        "required": [field]
    });
    let answer = ctx
        .elicit_raw(ElicitRequest::new(message, schema).with_key(key))
        .await?;
    Ok(answer
        .content
        .as_ref()
        .and_then(|content| content.get(field))
        .and_then(Value::as_str)
        .unwrap_or("nobody")
        .to_owned())
}

/// A yes/no question named `confirm`.
async fn confirm(ctx: &OperationContext) -> Result<bool, CallError> {
    let schema = json!({
        "type": "object",
        "properties": {"ok": {"type": "boolean"}},
        "required": ["ok"]
    });
    let answer = ctx
        .elicit_raw(ElicitRequest::new("Please confirm", schema).with_key("confirm"))
        .await?;
    Ok(answer
        .content
        .as_ref()
        .and_then(|content| content.get("ok"))
        == Some(&json!(true)))
}

/// MRTR: asks the user's name (`user_name`), then greets them.
#[operation(
    namespace = "conformance",
    mcp(tool_name = "test_input_required_result_elicitation")
)]
async fn mrtr_elicitation(ctx: &OperationContext) -> Result<String, CallError> {
    let name = ask_text(ctx, "user_name", "What is your name?", "name").await?;
    Ok(format!("Hello, {name}!"))
}

/// MRTR: returns an input-required result with a requestState, and checks it on the retry.
#[operation(
    namespace = "conformance",
    mcp(tool_name = "test_input_required_result_request_state")
)]
async fn mrtr_request_state(ctx: &OperationContext) -> Result<String, CallError> {
    if confirm(ctx).await? {
        Ok("state-ok: requestState validated".to_owned())
    } else {
        Ok("state-declined".to_owned())
    }
}

/// MRTR: a signed requestState; a tampered one is refused.
#[operation(
    namespace = "conformance",
    mcp(tool_name = "test_input_required_result_tampered_state")
)]
async fn mrtr_tampered_state(ctx: &OperationContext) -> Result<String, CallError> {
    confirm(ctx).await?;
    Ok("integrity-ok: state verified".to_owned())
}

/// MRTR: two rounds of questions (`step1`, then `step2`).
#[operation(
    namespace = "conformance",
    mcp(tool_name = "test_input_required_result_multi_round")
)]
async fn mrtr_multi_round(ctx: &OperationContext) -> Result<String, CallError> {
    let name = ask_text(ctx, "step1", "Step 1: What is your name?", "name").await?;
    let color = ask_text(
        ctx,
        "step2",
        "Step 2: What is your favorite color?",
        "color",
    )
    .await?;
    Ok(format!("Multi-round complete for {name} who likes {color}"))
}

/// MRTR on prompts/get: asks what context the prompt should use.
#[operation(
    namespace = "conformance",
    mcp(prompt, tool_name = "test_input_required_result_prompt")
)]
async fn mrtr_prompt(ctx: &OperationContext) -> Result<String, CallError> {
    let context = ask_text(
        ctx,
        "user_context",
        "What context should the prompt use?",
        "context",
    )
    .await?;
    Ok(format!("Prompt with context: {context}"))
}

/// Greets (a plain call, never a task).
#[operation(namespace = "tasks", mcp(tool_name = "greet"))]
async fn greet(name: String) -> String {
    format!("Hello, {name}!")
}

/// Sleeps `seconds` seconds, as a task for clients that follow tasks; a cancellation stops it.
#[operation(namespace = "tasks", mcp(task, tool_name = "slow_compute"))]
async fn slow_compute(ctx: &OperationContext, seconds: f64) -> Result<String, CallError> {
    let pause = Duration::from_secs_f64(seconds.clamp(0.0, 600.0));
    ctx.progress(0.0, Some(1.0), Some("computing"));
    tokio::select! {
        () = tokio::time::sleep(pause) => Ok(format!("Computed for {seconds} seconds")),
        () = async {
            match ctx.cancellation() {
                Some(token) => token.cancelled().await,
                None => std::future::pending().await,
            }
        } => Err(CallError::aborted("cancelled")),
    }
}

/// Always fails with a tool error; only runs as a task.
#[operation(namespace = "tasks", mcp(task = "required", tool_name = "failing_job"))]
async fn failing_job() -> Result<String, CallError> {
    Err(CallError::execution("the job failed"))
}

/// Panics: a protocol error, so its task fails.
#[operation(namespace = "tasks", mcp(task, tool_name = "protocol_error_job"))]
async fn protocol_error_job() -> String {
    panic!("the job broke")
}

/// Asks to confirm a deletion, as a task.
#[operation(namespace = "tasks", mcp(task, tool_name = "confirm_delete"))]
async fn confirm_delete(ctx: &OperationContext) -> Result<String, CallError> {
    Ok(if confirm(ctx).await? {
        "deleted"
    } else {
        "kept"
    }
    .to_owned())
}

/// Asks two questions at once, as a task.
#[operation(namespace = "tasks", mcp(task, tool_name = "multi_input"))]
async fn multi_input(ctx: &OperationContext) -> Result<String, CallError> {
    let (name, color) = tokio::join!(
        ask_text(ctx, "name", "What is your name?", "name"),
        ask_text(ctx, "color", "What is your favorite color?", "color"),
    );
    Ok(format!("{} likes {}", name?, color?))
}

/// Asks the user's name by an input-required round, then greets them as a task: the call
/// that brings the answer answers with the task.
#[operation(
    namespace = "tasks",
    mcp(task = "after_input", tool_name = "test_tool_with_task")
)]
async fn test_tool_with_task(ctx: &OperationContext) -> Result<String, CallError> {
    let name = ask_text(ctx, "user_name", "What is your name?", "name").await?;
    Ok(format!("Hello, {name}!"))
}

/// A sampling request's params: one user message, at most `max_tokens` tokens.
fn sampling(text: &str, max_tokens: u32) -> Value {
    json!({
        "messages": [{"role": "user", "content": {"type": "text", "text": text}}],
        "maxTokens": max_tokens
    })
}

/// The text a sampling result carries.
fn sampled(result: &Value) -> String {
    result["content"]["text"]
        .as_str()
        .unwrap_or("no response")
        .to_owned()
}

/// Asks the client's model (sampling) with the prompt.
#[operation(namespace = "conformance", mcp(tool_name = "test_sampling"))]
async fn sampling_tool(ctx: &OperationContext, prompt: String) -> Result<String, CallError> {
    let request = ClientRequest::new("sampling/createMessage", sampling(&prompt, 100));
    let result = ctx.client_request(request).await?;
    Ok(format!("LLM response: {}", sampled(&result)))
}

/// MRTR: asks the client's model a question (`sample_request`).
#[operation(
    namespace = "conformance",
    mcp(tool_name = "test_input_required_result_sampling")
)]
async fn mrtr_sampling(ctx: &OperationContext) -> Result<String, CallError> {
    let params = sampling("What is the capital of France?", 100);
    let request = ClientRequest::new("sampling/createMessage", params).with_key("sample_request");
    let result = ctx.client_request(request).await?;
    Ok(format!("Sampling result: {}", sampled(&result)))
}

/// MRTR: asks the client's roots (`roots_request`).
#[operation(
    namespace = "conformance",
    mcp(tool_name = "test_input_required_result_list_roots")
)]
async fn mrtr_list_roots(ctx: &OperationContext) -> Result<String, CallError> {
    let request = ClientRequest::new("roots/list", json!({})).with_key("roots_request");
    let result = ctx.client_request(request).await?;
    let count = result["roots"].as_array().map_or(0, Vec::len);
    Ok(format!("Found {count} root(s)"))
}

/// MRTR: asks a question, the model and the roots at once.
#[operation(
    namespace = "conformance",
    mcp(tool_name = "test_input_required_result_multiple_inputs")
)]
async fn mrtr_multiple_inputs(ctx: &OperationContext) -> Result<String, CallError> {
    let greeting = ClientRequest::new(
        "sampling/createMessage",
        sampling("Generate a greeting", 50),
    )
    .with_key("greeting");
    let roots = ClientRequest::new("roots/list", json!({})).with_key("client_roots");
    let (name, greeting, roots) = tokio::join!(
        ask_text(ctx, "user_name", "What is your name?", "name"),
        ctx.client_request(greeting),
        ctx.client_request(roots),
    );
    let (name, greeting, roots) = (name?, greeting?, roots?);
    let count = roots["roots"].as_array().map_or(0, Vec::len);
    Ok(format!(
        "Name: {name}; Greeting: {}; Roots: {count}",
        sampled(&greeting)
    ))
}

/// MRTR: asks only what the client declared it can answer (a question, the model).
#[operation(
    namespace = "conformance",
    mcp(tool_name = "test_input_required_result_capabilities")
)]
async fn mrtr_capabilities(ctx: &OperationContext) -> Result<String, CallError> {
    let schema = json!({"type": "object", "properties": {"value": {"type": "string"}}, "required": ["value"]});
    let question =
        ctx.elicit_raw(ElicitRequest::new("Elicitation input", schema).with_key("elicit_input"));
    let sample = ctx.client_request(
        ClientRequest::new("sampling/createMessage", sampling("Sample request", 50))
            .with_key("sample_input"),
    );
    let (question, sample) = tokio::join!(question, sample);
    let mut received = Vec::new();
    for (key, outcome) in [
        ("elicit_input", question.map(|_| ())),
        ("sample_input", sample.map(|_| ())),
    ] {
        match outcome {
            Ok(()) => received.push(key),
            // Not declared by the client: not asked.
            Err(error) if error.kind == Some(opkit::ErrorKind::Unavailable) => {}
            Err(error) => return Err(error),
        }
    }
    Ok(format!("capabilities-ok: received {}", received.join(",")))
}

/// Needs the client's model: a client without `sampling` gets -32021.
#[operation(namespace = "conformance", mcp(tool_name = "test_missing_capability"))]
async fn missing_capability(ctx: &OperationContext) -> Result<String, CallError> {
    let request = ClientRequest::new("sampling/createMessage", sampling("Say hi", 10));
    ctx.client_request(request).await?;
    Ok("Success".to_owned())
}

/// The served registry, for the tools that change it.
static SERVED: std::sync::OnceLock<OperationRegistry> = std::sync::OnceLock::new();

/// A tool that comes and goes.
#[operation(namespace = "dynamic", mcp(tool_name = "test_dynamic_tool"))]
async fn dynamic_tool() -> String {
    "here".to_owned()
}

/// A prompt that comes and goes.
#[operation(namespace = "dynamic", mcp(prompt, tool_name = "test_dynamic_prompt"))]
async fn dynamic_prompt() -> String {
    "Say something.".to_owned()
}

/// Adds `T` to the served registry, or removes it when it is there.
fn toggle<T: opkit::TypedOperation>() -> Result<String, CallError> {
    let registry = SERVED
        .get()
        .ok_or_else(|| CallError::unavailable("the registry is not served yet"))?;
    if registry.unregister(T::ID) {
        return Ok("Mutation triggered (removed)".to_owned());
    }
    registry
        .register_typed::<T>()
        .map_err(|error| CallError::execution(error.to_string()))?;
    Ok("Mutation triggered".to_owned())
}

/// Changes the tool list (adds or removes `test_dynamic_tool`).
#[operation(
    namespace = "conformance",
    mutation,
    mcp(tool_name = "test_trigger_tool_change")
)]
async fn trigger_tool_change() -> Result<String, CallError> {
    toggle::<dynamic_tool>()
}

/// Changes the prompt list (adds or removes `test_dynamic_prompt`).
#[operation(
    namespace = "conformance",
    mutation,
    mcp(tool_name = "test_trigger_prompt_change")
)]
async fn trigger_prompt_change() -> Result<String, CallError> {
    toggle::<dynamic_prompt>()
}

/// Reports progress, then completes (the stateless scenario reads its response stream).
#[operation(
    namespace = "conformance",
    mcp(tool_name = "test_streaming_elicitation")
)]
async fn streaming_elicitation(ctx: &OperationContext) -> String {
    ctx.progress(50.0, Some(100.0), Some("half way"));
    "Streaming complete".to_owned()
}

/// Logs once (sent only to a request that asks for logs at its level).
#[operation(namespace = "conformance", mcp(tool_name = "test_logging_tool"))]
async fn logging_tool(ctx: &OperationContext) -> String {
    ctx.log(LogLevel::Info, "Diagnostic trace logging activated");
    "Logging evaluated".to_owned()
}

/// The registry of the conformance tools.
fn registry() -> Result<OperationRegistry, opkit::RegistryError> {
    let registry = OperationRegistry::new();
    registry.register_typed::<simple_text>()?;
    registry.register_typed::<reconnection>()?;
    registry.register_typed::<image_content>()?;
    registry.register_typed::<audio_content>()?;
    registry.register_typed::<embedded_resource>()?;
    registry.register_typed::<multiple_content_types>()?;
    registry.register_typed::<tool_with_logging>()?;
    registry.register_typed::<tool_with_progress>()?;
    registry.register_typed::<error_handling>()?;
    registry.register_typed::<static_text>()?;
    registry.register_typed::<static_binary>()?;
    registry.register_typed::<template_data>()?;
    registry.register_typed::<watched_resource>()?;
    registry.register_typed::<watched_resource_changes>()?;
    registry.register_typed::<simple_prompt>()?;
    registry.register_typed::<prompt_with_arguments>()?;
    registry.register_typed::<prompt_with_embedded_resource>()?;
    registry.register_typed::<prompt_with_image>()?;
    registry.register_typed::<elicitation>()?;
    registry.register_typed::<elicitation_defaults>()?;
    registry.register_typed::<elicitation_enums>()?;
    registry.register_typed::<mrtr_elicitation>()?;
    registry.register_typed::<mrtr_request_state>()?;
    registry.register_typed::<mrtr_tampered_state>()?;
    registry.register_typed::<mrtr_multi_round>()?;
    registry.register_typed::<mrtr_prompt>()?;
    registry.register_typed::<greet>()?;
    registry.register_typed::<trigger_tool_change>()?;
    registry.register_typed::<trigger_prompt_change>()?;
    registry.register_typed::<sampling_tool>()?;
    registry.register_typed::<mrtr_sampling>()?;
    registry.register_typed::<mrtr_list_roots>()?;
    registry.register_typed::<mrtr_multiple_inputs>()?;
    registry.register_typed::<mrtr_capabilities>()?;
    registry.register_typed::<missing_capability>()?;
    registry.register_typed::<streaming_elicitation>()?;
    registry.register_typed::<logging_tool>()?;
    registry.register_typed::<slow_compute>()?;
    registry.register_typed::<failing_job>()?;
    registry.register_typed::<protocol_error_job>()?;
    registry.register_typed::<confirm_delete>()?;
    registry.register_typed::<multi_input>()?;
    registry.register_typed::<test_tool_with_task>()?;
    // A hand-written JSON Schema 2020-12 input, served as it is.
    registry.register(
        OperationSpec::new("conformance", "json_schema_2020_12", OperationKind::Query)
            .description("Tool with JSON Schema 2020-12 features ($schema, $defs, $ref).")
            .input_schema(json!({
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "type": "object",
                "$defs": {
                    "address": {
                        "$anchor": "addressDef",
                        "type": "object",
                        "properties": {"street": {"type": "string"}, "city": {"type": "string"}}
                    }
                },
                "properties": {
                    "name": {"type": "string"},
                    "address": {"$ref": "#/$defs/address"},
                    "contactMethod": {"type": "string", "enum": ["phone", "email"]},
                    "phone": {"type": "string"},
                    "email": {"type": "string"}
                },
                "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
                "if": {
                    "properties": {"contactMethod": {"const": "phone"}},
                    "required": ["contactMethod"]
                },
                "then": {"required": ["phone"]},
                "else": {"required": ["email"]},
                "additionalProperties": false
            }))
            .output_schema(json!({"type": "string"}))
            .mcp_tool_name("json_schema_2020_12_tool"),
        Handler::unary(|input, _ctx| async move {
            Ok(json!(format!(
                "JSON Schema 2020-12 tool called with: {input}"
            )))
        }),
    )?;
    // A parameter also sent as an `Mcp-Param-Region` header (SEP-2243), which the server
    // checks against the body.
    registry.register(
        OperationSpec::new("conformance", "custom_headers", OperationKind::Query)
            .description("Echoes a region that also travels as the Mcp-Param-Region header.")
            .input_schema(json!({
                "type": "object",
                "properties": {
                    "region": {"type": "string", "x-mcp-header": "Region"},
                    "query": {"type": "string"}
                },
                "required": ["region"]
            }))
            .output_schema(json!({"type": "string"}))
            .mcp_tool_name("test_custom_headers"),
        Handler::unary(
            |input, _ctx| async move { Ok(json!(format!("region: {}", input["region"]))) },
        ),
    )?;
    Ok(registry)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut port = 0_u16;
    let mut skills = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--port" => port = args.next().ok_or("--port needs a number")?.parse()?,
            "--skills" => skills = Some(args.next().ok_or("--skills needs a directory")?),
            other => {
                return Err(format!(
                    "unknown argument {other:?} (usage: conformance_server [--port N] [--skills DIR])"
                )
                .into());
            }
        }
    }
    let registry = registry()?;
    let _ = SERVED.set(registry.clone());
    let mut server = McpServer::new(registry)
        .name("opkit-conformance")
        .version("1.0.0");
    if let Some(skills) = skills {
        // One skill held in memory (listed first, so the suite's reads exercise it) beside
        // the directory's.
        let memo = MemorySkill::new(
            "conformance-memo",
            "---\nname: conformance-memo\ndescription: How conformance notes are filed.\n---\n\
             # Filing\n\nFollow references/filing.md.\n",
        )
        .file(
            "references/filing.md",
            "# Filing\n\nOne note per scenario.\n",
        );
        server = server.skills(Skills::new().skill(memo)?.directory(skills)?);
    }
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    // The test harness waits for this line.
    println!("listening on http://{}/mcp", listener.local_addr()?);
    server.serve_http(listener).await?;
    Ok(())
}
