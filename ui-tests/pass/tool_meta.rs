use opkit::prelude::*;

/// Notes, with an app view for hosts that show one.
#[operation(
    namespace = "notes",
    mcp(tool_meta = r#"{"ui": {"resourceUri": "ui://notes/list"}}"#),
)]
async fn list() -> Vec<String> {
    Vec::new()
}

fn main() {
    let spec = list::spec();
    assert_eq!(
        spec.edges["mcp"]["tool_meta"],
        serde_json::json!({"ui": {"resourceUri": "ui://notes/list"}})
    );
}
