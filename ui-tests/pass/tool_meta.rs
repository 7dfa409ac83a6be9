use opkit::prelude::*;

/// Notes, with an app view for hosts that show one.
#[operation(
    namespace = "notes",
    tool_meta = r#"{"ui": {"resourceUri": "ui://notes/list"}}"#
)]
async fn list() -> Vec<String> {
    Vec::new()
}

fn main() {
    let spec = list::spec();
    assert_eq!(
        spec.extensions[opkit::OperationSpec::EXT_TOOL_META],
        serde_json::json!({"ui": {"resourceUri": "ui://notes/list"}})
    );
}
