//! Polling an MCP task with rmcp's client until it gets somewhere, for the task tests.

use rmcp::ClientHandler;
use rmcp::model::GetTaskParams;
use rmcp::service::{RoleClient, RunningService};
use serde_json::Value;
use std::time::Duration;

/// Polls `tasks/get` until `done` holds of the task's JSON (at most 400 times, 25 ms apart).
pub(crate) async fn poll<H: ClientHandler>(
    client: &RunningService<RoleClient, H>,
    id: &str,
    done: impl Fn(&Value) -> bool,
) -> Value {
    for _ in 0..400 {
        let task = client
            .peer()
            .get_task(GetTaskParams::new(id))
            .await
            .expect("tasks/get");
        let task = serde_json::to_value(task).expect("json");
        if done(&task) {
            return task;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("the task {id} did not get there");
}
