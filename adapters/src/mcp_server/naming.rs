//! How operations are named as tools: [`ToolNaming`] (the id as it is, or the form model
//! providers accept), an operation's own name (`mcp(tool_name = "..")`), the shortened form
//! a derived name takes when it is too long or taken ([`ToolNaming::fit`]), and why a name
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

    /// The longest name of this form, and whether it may hold a `.`.
    fn limits(self) -> (usize, bool) {
        match self {
            Self::OperationId => (128, true),
            Self::ProviderSafe => (64, false),
        }
    }

    /// A valid name of this form for operation `id`, used when the name derived from it is
    /// too long, holds a character the form does not allow, or is another operation's: the
    /// derived name with each such character replaced by `_`, its middle dropped when it is
    /// too long, and a digest of `id` appended (`_` and 8 hex digits), so the name depends
    /// on the id alone (stable across restarts) and two ids do not meet on it.
    /// `attempt` above 0 salts the digest, for the (rare) name a digest leaves taken.
    pub(crate) fn fit(self, id: &str, attempt: u32) -> String {
        const HEAD: usize = 24;
        let (max, dots) = self.limits();
        let clean: String = self
            .name_of(id)
            .chars()
            .map(|c| if allowed(c, dots) { c } else { '_' })
            .collect();
        // Every char of `clean` is ASCII: byte offsets are char offsets.
        let room = max - 9;
        let stem = if clean.len() <= room {
            clean
        } else {
            let tail = room - HEAD - 1;
            let separator = |c: char| matches!(c, '_' | '.' | '-');
            let head = clean[..HEAD].trim_end_matches(separator);
            let tail = clean[clean.len() - tail..].trim_start_matches(separator);
            format!("{head}_{tail}")
        };
        let hash = match attempt {
            0 => digest(id),
            n => digest(&format!("{id}#{n}")),
        };
        format!("{stem}_{hash:08x}")
    }

    /// Why `name` is not a valid tool name in this form, if it is not.
    pub(crate) fn check(self, name: &str) -> Option<String> {
        let (max, dots) = self.limits();
        let allowed = |c: char| allowed(c, dots);
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

/// Whether `c` may be in a tool name (`dots`: of the form that allows `.`).
fn allowed(c: char, dots: bool) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-' || (dots && c == '.')
}

/// A 32-bit FNV-1a digest of `id`: the same on every build and platform (unlike std's
/// hasher), which keeps a shortened name stable across restarts.
fn digest(id: &str) -> u32 {
    id.bytes().fold(0x811c_9dc5_u32, |hash, byte| {
        (hash ^ u32::from(byte)).wrapping_mul(0x0100_0193)
    })
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fitted_name_is_valid_stable_and_keeps_both_ends() {
        let id = format!(
            "graph.users.{}.createUploadSession",
            "calendar.events".repeat(9)
        );
        for naming in [ToolNaming::OperationId, ToolNaming::ProviderSafe] {
            let name = naming.fit(&id, 0);
            assert_eq!(naming.check(&name), None, "{name}");
            assert_eq!(name, naming.fit(&id, 0), "the same id, the same name");
            assert_ne!(name, naming.fit(&id, 1), "a salted second try");
            assert!(name.starts_with("graph"), "{name}");
            assert!(name.contains("createUploadSession_"), "{name}");
            assert!(
                !name.contains("__") && !name.contains("._"),
                "one separator: {name}"
            );
        }
        let short = ToolNaming::ProviderSafe.fit("a/b.c", 0);
        assert!(short.starts_with("a_b_c_"), "{short}");
        assert_ne!(
            short,
            ToolNaming::ProviderSafe.fit("a_b.c", 0),
            "the digest tells them apart"
        );
        assert_eq!(format!("{:08x}", digest("")), "811c9dc5");
    }
}
