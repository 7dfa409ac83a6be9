//! Edge groups: opkit's own (`mcp(..)`, `http(..)`), an option the macro does not know
//! inside one of them (carried for the edge), and an edge of the application's, all
//! readable from the spec. And the flat MCP keys of earlier versions still compile (with a
//! deprecation warning).
#![allow(deprecated)]

use opkit::prelude::*;

/// Reads a note.
#[operation(
    namespace = "notes",
    mcp(resource = "notes://{id}", mime_type = "text/markdown"),
    http(method = "GET", path = "/notes/{id}"),
    grpc(method = "GetNote", stream, retries = 3)
)]
async fn read(id: i64) -> i64 {
    id
}

#[operation(namespace = "notes", prompt, tool_name = "summarize_notes")]
async fn summarize() -> String {
    String::new()
}

fn main() {
    let spec = read::spec();
    assert_eq!(spec.edges["mcp"]["resource"], "notes://{id}");
    assert_eq!(spec.edges["mcp"]["mime_type"], "text/markdown");
    assert_eq!(spec.edges["http"]["path"], "/notes/{id}");
    assert_eq!(spec.edges["grpc"]["method"], "GetNote");
    assert_eq!(spec.edges["grpc"]["stream"], true);
    assert_eq!(spec.edges["grpc"]["retries"], 3);
    let spec = summarize::spec();
    assert_eq!(spec.edges["mcp"]["prompt"], true);
    assert_eq!(spec.edges["mcp"]["tool_name"], "summarize_notes");
}
