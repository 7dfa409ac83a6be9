//! `#[operation(mcp(task = "after_input"))]` as rmcp's client sees it (2026-07-28, tasks
//! negotiated): the first call asks by an input-required result and makes no task, the call
//! that brings the answer answers with a task that runs on those answers (a question left
//! asks through the task), and a forged `requestState` is refused before any task is made.
#![cfg(all(feature = "mcp", feature = "mcp-server"))]

use crate::serve_support::serve;
use crate::task_client::{Follower, follow, poll};
use opkit::elicit::ElicitRequest;
use opkit::prelude::*;
use opkit_adapters::mcp_server::McpServer;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, InputRequiredResult, InputResponses, UpdateTaskParams,
};
use rmcp::service::{RoleClient, RunningService, ServiceError};
use serde_json::json;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// How many times `rollback` has run (in a request or in a task).
static ROLLBACK_RUNS: AtomicUsize = AtomicUsize::new(0);

/// One text answer to the question `key`.
async fn ask(ctx: &OperationContext, key: &str, message: &str) -> Result<String, CallError> {
    let schema = json!({
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"]
    });
    let answer = ctx
        .elicit_raw(ElicitRequest::new(message, schema).with_key(key))
        .await?;
    Ok(answer
        .content
        .as_ref()
        .and_then(|content| content["text"].as_str())
        .unwrap_or("nobody")
        .to_owned())
}

/// Asks who approves, then (as a task) where to, and deploys.
#[operation(namespace = "jobs", mutation, mcp(task = "after_input"))]
async fn deploy(ctx: &OperationContext) -> Result<String, CallError> {
    let approver = ask(ctx, "approver", "Who approves the deployment?").await?;
    let region = ask(ctx, "region", "Which region?").await?;
    Ok(format!("deployed to {region}, approved by {approver}"))
}

/// Asks who approves, then (as a task) rolls back; counts its runs.
#[operation(namespace = "jobs", mutation, mcp(task = "after_input"))]
async fn rollback(ctx: &OperationContext) -> Result<String, CallError> {
    ROLLBACK_RUNS.fetch_add(1, Ordering::SeqCst);
    let approver = ask(ctx, "approver", "Who approves the rollback?").await?;
    Ok(format!("rolled back, approved by {approver}"))
}

type Client = RunningService<RoleClient, Follower>;

async fn connect() -> (crate::serve_support::Served, Client) {
    let registry = OperationRegistry::new();
    registry.register_typed::<deploy>().unwrap();
    registry.register_typed::<rollback>().unwrap();
    let served = serve(axum::Router::new().nest("/mcp", McpServer::new(registry).router())).await;
    let client = follow(served.url("/mcp")).await;
    (served, client)
}

/// One answer to the question `key`.
fn accepted(key: &str, text: &str) -> InputResponses {
    let mut answers = InputResponses::new();
    answers.insert(
        key.to_owned(),
        json!({"action": "accept", "content": {"text": text}}),
    );
    answers
}

/// The first round of `tool`: the input-required result that asks who approves.
async fn first_round(client: &Client, tool: &'static str) -> InputRequiredResult {
    let answer = client
        .peer()
        .call_tool_once(CallToolRequestParams::new(tool))
        .await
        .expect("tools/call");
    let CallToolResponse::InputRequired(asked) = answer else {
        panic!("the first call asks by an input-required result: {answer:?}");
    };
    let json = serde_json::to_value(&asked).expect("json");
    assert!(json.get("taskId").is_none(), "{json}");
    let requests = asked.input_requests.as_ref().expect("input requests");
    assert_eq!(requests.keys().collect::<Vec<_>>(), ["approver"], "{json}");
    asked
}

#[tokio::test]
async fn the_answers_of_the_rounds_start_the_task_which_asks_the_rest_itself() {
    let (_served, client) = connect().await;
    let asked = first_round(&client, "jobs.deploy").await;

    let retry = CallToolRequestParams::new("jobs.deploy")
        .with_input_responses(accepted("approver", "Ada"))
        .with_request_state(asked.request_state.expect("a request state"));
    let answer = client
        .peer()
        .call_tool_once(retry)
        .await
        .expect("tools/call");
    let CallToolResponse::Task(created) = answer else {
        panic!("the call that brings the answer answers with a task: {answer:?}");
    };
    let json = serde_json::to_value(&created).expect("json");
    assert!(json.get("requestState").is_none(), "{json}");
    assert!(json.get("inputRequests").is_none(), "{json}");
    let id = created.task.task_id.clone();

    // The task ran again from the start: the approver was answered, the region is asked
    // through the task.
    let asking = poll(&client, &id, |task| task["status"] == "input_required").await;
    let questions = asking["inputRequests"].as_object().expect("input requests");
    assert_eq!(questions.keys().collect::<Vec<_>>(), ["region"], "{asking}");
    client
        .peer()
        .update_task(UpdateTaskParams::new(
            id.clone(),
            accepted("region", "eu-west"),
        ))
        .await
        .expect("tasks/update");
    let done = poll(&client, &id, |task| task["status"] == "completed").await;
    assert_eq!(
        done["result"]["content"][0]["text"], "deployed to eu-west, approved by Ada",
        "{done}"
    );
    client.cancel().await.expect("closes");
}

#[tokio::test]
async fn a_forged_request_state_is_refused_and_makes_no_task() {
    let (_served, client) = connect().await;
    let asked = first_round(&client, "jobs.rollback").await;
    let sealed = asked.request_state.expect("a request state");
    // One character in the middle of the sealed state changed.
    let at = sealed.len() / 2;
    let changed = if sealed.as_bytes()[at] == b'A' {
        "B"
    } else {
        "A"
    };
    let forged = format!("{}{changed}{}", &sealed[..at], &sealed[at + 1..]);

    let runs = ROLLBACK_RUNS.load(Ordering::SeqCst);
    let retry = CallToolRequestParams::new("jobs.rollback")
        .with_input_responses(accepted("approver", "Mallory"))
        .with_request_state(forged);
    match client.peer().call_tool_once(retry).await {
        Err(ServiceError::McpError(error)) => {
            assert_eq!(error.code.0, -32602, "{error:?}");
        }
        other => panic!("a forged requestState is invalid params: {other:?}"),
    }
    // No task was made: the operation did not run again.
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(ROLLBACK_RUNS.load(Ordering::SeqCst), runs);
    client.cancel().await.expect("closes");
}
