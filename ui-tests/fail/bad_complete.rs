use opkit::prelude::*;

/// A tool has no arguments to complete.
#[operation(namespace = "notes", mcp(complete(topic = "notes.topics")))]
async fn search(topic: String) -> String {
    topic
}

/// The completer is not an operation id.
#[operation(namespace = "notes", mcp(prompt, complete(topic = "topics")))]
async fn summarize(topic: String) -> String {
    topic
}

/// The argument is not an input.
#[operation(namespace = "notes", mcp(resource = "notes://{id}", complete(title = "notes.titles")))]
async fn get(id: u32) -> String {
    id.to_string()
}

/// Not `argument = "query"`.
#[operation(namespace = "notes", mcp(prompt, complete("notes.topics")))]
async fn draft(topic: String) -> String {
    topic
}

fn main() {}
