//! Refreshing: re-listing the tools, resources, resource templates and prompts and bringing
//! every registry the operations were registered into up to date, on demand or on each
//! `notifications/{tools,resources,prompts}/list_changed`.

use super::State;
use super::catalog::{self, Imported};
use super::error::McpError;
use super::imported::{ImportedTool, build_tools, tool_handler};
use opkit::{Handler, OperationSpec};
use std::collections::HashMap;
use std::sync::Weak;
use tokio::sync::watch;

/// What a [`McpConnection::refresh`](super::McpConnection::refresh) changed, by operation id.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RefreshReport {
    /// Operations of new tools, resources, templates and prompts.
    pub added: Vec<String>,
    /// Operations of ones that are gone.
    pub removed: Vec<String>,
    /// Operations whose definition changed (re-registered).
    pub changed: Vec<String>,
}

impl RefreshReport {
    /// `true` when nothing changed.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty()
    }
}

/// One imported operation: a tool, or a resource, template or prompt.
enum Entry<'a> {
    Tool(&'a ImportedTool),
    Extra(&'a Imported),
}

impl Entry<'_> {
    fn spec(&self) -> &OperationSpec {
        match self {
            Entry::Tool(tool) => &tool.spec,
            Entry::Extra(item) => &item.spec,
        }
    }

    fn handler(&self, state: &State) -> Handler {
        match self {
            Entry::Tool(tool) => tool_handler(&state.client, tool),
            Entry::Extra(item) => catalog::handler(&state.client, item),
        }
    }
}

fn by_id<'a>(tools: &'a [ImportedTool], extras: &'a [Imported]) -> HashMap<String, Entry<'a>> {
    tools
        .iter()
        .map(Entry::Tool)
        .chain(extras.iter().map(Entry::Extra))
        .map(|entry| (entry.spec().id(), entry))
        .collect()
}

pub(super) async fn refresh_state(state: &State) -> Result<RefreshReport, McpError> {
    let _one_at_a_time = state.refresh_lock.lock().await;
    let raw = state.client.list_tools().await?;
    let old: Vec<ImportedTool> = state.tools.read().clone();
    let old_extras: Vec<Imported> = state.extras.read().clone();
    let previous: HashMap<String, String> = old
        .iter()
        .map(|tool| (tool.tool_name.clone(), tool.spec.name.clone()))
        .collect();
    let mut new = build_tools(&state.namespace, &state.client.label, &raw, &previous);
    let mut new_extras = match catalog::list(&state.client, &state.namespace).await {
        Ok(extras) => extras,
        Err(error) => {
            tracing::warn!(target: "opkit_adapters::mcp", server = %state.client.label, %error,
                "the server's resources or prompts could not be listed again; their operations stay as they were");
            old_extras.clone()
        }
    };
    super::imported::govern(
        &state.namespace,
        &state.access,
        new.iter_mut()
            .map(|tool| &mut tool.spec)
            .chain(new_extras.iter_mut().map(|item| &mut item.spec)),
    );
    let old_by_id = by_id(&old, &old_extras);
    let new_by_id = by_id(&new, &new_extras);
    let mut report = RefreshReport::default();
    for id in old_by_id.keys() {
        if !new_by_id.contains_key(id) {
            report.removed.push(id.clone());
        }
    }
    for (id, entry) in &new_by_id {
        match old_by_id.get(id) {
            None => report.added.push(id.clone()),
            Some(before) if before.spec() != entry.spec() => report.changed.push(id.clone()),
            Some(_) => {}
        }
    }
    report.added.sort();
    report.removed.sort();
    report.changed.sort();
    let registries = state.registries.lock().clone();
    for registry in &registries {
        for id in &report.removed {
            registry.unregister(id);
        }
        // A changed operation is replaced in one step: a call finds the old or the new one.
        for id in report.added.iter().chain(&report.changed) {
            let entry = &new_by_id[id];
            if let Err(error) = registry.replace(entry.spec().clone(), entry.handler(state)) {
                tracing::warn!(target: "opkit_adapters::mcp", server = %state.client.label, %error,
                    "refresh could not register an operation");
            }
        }
    }
    *state.tools.write() = new;
    *state.extras.write() = new_extras;
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
                    "refresh after a list_changed notification failed");
            }
        }
    });
}
