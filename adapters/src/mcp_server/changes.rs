//! Telling clients what changed: list-changed notifications when the registry's tools,
//! prompts or resources change, and the 2026-07-28 `subscriptions/listen` stream.
//!
//! - A client before 2026-07-28 gets `notifications/{tools,prompts,resources}/list_changed`
//!   on its session from the moment it is initialized until the session ends.
//! - A 2026-07-28 client opens a `subscriptions/listen` request naming what it wants: the
//!   list changes, and resource URIs whose updates it follows (each backed by the
//!   subscription operation with that URI, as `resources/subscribe` is for older clients).
//!   The stream lasts until the client cancels it.
//!
//! A change is noticed with [`OperationRegistry::changed_since`](opkit::OperationRegistry::changed_since)
//! and compared by name, so a registration that changes no name served sends nothing.

use super::names::ToolNames;
use super::session::McpHandler;
use futures::StreamExt;
use opkit::middleware::Outcome;
use rmcp::ErrorData as McpError;
use rmcp::model::SubscriptionFilter;
use rmcp::service::{Peer, RoleServer, SubscriptionContext, SubscriptionSink};
use std::collections::BTreeSet;

/// The names a client sees in each list.
#[derive(Debug, Default, PartialEq, Eq)]
struct Listing {
    tools: BTreeSet<String>,
    prompts: BTreeSet<String>,
    resources: BTreeSet<String>,
}

impl Listing {
    fn of(names: &ToolNames) -> Self {
        let catalog = &names.catalog;
        Self {
            tools: names
                .starting_at("")
                .map(|(_, tool, _)| tool.to_owned())
                .collect(),
            prompts: catalog.prompts.keys().cloned().collect(),
            resources: catalog
                .resources
                .iter()
                .chain(&catalog.templates)
                .map(|entry| entry.template.as_str().to_owned())
                .collect(),
        }
    }
}

/// Where list-changed notifications go.
enum Target {
    Session(Peer<RoleServer>),
    Listen(SubscriptionSink),
}

impl Target {
    /// Sends what differs between `before` and `after`; `false` once the client is gone.
    async fn send(&self, before: &Listing, after: &Listing) -> bool {
        let tools = before.tools != after.tools;
        let prompts = before.prompts != after.prompts;
        let resources = before.resources != after.resources;
        match self {
            Self::Session(peer) => {
                (!tools || peer.notify_tool_list_changed().await.is_ok())
                    && (!prompts || peer.notify_prompt_list_changed().await.is_ok())
                    && (!resources || peer.notify_resource_list_changed().await.is_ok())
            }
            Self::Listen(sink) => {
                let accepted = sink.accepted();
                let wants = |flag: Option<bool>| flag == Some(true);
                (!(tools && wants(accepted.tools_list_changed))
                    || sink.notify_tool_list_changed().await.is_ok())
                    && (!(prompts && wants(accepted.prompts_list_changed))
                        || sink.notify_prompt_list_changed().await.is_ok())
                    && (!(resources && wants(accepted.resources_list_changed))
                        || sink.notify_resource_list_changed().await.is_ok())
            }
        }
    }
}

impl McpHandler {
    /// Sends `target` the list changes until `stop` resolves or the client is gone.
    async fn follow_lists(&self, target: Target, stop: impl std::future::Future<Output = ()>) {
        let registry = &self.inner.registry;
        let mut seen = registry.revision();
        let mut listing = match self.catalog() {
            Ok(names) => Listing::of(&names),
            Err(_) => Listing::default(),
        };
        let mut stop = std::pin::pin!(stop);
        loop {
            tokio::select! {
                () = &mut stop => return,
                now = registry.changed_since(seen) => seen = now,
            }
            let Ok(names) = self.catalog() else { continue };
            let next = Listing::of(&names);
            if next != listing && !target.send(&listing, &next).await {
                return;
            }
            listing = next;
        }
    }

    /// Starts the list-changed notifications of a session before 2026-07-28 (until the
    /// session's handler is dropped).
    pub(super) fn notify_lists(&self, peer: Peer<RoleServer>) {
        let handler = self.clone();
        let closed = self.watches.closed.clone();
        tokio::spawn(async move {
            handler
                .follow_lists(Target::Session(peer), closed.cancelled_owned())
                .await;
        });
    }

    /// What a `subscriptions/listen` request gets of what it asks for: every list change,
    /// and the resource URIs the server has.
    pub(super) fn filter(&self, requested: &SubscriptionFilter) -> Option<SubscriptionFilter> {
        let names = self.catalog().ok()?;
        let mut accepted = requested.clone();
        if let Some(uris) = accepted.resource_subscriptions.as_mut() {
            uris.retain(|uri| {
                names.catalog.watcher(uri).is_some() || names.catalog.reader(uri).is_some()
            });
        }
        Some(accepted)
    }

    /// Serves one `subscriptions/listen` stream until the client cancels it.
    pub(super) async fn listen_to(
        &self,
        subscription: SubscriptionContext,
    ) -> Result<(), McpError> {
        let sink = subscription.sink().clone();
        let uris = sink
            .accepted()
            .resource_subscriptions
            .clone()
            .unwrap_or_default();
        let mut watchers = Vec::new();
        for uri in uris {
            if let Some(watcher) = self
                .watch_for_listen(&uri, &subscription, sink.clone())
                .await?
            {
                watchers.push(watcher);
            }
        }
        self.follow_lists(Target::Listen(sink), subscription.cancelled())
            .await;
        for watcher in watchers {
            watcher.abort();
        }
        Ok(())
    }

    /// Starts the subscription operation that reports changes of `uri` for a listen stream.
    async fn watch_for_listen(
        &self,
        uri: &str,
        subscription: &SubscriptionContext,
        sink: SubscriptionSink,
    ) -> Result<Option<tokio::task::JoinHandle<()>>, McpError> {
        let names = self.catalog()?;
        let Some((entry, input)) = names.catalog.watcher(uri) else {
            return Ok(None);
        };
        let context = subscription.request_context();
        let outcome = self.serve_watcher(entry, input, context, None).await?;
        let Ok(Outcome::Stream(mut items)) = outcome else {
            return Ok(None);
        };
        let uri = uri.to_owned();
        Ok(Some(tokio::spawn(async move {
            while let Some(Ok(_)) = items.next().await {
                if sink.notify_resource_updated(uri.clone()).await.is_err() {
                    break;
                }
            }
        })))
    }
}
