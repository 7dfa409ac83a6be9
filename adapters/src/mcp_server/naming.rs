//! How operations are named as tools: [`ToolNaming`] (the id as it is, or the form model
//! providers accept), an operation's own name (`mcp(tool_name = "..")`), and why a name
//! cannot be served ([`ToolNameError`]). Shared by the tool names and the resources and
//! prompts.

use opkit::OperationSpec;

/// How operation ids become tool names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ToolNaming {
    /// The id as it is (`math.add`): MCP allows `[A-Za-z0-9_.-]`, up to 128 characters.
    #[default]
    OperationId,
    /// A name the function-calling APIs of the major model providers accept,
    /// `^[a-zA-Z0-9_-]{1,64}$`: the id with each `.` replaced by `_` (`math_add`).
    ProviderSafe,
}

impl ToolNaming {
    pub(crate) fn name_of(self, id: &str) -> String {
        match self {
            Self::OperationId => id.to_owned(),
            Self::ProviderSafe => id.replace('.', "_"),
        }
    }

    /// Why `name` is not a valid tool name in this form, if it is not.
    pub(crate) fn check(self, name: &str) -> Option<String> {
        let (max, dots) = match self {
            Self::OperationId => (128, true),
            Self::ProviderSafe => (64, false),
        };
        let allowed =
            |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-' || (dots && c == '.');
        if name.is_empty() || name.len() > max {
            return Some(format!("a tool name has 1 to {max} characters"));
        }
        if let Some(bad) = name.chars().find(|&c| !allowed(c)) {
            let set = if dots {
                "[A-Za-z0-9_.-]"
            } else {
                "[A-Za-z0-9_-]"
            };
            return Some(format!("{bad:?} is not allowed (use {set})"));
        }
        None
    }
}

/// Why the tool names of a registry cannot be served.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ToolNameError {
    /// Two operations would be served under one tool name.
    #[error(
        "operations `{first}` and `{second}` would both be the MCP tool `{tool}`: give one of them another name with `#[operation(mcp(tool_name = \"..\"))]` (`McpSpec::mcp_tool_name`) or choose another ToolNaming"
    )]
    Collision {
        /// The contested tool name.
        tool: String,
        /// One operation's id.
        first: String,
        /// The other operation's id.
        second: String,
    },
    /// An operation's tool name is not valid.
    #[error("operation `{operation}` cannot be the MCP tool `{tool}`: {reason}")]
    Invalid {
        /// The operation's id.
        operation: String,
        /// The name it would get.
        tool: String,
        /// What is wrong with it.
        reason: String,
    },
}

/// The tool name of one operation: its override, else its id in the given form.
pub(crate) fn tool_name_of(spec: &OperationSpec, naming: ToolNaming) -> String {
    match super::options::tool_name(spec) {
        Some(name) => name.to_owned(),
        None => naming.name_of(&spec.id()),
    }
}
