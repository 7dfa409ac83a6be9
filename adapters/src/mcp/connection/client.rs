//! [`Client`]: the rmcp client of one connection — its peer, the `tools/list` paging and
//! the `subscriptions/listen` stream that reports tool list changes in the 2026-07-28 era.
//! Calling a tool is in `call.rs`.

use super::error::McpError;
use super::events::Events;
use rmcp::model::{
    ClientRequest, CustomResult, ListPromptsRequest, ListResourceTemplatesRequest,
    ListResourcesRequest, ListToolsRequest, PaginatedRequestParams, ServerNotification,
    ServerResult, SubscriptionFilter,
};
use rmcp::service::RunningService;
use rmcp::{Peer, RoleClient};
use serde_json::Value;
use std::collections::HashSet;

/// Pages of `tools/list` followed before giving up (a server that never ends its listing).
const MAX_LIST_PAGES: usize = 1000;

/// The rmcp client of one connection; shared by the connection and its operations.
pub(super) struct Client {
    pub service: RunningService<RoleClient, Events>,
    pub label: String,
    pub pid: Option<u32>,
    pub parse_json_text: bool,
}

impl Client {
    pub(super) fn peer(&self) -> &Peer<RoleClient> {
        self.service.peer()
    }

    /// In the 2026-07-28 era a server sends `tools/list_changed` only on a
    /// `subscriptions/listen` stream: open one (when the server announces `listChanged`) and
    /// count its notifications like the legacy ones. Legacy servers send them unasked.
    pub(super) fn listen_for_list_changes(&self) {
        let Some(info) = self.peer().peer_info() else {
            return;
        };
        let capabilities = &info.capabilities;
        let tools = capabilities
            .tools
            .as_ref()
            .and_then(|tools| tools.list_changed)
            .unwrap_or(false);
        let resources = capabilities
            .resources
            .as_ref()
            .and_then(|resources| resources.list_changed)
            .unwrap_or(false);
        let prompts = capabilities
            .prompts
            .as_ref()
            .and_then(|prompts| prompts.list_changed)
            .unwrap_or(false);
        if info.protocol_version.has_initialize() || !(tools || resources || prompts) {
            return;
        }
        let peer = self.peer().clone();
        let counter = self.service.service().list_changed.clone();
        let label = self.label.clone();
        tokio::spawn(async move {
            let mut filter = SubscriptionFilter::builder();
            if tools {
                filter = filter.tools_list_changed();
            }
            if resources {
                filter = filter.resources_list_changed();
            }
            if prompts {
                filter = filter.prompts_list_changed();
            }
            let filter = filter.build();
            let mut subscription = match peer.listen(filter).await {
                Ok(subscription) => subscription,
                Err(error) => {
                    tracing::debug!(target: "opkit_adapters::mcp", server = %label, %error,
                        "subscriptions/listen failed; list changes will not be noticed");
                    return;
                }
            };
            // Ends with the subscription, at the latest when the connection closes.
            while let Ok(Some(notification)) = subscription.next().await {
                if matches!(
                    notification,
                    ServerNotification::ToolListChangedNotification(_)
                        | ServerNotification::ResourceListChangedNotification(_)
                        | ServerNotification::PromptListChangedNotification(_)
                ) {
                    tracing::debug!(target: "opkit_adapters::mcp", server = %label, "list_changed (listen)");
                    counter.send_modify(|count| *count += 1);
                }
            }
        });
    }

    /// Every tool of the server as raw JSON, following `nextCursor`.
    pub(super) async fn list_tools(&self) -> Result<Vec<Value>, McpError> {
        self.list_all("tools/list", "tools").await
    }

    /// Every item of a paged list (`tools/list`, `resources/list`,
    /// `resources/templates/list`, `prompts/list`) as raw JSON, the items under `key`,
    /// following `nextCursor`.
    pub(super) async fn list_all(&self, method: &str, key: &str) -> Result<Vec<Value>, McpError> {
        let failed = |message: String| McpError::Request {
            label: self.label.clone(),
            message,
        };
        let mut tools = Vec::new();
        let mut cursor: Option<String> = None;
        let mut seen: HashSet<String> = HashSet::new();
        for _page in 0..MAX_LIST_PAGES {
            let params = PaginatedRequestParams::default().with_cursor(cursor.take());
            let request = match method {
                "resources/list" => {
                    ClientRequest::ListResourcesRequest(ListResourcesRequest::with_param(params))
                }
                "resources/templates/list" => ClientRequest::ListResourceTemplatesRequest(
                    ListResourceTemplatesRequest::with_param(params),
                ),
                "prompts/list" => {
                    ClientRequest::ListPromptsRequest(ListPromptsRequest::with_param(params))
                }
                _ => ClientRequest::ListToolsRequest(ListToolsRequest::with_param(params)),
            };
            let result = self
                .peer()
                .send_request(request)
                .await
                .map_err(|error| failed(format!("{method}: {error}")))?;
            let page = match result {
                ServerResult::CustomResult(CustomResult(raw)) => raw,
                ServerResult::EmptyResult(_) => Value::Null,
                result => serde_json::to_value(result)
                    .map_err(|error| failed(format!("{method}: {error}")))?,
            };
            let Some(listed) = page.get(key).and_then(Value::as_array) else {
                return Err(failed(format!("{method}: no `{key}` array in {page}")));
            };
            tools.extend(listed.iter().cloned());
            match page.get("nextCursor") {
                Some(Value::String(next)) => {
                    if !seen.insert(next.clone()) {
                        return Err(failed(format!(
                            "tools/list: the server repeated the cursor {next:?}"
                        )));
                    }
                    cursor = Some(next.clone());
                }
                _ => return Ok(tools),
            }
        }
        Err(failed(format!(
            "{method}: more than {MAX_LIST_PAGES} pages"
        )))
    }
}
