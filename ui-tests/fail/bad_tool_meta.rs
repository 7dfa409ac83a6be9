use opkit::prelude::*;

#[operation(namespace = "notes", mcp(tool_meta = r#"["ui://notes/list"]"#))]
async fn list() -> Vec<String> {
    Vec::new()
}

fn main() {}
