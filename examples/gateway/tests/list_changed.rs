//! An MCP source that announces `list_changed` is refreshed by itself: a tool the official
//! Python SDK's server adds at run time (over Streamable HTTP) becomes an operation of the
//! gateway, callable with `curl`, with no signal.

mod support;

use serde_json::json;
use std::time::Duration;
use support::{ANN_KEY, GatewayProcess, curl_post};

fn config(url: &str) -> String {
    format!(
        r#"[sign_in]
api_keys = [{{ id = "ann", key = {{ env = "GW_TEST_ANN_KEY" }}, scopes = ["py"] }}]

[[sources]]
namespace = "py"
mcp_url = "{url}"

[[rules]]
namespace = "py"
scopes = ["py"]
"#
    )
}

#[test]
fn a_tool_added_at_run_time_is_served_after_list_changed() {
    let python = opkit_testkit::peers::start_python_mcp_http();
    let gateway = GatewayProcess::start(&config(&python.mcp_url()), &support::env());

    let late = gateway.op_url("py.late_tool");
    let (status, _) = curl_post(&late, Some(ANN_KEY), &json!({"text": "early"}));
    assert_eq!(status, 404, "the tool is not there yet");

    let (status, reply) = curl_post(
        &gateway.op_url("py.add_tool"),
        Some(ANN_KEY),
        &json!({"name": "late_tool"}),
    );
    assert_eq!(status, 200, "{reply}");

    // The refresh follows the server's notification: wait for it (at most 600 polls).
    let mut answer = None;
    for _ in 0..600 {
        let (status, reply) = curl_post(&late, Some(ANN_KEY), &json!({"text": "late"}));
        if status != 404 {
            answer = Some((status, reply));
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let (status, reply) = answer.expect("the added tool is served after list_changed");
    assert_eq!(status, 200, "{reply}");
    assert!(reply["data"].to_string().contains("late"), "{reply}");
}
