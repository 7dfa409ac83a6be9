//! Resources, resource templates, prompts, completion and elicitation from `#[operation]`s,
//! as the official SDK clients see them: the TypeScript SDK client
//! (`peers/conformance/ts_surface.mjs`, protocol 2025-11-25: the question comes in the call)
//! and the Python SDK client (`peers/serve/mcp_surface.py`, protocol 2026-07-28: the question
//! comes as an input-required result, and the client calls again with the answer).
#![cfg(feature = "mcp-server")]

use crate::serve_support;

use opkit::elicit::Elicited;
use opkit::prelude::*;
use opkit_adapters::mcp_server::{McpServer, McpSpec};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use serve_support::{node_report, python_report, serve};
use std::time::Duration;

/// A shelf of the library.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, JsonSchema)]
enum Shelf {
    Fiction,
    History,
    Science,
}

/// The books on one shelf.
#[operation(namespace = "books", mcp(resource = "books://{shelf}"))]
async fn on_shelf(shelf: Shelf) -> Vec<String> {
    match shelf {
        Shelf::Fiction => vec!["Dune".to_owned()],
        Shelf::History => vec!["SPQR".to_owned(), "The Guns of August".to_owned()],
        Shelf::Science => vec!["Cosmos".to_owned()],
    }
}

/// What the library is.
#[operation(
    namespace = "books",
    mcp(resource = "books://about", title = "About the library")
)]
async fn about() -> String {
    "A small library.".to_owned()
}

/// Ask for a recommendation from one shelf, like a book the user names.
#[operation(
    namespace = "books",
    mcp(
        prompt,
        title = "Recommend a book",
        tool_meta = r#"{"ui": {"icon": "book"}}"#,
        complete(like = "books.titles")
    )
)]
async fn recommend(
    /// The shelf to pick from.
    shelf: Shelf,
    /// A book the user liked.
    like: Option<String>,
) -> String {
    match like {
        Some(like) => format!("Recommend one book from the {shelf:?} shelf, like {like}."),
        None => format!("Recommend one book from the {shelf:?} shelf."),
    }
}

/// The titles starting with what was typed (ignoring case), from the shelf already chosen
/// when there is one: the completer of `recommend`'s `like`.
#[operation(namespace = "books")]
async fn titles(
    value: String,
    arguments: std::collections::HashMap<String, String>,
) -> Vec<String> {
    let shelves = match arguments.get("shelf").map(String::as_str) {
        Some("Fiction") => vec![Shelf::Fiction],
        Some("History") => vec![Shelf::History],
        Some("Science") => vec![Shelf::Science],
        _ => vec![Shelf::Fiction, Shelf::History, Shelf::Science],
    };
    let typed = value.to_lowercase();
    let mut found = Vec::new();
    for shelf in shelves {
        found.extend(
            on_shelf(shelf)
                .await
                .into_iter()
                .filter(|title| title.to_lowercase().starts_with(&typed)),
        );
    }
    found
}

/// The answer to "burn it?".
#[derive(Deserialize, JsonSchema)]
struct Confirm {
    /// Burn the book.
    confirm: bool,
}

/// Burns a book, once the user confirms.
#[operation(namespace = "books", mutation)]
async fn burn(ctx: &OperationContext, title: String) -> Result<String, CallError> {
    match ctx.elicit::<Confirm>(format!("Burn {title:?}?")).await? {
        Elicited::Accepted(Confirm { confirm: true }) => Ok(format!("burned {title}")),
        _ => Ok(format!("kept {title}")),
    }
}

fn library() -> OperationRegistry {
    let registry = OperationRegistry::new();
    registry.register_typed::<on_shelf>().unwrap();
    registry.register_typed::<about>().unwrap();
    registry.register_typed::<recommend>().unwrap();
    registry.register_typed::<titles>().unwrap();
    registry.register_typed::<burn>().unwrap();
    registry
}

fn plan() -> Value {
    json!({
        "read": "books://History",
        "prompt": {"name": "books.recommend", "arguments": {"shelf": "Science"}},
        "complete": [
            {
                "ref": {"type": "ref/resource", "uri": "books://{shelf}"},
                "argument": {"name": "shelf", "value": "hi"}
            },
            {
                "ref": {"type": "ref/prompt", "name": "books.recommend"},
                "argument": {"name": "like", "value": "the"},
                "context": {"arguments": {"shelf": "History"}}
            },
            {
                "ref": {"type": "ref/prompt", "name": "books.recommend"},
                "argument": {"name": "like", "value": "c"}
            }
        ],
        "answer": {"confirm": true},
        "calls": [{"name": "books.burn", "arguments": {"title": "Dune"}}]
    })
}

/// The checks both clients' reports pass.
fn check(report: &Value, client: &str) {
    let uris: Vec<&Value> = report["resources"]["resources"]
        .as_array()
        .unwrap_or_else(|| panic!("{client}: no resources: {report}"))
        .iter()
        .map(|resource| &resource["uri"])
        .collect();
    assert_eq!(uris, [&json!("books://about")], "{client}");
    assert_eq!(
        report["resources"]["resources"][0]["title"], "About the library",
        "{client}: {report}"
    );
    assert_eq!(
        report["templates"]["resourceTemplates"][0]["uriTemplate"], "books://{shelf}",
        "{client}: {report}"
    );
    let contents = &report["read"]["contents"][0];
    assert_eq!(contents["uri"], "books://History", "{client}: {report}");
    assert_eq!(contents["mimeType"], "application/json");
    let books: Value = serde_json::from_str(contents["text"].as_str().unwrap_or("null")).unwrap();
    assert_eq!(books, json!(["SPQR", "The Guns of August"]), "{client}");
    let prompt = &report["prompts"]["prompts"][0];
    assert_eq!(prompt["name"], "books.recommend", "{client}: {report}");
    assert_eq!(prompt["title"], "Recommend a book", "{client}: {prompt}");
    assert_eq!(prompt["_meta"]["ui"]["icon"], "book", "{client}: {prompt}");
    let arguments: Vec<(&Value, &Value)> = prompt["arguments"]
        .as_array()
        .unwrap_or_else(|| panic!("{client}: no arguments: {prompt}"))
        .iter()
        .map(|argument| (&argument["name"], &argument["required"]))
        .collect();
    assert_eq!(
        arguments,
        [
            (&json!("like"), &json!(false)),
            (&json!("shelf"), &json!(true))
        ],
        "{client}: {prompt}"
    );
    assert_eq!(
        report["prompt"]["messages"][0]["content"]["text"],
        "Recommend one book from the Science shelf.",
        "{client}: {report}"
    );
    assert_eq!(
        report["completion"]["completion"]["values"],
        json!(["History"]),
        "{client}: {report}"
    );
    // `like` is completed by `books.titles`, with the shelf already chosen, or from every
    // shelf when none is.
    assert_eq!(
        report["completion2"]["completion"]["values"],
        json!(["The Guns of August"]),
        "{client}: {report}"
    );
    assert_eq!(
        report["completion3"]["completion"]["values"],
        json!(["Cosmos"]),
        "{client}: {report}"
    );
    assert_eq!(report["completion3"]["completion"]["total"], 1, "{client}");
    let questions = report["questions"].as_array().expect("questions");
    assert_eq!(questions.len(), 1, "{client}: asked once: {report}");
    assert_eq!(questions[0]["message"], "Burn \"Dune\"?");
    assert_eq!(
        questions[0]["requestedSchema"]["properties"]["confirm"]["type"], "boolean",
        "{client}"
    );
    let call = &report["calls"][0];
    assert!(call.get("error").is_none(), "{client}: {call}");
    assert_eq!(
        call["result"]["content"][0]["text"], "burned Dune",
        "{client}: {call}"
    );
}

#[tokio::test]
async fn the_typescript_sdk_client_reads_prompts_completes_and_answers_a_question() {
    let served = serve(axum::Router::new().nest("/mcp", McpServer::new(library()).router())).await;
    let (report, _) = node_report(
        "ts_surface.mjs",
        &[&served.url("/mcp"), &plan().to_string()],
    )
    .await;
    assert_eq!(report["protocolVersion"], "2025-11-25");
    check(&report, "TypeScript SDK");
}

#[tokio::test]
async fn the_python_sdk_client_reads_prompts_completes_and_answers_over_round_trips() {
    let served = serve(axum::Router::new().nest("/mcp", McpServer::new(library()).router())).await;
    let (report, _) = python_report(
        "mcp_surface.py",
        &[&served.url("/mcp"), &plan().to_string()],
    )
    .await;
    assert_eq!(report["protocolVersion"], "2026-07-28");
    check(&report, "Python SDK");
}

/// The changes of one shelf: an item a little apart, three in all.
#[operation(namespace = "books", subscription, mcp(resource = "books://{shelf}"))]
fn shelf_changes(shelf: Shelf) -> impl futures::Stream<Item = String> + Send + 'static {
    futures::stream::unfold(0_u32, move |n| async move {
        if n >= 3 {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        Some((format!("{shelf:?} changed"), n + 1))
    })
}

/// A book added to the catalogue while clients are connected.
#[operation(namespace = "books", name = "added_later")]
async fn added_later() -> String {
    "new".to_owned()
}

/// A prompt added while clients are connected.
#[operation(namespace = "books", mcp(prompt))]
async fn review(
    /// The book to review.
    title: String,
) -> String {
    format!("Review {title}.")
}

#[cfg(feature = "mcp")]
mod changes {
    use super::*;
    use rmcp::model::{
        ClientConfig, ProtocolVersion, ServerNotification, SubscribeRequestParams,
        SubscriptionFilter,
    };
    use rmcp::service::{NotificationContext, RoleClient};
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::{ClientHandler, ServiceExt};
    use tokio::sync::mpsc;

    /// A 2025-11-25 client that reports the notifications it gets.
    #[derive(Clone)]
    struct Watcher(mpsc::UnboundedSender<String>);

    impl ClientHandler for Watcher {
        async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
            let _ = self.0.send("tools".to_owned());
        }

        async fn on_resource_updated(
            &self,
            params: rmcp::model::ResourceUpdatedNotificationParam,
            _context: NotificationContext<RoleClient>,
        ) {
            let _ = self.0.send(params.uri);
        }

        fn get_info(&self) -> ClientConfig {
            let mut config = ClientConfig::default();
            config.protocol_version = ProtocolVersion::V_2025_11_25;
            config
        }
    }

    /// A 2026-07-28 client.
    #[derive(Clone)]
    struct Modern;

    impl ClientHandler for Modern {
        fn get_info(&self) -> ClientConfig {
            let mut config = ClientConfig::default();
            config.protocol_version = ProtocolVersion::V_2026_07_28;
            config
        }
    }

    fn registry() -> OperationRegistry {
        let registry = library();
        registry.register_typed::<shelf_changes>().unwrap();
        registry
    }

    /// rmcp's client at `url`, negotiating 2026-07-28 through `server/discover`.
    async fn modern(url: String) -> rmcp::service::RunningService<RoleClient, Modern> {
        crate::task_client::discover(Modern, url).await
    }

    async fn next(events: &mut mpsc::UnboundedReceiver<String>) -> String {
        tokio::time::timeout(Duration::from_secs(20), events.recv())
            .await
            .expect("a notification in time")
            .expect("the client is up")
    }

    #[tokio::test]
    async fn a_2025_session_gets_resource_updates_and_list_changes() {
        let registry = registry();
        let served =
            serve(axum::Router::new().nest("/mcp", McpServer::new(registry.clone()).router()))
                .await;
        let (sender, mut events) = mpsc::unbounded_channel();
        let client = Watcher(sender)
            .serve(StreamableHttpClientTransport::from_uri(served.url("/mcp")))
            .await
            .expect("connects");
        // The 2025-11-25 way to follow a resource (2026-07-28 clients listen instead).
        #[allow(deprecated)]
        client
            .subscribe(SubscribeRequestParams::new("books://History"))
            .await
            .expect("resources/subscribe");
        assert_eq!(next(&mut events).await, "books://History");
        registry.register_typed::<added_later>().unwrap();
        loop {
            if next(&mut events).await == "tools" {
                break;
            }
        }
        let tools = client.list_all_tools().await.expect("tools/list");
        assert!(tools.iter().any(|tool| tool.name == "books.added_later"));
        client.cancel().await.expect("closes");
    }

    #[tokio::test]
    async fn a_2026_listen_stream_gets_resource_updates_and_list_changes() {
        let registry = registry();
        let served =
            serve(axum::Router::new().nest("/mcp", McpServer::new(registry.clone()).router()))
                .await;
        let client = modern(served.url("/mcp")).await;
        let mut filter = SubscriptionFilter::new();
        filter.tools_list_changed = Some(true);
        filter.resource_subscriptions = Some(vec![
            "books://History".to_owned(),
            "maps://Nowhere".to_owned(),
        ]);
        let mut listen = client
            .peer()
            .listen(filter)
            .await
            .expect("subscriptions/listen");
        assert_eq!(
            listen.acknowledged().resource_subscriptions,
            Some(vec!["books://History".to_owned()]),
            "a URI no resource of the server matches is not acknowledged"
        );
        let notice = tokio::time::timeout(Duration::from_secs(20), listen.next())
            .await
            .expect("an update in time")
            .expect("the stream is up");
        assert!(
            matches!(&notice, Some(ServerNotification::ResourceUpdatedNotification(update)) if update.params.uri == "books://History"),
            "{notice:?}"
        );
        registry.register_typed::<added_later>().unwrap();
        loop {
            let notice = tokio::time::timeout(Duration::from_secs(20), listen.next())
                .await
                .expect("a notification in time")
                .expect("the stream is up");
            match notice {
                Some(ServerNotification::ToolListChangedNotification(_)) => break,
                Some(ServerNotification::ResourceUpdatedNotification(_)) => continue,
                other => panic!("unexpected {other:?}"),
            }
        }
        drop(listen);
        client.cancel().await.expect("closes");
    }

    /// Long lists come in pages: `nextCursor` leads through every resource, template and
    /// prompt once.
    #[tokio::test]
    async fn resources_templates_and_prompts_are_listed_in_pages() {
        use opkit::{Handler, OperationKind, OperationSpec};
        use opkit_adapters::mcp_server::LIST_PAGE_SIZE;
        let count = LIST_PAGE_SIZE + 7;
        let registry = OperationRegistry::new();
        for i in 0..count {
            for (kind, spec) in [
                (
                    "doc",
                    OperationSpec::new("many", format!("doc{i:03}"), OperationKind::Query)
                        .mcp_resource(format!("many://doc/{i}")),
                ),
                (
                    "page",
                    OperationSpec::new("many", format!("page{i:03}"), OperationKind::Query)
                        .input_schema(
                            json!({"type": "object", "properties": {"n": {"type": "string"}}}),
                        )
                        .mcp_resource(format!("many://page{i}/{{n}}")),
                ),
                (
                    "ask",
                    OperationSpec::new("many", format!("ask{i:03}"), OperationKind::Query)
                        .mcp_prompt(),
                ),
            ] {
                registry
                    .register(
                        spec,
                        Handler::unary(move |_, _| async move { Ok(json!(kind)) }),
                    )
                    .unwrap();
            }
        }
        let served =
            serve(axum::Router::new().nest("/mcp", McpServer::new(registry).router())).await;
        let client = modern(served.url("/mcp")).await;
        let first = client.list_resources(None).await.expect("resources/list");
        assert_eq!(first.resources.len(), LIST_PAGE_SIZE);
        assert!(first.next_cursor.is_some(), "a second page");
        let resources = client.list_all_resources().await.expect("every page");
        assert_eq!(resources.len(), count);
        let mut uris: Vec<&str> = resources.iter().map(|r| r.uri.as_str()).collect();
        uris.sort_unstable();
        uris.dedup();
        assert_eq!(uris.len(), count, "each once");
        let templates = client
            .list_all_resource_templates()
            .await
            .expect("every page");
        assert_eq!(templates.len(), count);
        let prompts = client.list_all_prompts().await.expect("every page");
        assert_eq!(prompts.len(), count);
        client.cancel().await.expect("closes");
    }

    /// `McpServer::list_cache` gives every list its `ttlMs` and `cacheScope`.
    #[tokio::test]
    async fn the_lists_say_how_long_they_stay_fresh() {
        use opkit::middleware::{CacheHint, CacheScope};
        let hint = CacheHint {
            ttl: Duration::from_secs(300),
            scope: CacheScope::Public,
        };
        let server = McpServer::new(registry()).list_cache(hint);
        let served = serve(axum::Router::new().nest("/mcp", server.router())).await;
        let client = modern(served.url("/mcp")).await;
        let public = Some(rmcp::model::CacheScope::Public);
        let tools = client.list_tools(None).await.expect("tools/list");
        assert_eq!((tools.ttl_ms, tools.cache_scope), (Some(300_000), public));
        let prompts = client.list_prompts(None).await.expect("prompts/list");
        assert_eq!(
            (prompts.ttl_ms, prompts.cache_scope),
            (Some(300_000), public)
        );
        let resources = client.list_resources(None).await.expect("resources/list");
        assert_eq!(
            (resources.ttl_ms, resources.cache_scope),
            (Some(300_000), public)
        );
        let templates = client
            .list_resource_templates(None)
            .await
            .expect("resources/templates/list");
        assert_eq!(
            (templates.ttl_ms, templates.cache_scope),
            (Some(300_000), public)
        );
        client.cancel().await.expect("closes");
    }
}

/// Rebuilds the index once the user confirms: a task for clients that follow tasks.
#[operation(namespace = "books", mutation, mcp(task))]
async fn reindex(ctx: &OperationContext) -> Result<String, CallError> {
    match ctx.elicit::<Confirm>("Rebuild the whole index?").await? {
        Elicited::Accepted(Confirm { confirm: true }) => {}
        _ => return Ok("not rebuilt".to_owned()),
    }
    ctx.progress(1.0, Some(2.0), Some("half of the shelves"));
    Ok("rebuilt".to_owned())
}

/// Waits until cancelled: a task.
#[operation(namespace = "books", mutation, mcp(task))]
async fn wait_forever(ctx: &OperationContext) -> Result<String, CallError> {
    if let Some(token) = ctx.cancellation() {
        token.cancelled().await;
    }
    Err(CallError::aborted("cancelled"))
}

#[cfg(feature = "mcp")]
mod tasks {
    use super::*;
    use crate::task_client::{Follower, follow, poll};
    use rmcp::model::{
        CallToolRequestParams, CallToolResponse, CancelTaskParams, UpdateTaskParams,
    };
    use rmcp::service::{RoleClient, RunningService};

    async fn task_of(client: &RunningService<RoleClient, Follower>, tool: &str) -> String {
        match client
            .peer()
            .call_tool_once(CallToolRequestParams::new(tool.to_owned()))
            .await
            .expect("tools/call")
        {
            CallToolResponse::Task(created) => created.task.task_id.clone(),
            other => panic!("{tool} should run as a task: {other:?}"),
        }
    }

    #[tokio::test]
    async fn a_task_asks_is_answered_and_is_polled_to_its_result_or_cancelled() {
        let registry =
            library().with_middleware(opkit::middleware::Cache::new(Duration::from_secs(30)));
        registry.register_typed::<reindex>().unwrap();
        registry.register_typed::<wait_forever>().unwrap();
        let served =
            serve(axum::Router::new().nest("/mcp", McpServer::new(registry).router())).await;
        let client = follow(served.url("/mcp")).await;

        // A cached resource read says how fresh it is (from the registry's Cache middleware).
        let read = client
            .peer()
            .read_resource(rmcp::model::ReadResourceRequestParams::new("books://about"))
            .await
            .expect("resources/read");
        let read = serde_json::to_value(read).expect("json");
        assert_eq!(read["ttlMs"], 30_000, "{read}");
        assert_eq!(read["cacheScope"], "private", "{read}");

        let id = task_of(&client, "books.reindex").await;
        let asking = poll(&client, &id, |task| task["status"] == "input_required").await;
        let questions = asking["inputRequests"].as_object().expect("input requests");
        let (key, question) = questions.iter().next().expect("one question");
        assert_eq!(question["params"]["message"], "Rebuild the whole index?");
        let mut answers = rmcp::model::InputResponses::new();
        answers.insert(
            key.clone(),
            json!({"action": "accept", "content": {"confirm": true}}),
        );
        client
            .peer()
            .update_task(UpdateTaskParams::new(id.clone(), answers))
            .await
            .expect("tasks/update");
        let done = poll(&client, &id, |task| task["status"] == "completed").await;
        assert_eq!(done["result"]["content"][0]["text"], "rebuilt", "{done}");

        let id = task_of(&client, "books.wait_forever").await;
        poll(&client, &id, |task| task["status"] == "working").await;
        client
            .peer()
            .cancel_task(CancelTaskParams::new(id.clone()))
            .await
            .expect("tasks/cancel");
        let cancelled = poll(&client, &id, |task| task["status"] == "cancelled").await;
        assert!(cancelled.get("result").is_none(), "{cancelled}");
        client.cancel().await.expect("closes");
    }
}

#[cfg(feature = "mcp")]
mod import {
    use super::*;
    use futures::future::BoxFuture;
    use opkit::elicit::{ElicitAction, ElicitRequest, ElicitResponse, Elicitor};
    use opkit_adapters::mcp::{McpConnection, McpLifecycle, McpOptions};
    use std::sync::Arc;

    /// A caller whose user says yes to everything, counting the questions.
    struct Yes(Arc<std::sync::atomic::AtomicUsize>);

    impl Elicitor for Yes {
        fn elicit(
            &self,
            request: ElicitRequest,
        ) -> BoxFuture<'static, Result<ElicitResponse, CallError>> {
            self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            assert!(request.message.ends_with('?'), "{}", request.message);
            Box::pin(async {
                Ok(ElicitResponse::new(
                    ElicitAction::Accept,
                    Some(json!({"confirm": true})),
                ))
            })
        }
    }

    fn origin() -> OperationRegistry {
        let registry = library();
        registry.register_typed::<reindex>().unwrap();
        registry
    }

    #[tokio::test]
    async fn an_imported_tool_asks_the_importing_caller_in_both_eras_and_its_task_is_followed() {
        let served =
            serve(axum::Router::new().nest("/mcp", McpServer::new(origin()).router())).await;
        for lifecycle in [McpLifecycle::Legacy, McpLifecycle::Modern] {
            let options = McpOptions::new("remote").lifecycle(lifecycle);
            let connection = McpConnection::connect_http(&served.url("/mcp"), options)
                .await
                .expect("connects");
            let era = connection.protocol_version().unwrap_or_default();
            let registry = OperationRegistry::new();
            connection.register_into(&registry).expect("registers");
            let asked = Arc::new(std::sync::atomic::AtomicUsize::new(0));
            let ctx = OperationContext::new().with_elicitor(Arc::new(Yes(asked.clone())));
            let burned = registry
                .execute("remote.books_burn", json!({"title": "Dune"}), &ctx)
                .await
                .expect("the imported burn answers");
            assert_eq!(burned.data, "burned Dune", "{era}: {burned:?}");
            assert_eq!(asked.load(std::sync::atomic::Ordering::SeqCst), 1, "{era}");
            // The origin runs reindex as a task (the import negotiates tasks): followed.
            let rebuilt = registry
                .execute("remote.books_reindex", json!({}), &ctx)
                .await
                .expect("the imported reindex answers");
            assert_eq!(rebuilt.data, "rebuilt", "{era}: {rebuilt:?}");
            assert_eq!(asked.load(std::sync::atomic::Ordering::SeqCst), 2, "{era}");
            // A caller that cannot be asked gets the reason, not a hang.
            let refused = registry
                .execute(
                    "remote.books_burn",
                    json!({"title": "Dune"}),
                    &OperationContext::new(),
                )
                .await;
            let text = format!("{refused:?}");
            assert!(
                text.contains("elicitation") || text.contains("ask"),
                "{era}: {text}"
            );
            connection.close();
        }
    }

    #[tokio::test]
    async fn an_imported_servers_resources_templates_and_prompts_are_operations() {
        let served =
            serve(axum::Router::new().nest("/mcp", McpServer::new(origin()).router())).await;
        for lifecycle in [McpLifecycle::Legacy, McpLifecycle::Modern] {
            let options = McpOptions::new("remote").lifecycle(lifecycle);
            let connection = McpConnection::connect_http(&served.url("/mcp"), options)
                .await
                .expect("connects");
            let registry = OperationRegistry::new();
            let ids = connection.register_into(&registry).expect("registers");
            for id in [
                "remote.resources.books_about",
                "remote.resources.books_on_shelf",
                "remote.prompts.books_recommend",
            ] {
                assert!(ids.iter().any(|known| known == id), "{id} in {ids:?}");
            }
            let ctx = OperationContext::new();
            let about = registry
                .execute("remote.resources.books_about", json!({}), &ctx)
                .await
                .expect("reads");
            assert_eq!(about.data[0]["text"], "A small library.", "{about:?}");
            assert_eq!(about.data[0]["uri"], "books://about");
            let shelf = registry
                .execute(
                    "remote.resources.books_on_shelf",
                    json!({"shelf": "History"}),
                    &ctx,
                )
                .await
                .expect("reads the template");
            assert_eq!(shelf.data[0]["uri"], "books://History", "{shelf:?}");
            let books: Value =
                serde_json::from_str(shelf.data[0]["text"].as_str().unwrap_or("null")).unwrap();
            assert_eq!(books, json!(["SPQR", "The Guns of August"]));
            let missing = registry
                .execute("remote.resources.books_on_shelf", json!({}), &ctx)
                .await
                .expect_err("the variable is required");
            assert_eq!(
                missing.code,
                opkit::ErrorCode::ValidationError,
                "{missing:?}"
            );
            let prompt = registry
                .execute(
                    "remote.prompts.books_recommend",
                    json!({"shelf": "Science"}),
                    &ctx,
                )
                .await
                .expect("gets the prompt");
            assert_eq!(
                prompt.data["messages"][0]["content"]["text"],
                "Recommend one book from the Science shelf.",
                "{prompt:?}"
            );
            connection.close();
        }
    }

    #[tokio::test]
    async fn an_opkit_proxy_in_front_of_a_server_that_asks_still_asks_its_own_client() {
        let origin =
            serve(axum::Router::new().nest("/mcp", McpServer::new(origin()).router())).await;
        let connection = McpConnection::connect_http(
            &origin.url("/mcp"),
            // Served again to anyone: the import says so.
            McpOptions::new("remote").access(opkit::AccessRule::public()),
        )
        .await
        .expect("the proxy connects");
        let proxied = OperationRegistry::new();
        connection.register_into(&proxied).expect("registers");
        let proxy = serve(axum::Router::new().nest("/mcp", McpServer::new(proxied).router())).await;
        let plan = json!({
            "read": "books://nowhere",
            "prompt": {"name": "none"},
            "complete": {"ref": {"type": "ref/prompt", "name": "none"}, "argument": {"name": "x", "value": ""}},
            "answer": {"confirm": true},
            "calls": [{"name": "remote.books_burn", "arguments": {"title": "Dune"}}]
        });
        let (report, _) =
            python_report("mcp_surface.py", &[&proxy.url("/mcp"), &plan.to_string()]).await;
        assert_eq!(
            report["questions"][0]["message"], "Burn \"Dune\"?",
            "{report}"
        );
        let call = &report["calls"][0];
        assert_eq!(
            call["result"]["content"][0]["text"], "burned Dune",
            "{report}"
        );
        connection.close();
    }
}

/// The import follows the server's lists: a prompt registered on the server after the
/// import connected reaches the importing registry on its own (`auto_refresh`: the server's
/// `prompts/list_changed`, in the call's session for 2025-11-25, on the listen stream for
/// 2026-07-28), and one unregistered leaves it.
#[cfg(feature = "mcp")]
#[tokio::test]
async fn the_import_follows_the_servers_prompts_and_resources() {
    use opkit_adapters::mcp::{McpConnection, McpLifecycle, McpOptions};
    for lifecycle in [McpLifecycle::Legacy, McpLifecycle::Modern] {
        let origin = library();
        let served =
            serve(axum::Router::new().nest("/mcp", McpServer::new(origin.clone()).router())).await;
        let options = McpOptions::new("remote")
            .lifecycle(lifecycle)
            .auto_refresh(true);
        let connection = McpConnection::connect_http(&served.url("/mcp"), options)
            .await
            .expect("connects");
        let imported = OperationRegistry::new();
        connection.register_into(&imported).expect("registers");
        assert!(imported.spec("remote.prompts.books_review").is_none());
        origin.register_typed::<review>().unwrap();
        let arrived = async {
            while imported.spec("remote.prompts.books_review").is_none() {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        };
        tokio::time::timeout(Duration::from_secs(20), arrived)
            .await
            .unwrap_or_else(|_| panic!("{lifecycle:?}: the new prompt was not imported"));
        let review = imported
            .execute(
                "remote.prompts.books_review",
                json!({"title": "Dune"}),
                &OperationContext::new(),
            )
            .await
            .expect("gets the new prompt");
        assert_eq!(
            review.data["messages"][0]["content"]["text"], "Review Dune.",
            "{review:?}"
        );
        origin.unregister("books.review");
        let report = connection.refresh().await.expect("refreshes");
        assert!(
            report
                .removed
                .contains(&"remote.prompts.books_review".to_owned())
                || imported.spec("remote.prompts.books_review").is_none(),
            "{lifecycle:?}: {report:?}"
        );
        assert!(imported.spec("remote.prompts.books_review").is_none());
        assert!(imported.spec("remote.resources.books_on_shelf").is_some());
        connection.close();
    }
}

/// Over HTTP nobody can be asked: the operation gets (and here returns) the typed error that
/// names the edge, as a 503 with the `CallError`; nothing hangs.
#[tokio::test]
async fn over_http_a_question_is_a_typed_error_naming_the_edge() {
    let registry = library();
    let served = serve(opkit_adapters::http_server::HttpServer::new(registry).router()).await;
    let response = reqwest::Client::new()
        .post(served.url("/ops/books.burn"))
        .json(&json!({"title": "Dune"}))
        .send()
        .await
        .expect("the server answers");
    assert_eq!(response.status(), 503);
    let body: Value = response.json().await.expect("a JSON error");
    let error = if body.get("error").is_some() {
        &body["error"]
    } else {
        &body
    };
    assert_eq!(error["kind"], "UNAVAILABLE", "{body}");
    assert_eq!(error["details"]["elicitation"], false, "{body}");
    assert_eq!(error["details"]["edge"], "http_server", "{body}");
}
