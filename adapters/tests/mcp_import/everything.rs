//! MCP import against `@modelcontextprotocol/server-everything` (pinned in
//! adapters/peers/mcp/package-lock.json), over stdio and over Streamable HTTP on 127.0.0.1.
#![cfg(feature = "mcp")]

use crate::mcp_support;

use mcp_support::*;
use opkit::envelope::{Annotations, EmbeddedResource, McpContentBlock, Role};
use opkit::{ErrorCode, OperationContext, OperationKind};
use opkit_adapters::mcp::{McpConnection, McpOptions};
use serde_json::{Value, json};

/// The tools server-everything registers for a client without sampling, elicitation or
/// roots capabilities.
const BASE_TOOLS: [&str; 12] = [
    "echo",
    "get-annotated-message",
    "get-env",
    "get-resource-links",
    "get-resource-reference",
    "get-structured-content",
    "get-sum",
    "get-tiny-image",
    "gzip-file-as-resource",
    "toggle-simulated-logging",
    "toggle-subscriber-updates",
    "trigger-long-running-operation",
];

/// Every check that is the same over stdio and HTTP.
async fn check_everything(connection: &McpConnection, ns: &str) {
    // --- every tool listed, one operation each ---------------------------------------------
    let names = connection.tool_names();
    for tool in BASE_TOOLS {
        assert!(
            names.iter().any(|name| name == tool),
            "{tool} missing from {names:?}"
        );
    }
    let registry = registry_of(connection);
    // Its resources, templates and prompts are operations too (under `.resources`, `.prompts`).
    let extras: Vec<String> = registry
        .specs()
        .iter()
        .map(|spec| spec.id())
        .filter(|id| {
            id.starts_with(&format!("{ns}.resources.")) || id.starts_with(&format!("{ns}.prompts."))
        })
        .collect();
    eprintln!("imported resources and prompts: {extras:?}");
    assert_eq!(registry.len(), names.len() + extras.len());
    assert!(
        extras
            .iter()
            .any(|id| id.ends_with(".prompts.simple_prompt"))
            && extras
                .iter()
                .any(|id| id.ends_with(".resources.features_md")),
        "{extras:?}"
    );
    let prompt = call(&registry, &format!("{ns}.prompts.simple_prompt"), json!({})).await;
    assert!(
        prompt.data["messages"]
            .as_array()
            .is_some_and(|messages| !messages.is_empty()),
        "{prompt:?}"
    );
    // Every resource and template reads to contents (a template's variables given "1").
    for id in extras.iter().filter(|id| id.contains(".resources.")) {
        let spec = registry.spec(id).expect("registered");
        let input: serde_json::Map<String, Value> = spec.input_schema["required"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(|field| (field.to_owned(), json!("1")))
            .collect();
        let read = call(&registry, id, Value::Object(input)).await;
        let contents = read.data.as_array().expect("contents");
        assert!(!contents.is_empty(), "{id}: {read:?}");
        assert!(
            contents[0].get("text").is_some() || contents[0].get("blob").is_some(),
            "{id}: {read:?}"
        );
    }
    for tool in &names {
        let id = connection
            .operation_id(tool)
            .expect("an operation per tool");
        let spec = registry.spec(&id).expect("registered");
        assert_eq!(spec.namespace, ns);
        assert_eq!(spec.extensions["mcp.toolName"], json!(tool));
        assert_eq!(connection.tool_name(&id).as_deref(), Some(tool.as_str()));
        assert!(spec.input_schema.is_object(), "{tool}: input schema kept");
        // server-everything annotates every tool.
        let annotations = &spec.extensions["mcp.annotations"];
        let read_only = annotations["readOnlyHint"].as_bool() == Some(true);
        let expected = if read_only {
            OperationKind::Query
        } else {
            OperationKind::Mutation
        };
        assert_eq!(spec.kind, expected, "{tool}");
    }
    let structured = registry
        .spec(&format!("{ns}.get_structured_content"))
        .expect("get-structured-content becomes get_structured_content");
    assert_eq!(structured.kind, OperationKind::Query);
    assert_eq!(
        structured.output_schema["properties"]["temperature"]["type"],
        "number"
    );
    assert_eq!(
        structured.input_schema["$schema"].as_str(),
        Some("http://json-schema.org/draft-07/schema#"),
        "the draft-07 input schema is kept as sent"
    );
    let echo = registry.spec(&format!("{ns}.echo")).unwrap();
    assert!(echo.has_unknown_output());

    // --- echo: a text block is the data -----------------------------------------------------
    let envelope = call(&registry, &format!("{ns}.echo"), json!({"message": "hi"})).await;
    assert_eq!(envelope.data, json!([{"type": "text", "text": "Echo: hi"}]));
    assert!(!meta(&envelope).is_error);

    // --- input validation happens before the call (draft-07 schema) -------------------------
    let error = registry
        .execute(
            &format!("{ns}.get_structured_content"),
            json!({"location": "Atlantis"}),
            &OperationContext::default(),
        )
        .await
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::ValidationError);

    // --- get-structured-content: structuredContent is the data ------------------------------
    let envelope = call(
        &registry,
        &format!("{ns}.get_structured_content"),
        json!({"location": "Chicago"}),
    )
    .await;
    let weather = json!({"temperature": 36, "conditions": "Light rain / drizzle", "humidity": 82});
    assert_eq!(envelope.data, weather);
    let mcp = meta(&envelope);
    assert!(!mcp.is_error);
    assert_eq!(mcp.structured_content, Some(weather.clone()));
    assert_eq!(mcp.content.len(), 1);
    let McpContentBlock::Text { text, annotations } = &mcp.content[0] else {
        panic!(
            "expected the backward-compatible text block, got {:?}",
            mcp.content[0]
        );
    };
    assert_eq!(serde_json::from_str::<Value>(text).unwrap(), weather);
    assert_eq!(annotations, &None);
    let wire = serde_json::to_value(&envelope).unwrap();
    assert_eq!(wire["meta"]["source"], "mcp");
    assert_eq!(wire["meta"]["isError"], false);
    assert_eq!(wire["meta"]["structuredContent"], weather);

    // --- get-tiny-image: text, image, text ----------------------------------------------------
    let envelope = call(&registry, &format!("{ns}.get_tiny_image"), json!({})).await;
    let mcp = meta(&envelope);
    assert_eq!(mcp.structured_content, None);
    assert_eq!(mcp.content.len(), 3);
    assert_eq!(
        mcp.content[0],
        McpContentBlock::text("Here's the image you requested:")
    );
    let McpContentBlock::Image {
        data,
        mime_type,
        annotations,
    } = &mcp.content[1]
    else {
        panic!("expected an image block, got {:?}", mcp.content[1]);
    };
    assert_eq!(mime_type, "image/png");
    assert!(
        data.starts_with("iVBORw0KGgo"),
        "base64 PNG: {}",
        &data[..16]
    );
    assert_eq!(annotations, &None);
    assert_eq!(
        mcp.content[2],
        McpContentBlock::text("The image above is the MCP logo.")
    );
    assert_eq!(envelope.data, serde_json::to_value(&mcp.content).unwrap());

    // --- get-resource-links: resource_link blocks --------------------------------------------
    let envelope = call(
        &registry,
        &format!("{ns}.get_resource_links"),
        json!({"count": 2}),
    )
    .await;
    let mcp = meta(&envelope);
    assert_eq!(mcp.content.len(), 3);
    assert_eq!(
        mcp.content[0],
        McpContentBlock::text("Here are 2 resource links to resources available in this server:")
    );
    assert_eq!(
        mcp.content[1],
        McpContentBlock::ResourceLink {
            uri: "demo://resource/dynamic/blob/1".into(),
            name: "Blob Resource 1".into(),
            description: Some("Resource 1: plaintext resource".into()),
            mime_type: Some("text/plain".into()),
        }
    );
    assert_eq!(
        mcp.content[2],
        McpContentBlock::ResourceLink {
            uri: "demo://resource/dynamic/text/2".into(),
            name: "Text Resource 2".into(),
            description: Some("Resource 2: plaintext resource".into()),
            mime_type: Some("text/plain".into()),
        }
    );
    let wire = serde_json::to_value(&envelope).unwrap();
    assert_eq!(wire["data"][1]["type"], "resource_link");
    assert_eq!(wire["data"][1]["mimeType"], "text/plain");

    // --- get-resource-reference: an embedded text resource, then a blob --------------------
    let envelope = call(
        &registry,
        &format!("{ns}.get_resource_reference"),
        json!({"resourceType": "Text", "resourceId": 3}),
    )
    .await;
    let mcp = meta(&envelope);
    assert_eq!(mcp.content.len(), 3);
    assert_eq!(
        mcp.content[0],
        McpContentBlock::text("Returning resource reference for Resource 3:")
    );
    let McpContentBlock::Resource {
        resource,
        annotations,
    } = &mcp.content[1]
    else {
        panic!("expected an embedded resource, got {:?}", mcp.content[1]);
    };
    assert_eq!(resource.uri, "demo://resource/dynamic/text/3");
    assert_eq!(resource.mime_type.as_deref(), Some("text/plain"));
    let text = resource.text.as_deref().expect("a text resource");
    assert!(
        text.starts_with("Resource 3: This is a plaintext resource created at "),
        "{text}"
    );
    assert_eq!(resource.blob, None);
    assert_eq!(annotations, &None);
    assert_eq!(
        mcp.content[2],
        McpContentBlock::text(
            "You can access this resource using the URI: demo://resource/dynamic/text/3"
        )
    );

    let envelope = call(
        &registry,
        &format!("{ns}.get_resource_reference"),
        json!({"resourceType": "Blob", "resourceId": 4}),
    )
    .await;
    let McpContentBlock::Resource {
        resource: EmbeddedResource {
            uri, text, blob, ..
        },
        ..
    } = &meta(&envelope).content[1]
    else {
        panic!("expected an embedded blob resource");
    };
    assert_eq!(uri, "demo://resource/dynamic/blob/4");
    assert_eq!(text, &None);
    assert!(blob.as_deref().is_some_and(|blob| !blob.is_empty()));

    // --- get-annotated-message: annotations on text and image blocks -----------------------
    let envelope = call(
        &registry,
        &format!("{ns}.get_annotated_message"),
        json!({"messageType": "success", "includeImage": true}),
    )
    .await;
    let mcp = meta(&envelope);
    assert_eq!(
        mcp.content[0],
        McpContentBlock::Text {
            text: "Operation completed successfully".into(),
            annotations: Some(Annotations {
                audience: Some(vec![Role::User]),
                priority: Some(0.7),
                last_modified: None,
            }),
        }
    );
    let McpContentBlock::Image { annotations, .. } = &mcp.content[1] else {
        panic!("expected an image block");
    };
    assert_eq!(
        annotations,
        &Some(Annotations {
            audience: Some(vec![Role::User]),
            priority: Some(0.5),
            last_modified: None,
        })
    );
    let wire = serde_json::to_value(&envelope).unwrap();
    assert_eq!(
        wire["meta"]["content"][0]["annotations"]["priority"],
        json!(0.7)
    );
    assert_eq!(
        wire["meta"]["content"][0]["annotations"]["audience"],
        json!(["user"])
    );

    // --- an isError result is an envelope ----------------------------------------------------
    // resourceId 0 passes the schema (a number) but the tool throws: the SDK reports it as
    // `isError: true` with the message in a text block.
    let envelope = call(
        &registry,
        &format!("{ns}.get_resource_reference"),
        json!({"resourceType": "Text", "resourceId": 0}),
    )
    .await;
    let mcp = meta(&envelope);
    assert!(mcp.is_error);
    assert!(envelope.is_error());
    assert_eq!(mcp.structured_content, None);
    assert_eq!(mcp.content.len(), 1);
    let McpContentBlock::Text { text, .. } = &mcp.content[0] else {
        panic!("expected a text block");
    };
    assert!(
        text.contains("Invalid resourceId: 0. Must be a finite positive integer."),
        "{text}"
    );
    assert_eq!(envelope.data, serde_json::to_value(&mcp.content).unwrap());
    let wire = serde_json::to_value(&envelope).unwrap();
    assert_eq!(wire["meta"]["isError"], true);
    assert!(wire["meta"].get("structuredContent").is_none());

    // An unknown tool is an `isError` result too for this server.
    let envelope = connection
        .call_tool("no-such-tool", json!({}), &OperationContext::default())
        .await
        .expect("an isError envelope, not an error");
    assert!(envelope.is_error());

    // --- progress notifications arriving mid-call do not disturb it ------------------------
    let envelope = call(
        &registry,
        &format!("{ns}.trigger_long_running_operation"),
        json!({"duration": 1, "steps": 4}),
    )
    .await;
    assert!(!meta(&envelope).is_error);
    let McpContentBlock::Text { text, .. } = &meta(&envelope).content[0] else {
        panic!("expected a text block");
    };
    assert!(text.contains("Long running operation completed"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_everything_over_stdio() {
    let (connection, _guard) = everything_stdio("everything").await;
    assert!(connection.server_pid().is_some());
    check_everything(&connection, "everything").await;
    connection.close();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_everything_over_streamable_http_on_loopback() {
    let server = start_everything_http();
    assert_loopback_only(server.port);
    let connection = McpConnection::connect_http(
        &server.mcp_url(),
        McpOptions::new("everything.http")
            .label("server-everything-http")
            .header("X-Opkit-Test", "1")
            .bearer_token("test-token"),
    )
    .await
    .expect("connect over Streamable HTTP");
    assert_eq!(connection.server_pid(), None);
    check_everything(&connection, "everything.http").await;
    connection.close();
}
