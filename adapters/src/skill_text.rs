//! What the skills server ([`crate::mcp_server`], feature `mcp-skills`) and the skills import
//! ([`crate::mcp`]) read and write alike: a skill file's path in its `skill://` URI, and the
//! YAML frontmatter block of a `SKILL.md`.

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

/// What a `skill://` path keeps unencoded besides letters and digits.
const PATH: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~')
    .remove(b'/');

/// `path` (`/`-separated) percent-encoded for a `skill://` URI.
pub(crate) fn encode_path(path: &str) -> String {
    utf8_percent_encode(path, PATH).collect()
}

/// The text between a leading `---` line and the next `---` line (`\n` or `\r\n` endings),
/// or `None` when there is no such block.
pub(crate) fn frontmatter_block(text: &str) -> Option<&str> {
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))?;
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            return Some(&rest[..offset]);
        }
        offset += line.len();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_block_needs_both_fences() {
        assert_eq!(
            frontmatter_block("---\r\na: 1\r\n---\r\nx"),
            Some("a: 1\r\n")
        );
        assert_eq!(frontmatter_block("---\na: 1\n---"), Some("a: 1\n"));
        assert_eq!(frontmatter_block("---\na: 1\n"), None);
        assert_eq!(frontmatter_block("a: 1\n---\n"), None);
    }

    #[test]
    fn paths_keep_slashes_and_unreserved_characters() {
        assert_eq!(encode_path("a b/c~d.md"), "a%20b/c~d.md");
    }
}
