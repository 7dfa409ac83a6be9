//! `resource = ".."` and `prompt` make an operation an MCP resource (template) or prompt.
use opkit::prelude::*;
use opkit::envelope::PromptMessage;

/// One note.
#[operation(namespace = "notes", mcp(resource = "notes://{id}"))]
async fn get(id: u32) -> String {
    format!("note {id}")
}

/// The changes of one note.
#[operation(namespace = "notes", subscription, mcp(resource = "notes://{id}"))]
fn watch(id: u32) -> impl futures::Stream<Item = u32> + Send + 'static {
    futures::stream::iter([id])
}

/// Summarize my notes.
#[operation(namespace = "notes", mcp(prompt, complete(topic = "notes.topics")))]
async fn summarize(
    /// How long the summary may be.
    words: Option<u32>,
    /// What the notes are about.
    topic: Option<String>,
) -> Vec<PromptMessage> {
    let _ = topic;
    vec![PromptMessage::user(format!("Summarize my notes in {} words.", words.unwrap_or(50)))]
}

/// A long job: a task for clients that follow tasks.
#[operation(namespace = "jobs", mutation, mcp(task))]
async fn rebuild() -> String {
    "rebuilt".to_owned()
}

/// A job only a task can run.
#[operation(namespace = "jobs", mutation, mcp(task = "required"))]
async fn migrate() -> String {
    "migrated".to_owned()
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Approval {
    approver: String,
}

/// A job that asks who approves it, then runs as a task.
#[operation(namespace = "jobs", mutation, mcp(task = "after_input"))]
async fn deploy(ctx: &OperationContext, target: String) -> Result<String, CallError> {
    let approver = match ctx.elicit::<Approval>("Who approves the deployment?").await? {
        opkit::elicit::Elicited::Accepted(approval) => approval.approver,
        _ => return Err(CallError::aborted("not approved")),
    };
    Ok(format!("{target} deployed, approved by {approver}"))
}

fn main() {
    assert_eq!(rebuild::spec().edges["mcp"]["task"], "optional");
    assert_eq!(migrate::spec().edges["mcp"]["task"], "required");
    assert_eq!(deploy::spec().edges["mcp"]["task"], "after_input");
    assert_eq!(get::spec().edges["mcp"]["resource"], "notes://{id}");
    assert_eq!(watch::spec().kind, OperationKind::Subscription);
    assert_eq!(summarize::spec().edges["mcp"]["prompt"], true);
    assert_eq!(
        summarize::spec().edges["mcp"]["complete"]["topic"],
        "notes.topics"
    );
}
