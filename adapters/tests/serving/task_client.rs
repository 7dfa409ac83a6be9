//! rmcp's client as the task tests use it: a 2026-07-28 client that follows tasks and can
//! be asked questions ([`Follower`]), and polling a task until it gets somewhere.
#![cfg(all(feature = "mcp", feature = "mcp-server"))]

use rmcp::ClientHandler;
use rmcp::model::{
    ClientCapabilities, ClientConfig, ElicitationCapability, GetTaskParams, ProtocolVersion,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use serde_json::Value;
use std::time::Duration;

/// A 2026-07-28 client that follows tasks and can be asked questions.
#[derive(Clone)]
pub(crate) struct Follower;

impl ClientHandler for Follower {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::builder().enable_tasks().build();
        capabilities.elicitation = Some(ElicitationCapability::default());
        let mut config = ClientConfig::default();
        config.protocol_version = ProtocolVersion::V_2026_07_28;
        config.capabilities = capabilities;
        config
    }
}

/// A [`Follower`] at `url`, negotiating 2026-07-28 through `server/discover`.
pub(crate) async fn follow(url: String) -> RunningService<RoleClient, Follower> {
    discover(Follower, url).await
}

/// rmcp's client with `handler` at `url`, negotiating 2026-07-28 through `server/discover`.
pub(crate) async fn discover<H: ClientHandler>(
    handler: H,
    url: String,
) -> RunningService<RoleClient, H> {
    handler
        .serve_with_lifecycle(
            StreamableHttpClientTransport::from_uri(url),
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        )
        .await
        .expect("connects")
}

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
