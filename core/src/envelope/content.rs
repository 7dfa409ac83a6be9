//! MCP content blocks and their annotations, as carried in [`McpMeta`](super::McpMeta).

use serde::{Deserialize, Serialize};

/// One content block of an MCP tool result. Tagged by `type`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum McpContentBlock {
    /// Plain text.
    Text {
        /// The text.
        text: String,
        /// Hints for the client.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        annotations: Option<Annotations>,
    },
    /// A base64-encoded image.
    Image {
        /// Base64 image bytes.
        data: String,
        /// The image's media type, e.g. `image/png`.
        #[serde(rename = "mimeType")]
        mime_type: String,
        /// Hints for the client.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        annotations: Option<Annotations>,
    },
    /// Base64-encoded audio.
    Audio {
        /// Base64 audio bytes.
        data: String,
        /// The audio's media type, e.g. `audio/wav`.
        #[serde(rename = "mimeType")]
        mime_type: String,
        /// Hints for the client.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        annotations: Option<Annotations>,
    },
    /// A resource embedded in the result.
    Resource {
        /// The resource's contents.
        resource: EmbeddedResource,
        /// Hints for the client.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        annotations: Option<Annotations>,
    },
    /// A link to a resource the client may fetch.
    ResourceLink {
        /// The resource's URI.
        uri: String,
        /// The resource's name.
        name: String,
        /// What the resource is.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        description: Option<String>,
        /// The resource's media type.
        #[serde(rename = "mimeType", default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
    },
}

impl McpContentBlock {
    /// A text block without annotations.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text {
            text: text.into(),
            annotations: None,
        }
    }
}

/// The contents of an embedded resource: `text` or base64 `blob`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EmbeddedResource {
    /// The resource's URI.
    pub uri: String,
    /// The resource's media type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Text contents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Base64 binary contents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blob: Option<String>,
}

/// Hints about who a block is for and how much it matters.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Annotations {
    /// Who the block is meant for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audience: Option<Vec<Role>>,
    /// How important the block is, from 0 (optional) to 1 (required).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<f64>,
    /// When the underlying data last changed (ISO 8601).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_modified: Option<String>,
}

/// A party of an MCP conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The human user.
    User,
    /// The model.
    Assistant,
}

/// One message of an MCP prompt: who says it and what. A prompt operation
/// (`#[operation(mcp(prompt))]`, served by `opkit_adapters::mcp_server`) returns a
/// `Vec<PromptMessage>` (or a `String`, served as one user message).
///
/// ```
/// use opkit::envelope::{PromptMessage, Role};
/// let message = PromptMessage::user("Summarize my notes.");
/// assert_eq!(message.role, Role::User);
/// assert_eq!(
///     serde_json::to_value(&message).unwrap(),
///     serde_json::json!({"role": "user", "content": {"type": "text", "text": "Summarize my notes."}})
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PromptMessage {
    /// Who says it.
    pub role: Role,
    /// What is said.
    pub content: McpContentBlock,
}

impl PromptMessage {
    /// A text message from the user.
    pub fn user(text: impl Into<String>) -> Self {
        Self {
            role: Role::User,
            content: McpContentBlock::text(text),
        }
    }

    /// A text message from the assistant.
    pub fn assistant(text: impl Into<String>) -> Self {
        Self {
            role: Role::Assistant,
            content: McpContentBlock::text(text),
        }
    }
}
