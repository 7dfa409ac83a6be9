//! Refreshing: re-listing the tools and bringing every registry the operations were
//! registered into up to date, on demand or on each `tools/list_changed`.

use super::State;
use super::error::McpError;
use super::imported::{ImportedTool, build_tools, tool_handler};
use std::collections::HashMap;
use std::sync::Weak;
use tokio::sync::watch;

/// What a [`McpConnection::refresh`](super::McpConnection::refresh) changed, by operation id.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RefreshReport {
    /// Operations of new tools.
    pub added: Vec<String>,
    /// Operations of tools that are gone.
    pub removed: Vec<String>,
    /// Operations whose tool definition changed (re-registered).
    pub changed: Vec<String>,
}

impl RefreshReport {
    /// `true` when nothing changed.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty()
    }
}

pub(super) async fn refresh_state(state: &State) -> Result<RefreshReport, McpError> {
    let _one_at_a_time = state.refresh_lock.lock().await;
    let raw = state.client.list_tools().await?;
    let old: Vec<ImportedTool> = state.tools.read().clone();
    let previous: HashMap<String, String> = old
        .iter()
        .map(|tool| (tool.tool_name.clone(), tool.spec.name.clone()))
        .collect();
    let new = build_tools(&state.namespace, &state.client.label, &raw, &previous);
    let old_by_id: HashMap<String, &ImportedTool> =
        old.iter().map(|tool| (tool.spec.id(), tool)).collect();
    let new_by_id: HashMap<String, &ImportedTool> =
        new.iter().map(|tool| (tool.spec.id(), tool)).collect();
    let mut report = RefreshReport::default();
    for id in old_by_id.keys() {
        if !new_by_id.contains_key(id) {
            report.removed.push(id.clone());
        }
    }
    for (id, tool) in &new_by_id {
        match old_by_id.get(id) {
            None => report.added.push(id.clone()),
            Some(before) if before.spec != tool.spec => report.changed.push(id.clone()),
            Some(_) => {}
        }
    }
    report.added.sort();
    report.removed.sort();
    report.changed.sort();
    let registries = state.registries.lock().clone();
    for registry in &registries {
        for id in report.removed.iter().chain(&report.changed) {
            registry.unregister(id);
        }
        for id in report.added.iter().chain(&report.changed) {
            let tool = new_by_id[id];
            if let Err(error) =
                registry.register(tool.spec.clone(), tool_handler(&state.client, tool))
            {
                tracing::warn!(target: "opkit_adapters::mcp", server = %state.client.label, %error,
                    "refresh could not register an operation");
            }
        }
    }
    *state.tools.write() = new;
    Ok(report)
}

/// Refreshes on every `list_changed` until the connection is gone.
pub(super) fn spawn_auto_refresh(state: Weak<State>, mut changes: watch::Receiver<u64>) {
    tokio::spawn(async move {
        // Ends when the client (the sender) is dropped or the connection state is gone.
        while changes.changed().await.is_ok() {
            let Some(state) = state.upgrade() else { break };
            if let Err(error) = refresh_state(&state).await {
                tracing::warn!(target: "opkit_adapters::mcp", server = %state.client.label, %error,
                    "refresh after notifications/tools/list_changed failed");
            }
        }
    });
}
