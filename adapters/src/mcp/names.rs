//! Tool names → operation names: sanitizing to the operation-name rules
//! (segments of `[A-Za-z_][A-Za-z0-9_]*`) and keeping the mapping.
//!
//! MCP tool names may use `[A-Za-z0-9_.-]` (and, from servers that ignore the SHOULD, anything
//! else); operation names must match `[A-Za-z_][A-Za-z0-9_]*`. [`sanitize`] replaces every
//! character outside `[A-Za-z0-9_]` by `_` and prefixes `_` when the result would start with a
//! digit or be empty. Two tools whose sanitized names collide (`a-b` and `a.b`) are told apart
//! by a numeric suffix (`a_b`, `a_b_2`), assigned by [`assign`] deterministically: tools whose
//! names are already valid keep them, names already in use keep their previous operation name
//! (so a refresh does not renumber), and the rest get suffixes in the order of their real names.

use std::collections::{BTreeMap, BTreeSet, HashMap};

/// `true` when `name` already matches `[A-Za-z_][A-Za-z0-9_]*`.
pub fn is_valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Turns a tool name into a valid operation name (without collision handling).
///
/// ```
/// use opkit_adapters::mcp::sanitize_tool_name;
/// assert_eq!(sanitize_tool_name("get-tiny-image"), "get_tiny_image");
/// assert_eq!(sanitize_tool_name("admin.tools.list"), "admin_tools_list");
/// assert_eq!(sanitize_tool_name("2fa"), "_2fa");
/// assert_eq!(sanitize_tool_name(""), "_");
/// ```
pub fn sanitize(tool_name: &str) -> String {
    let mut name: String = tool_name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if !name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
        name.insert(0, '_');
    }
    name
}

/// Assigns one unique operation name to every tool name.
///
/// `previous` maps real tool names to the operation names they had before (a refresh); a
/// tool keeps its previous name when it is still free. The result maps real tool names to
/// operation names.
pub fn assign<'a>(
    tool_names: impl IntoIterator<Item = &'a str>,
    previous: &HashMap<String, String>,
) -> BTreeMap<String, String> {
    let tools: BTreeSet<&str> = tool_names.into_iter().collect();
    let mut taken: BTreeSet<String> = BTreeSet::new();
    let mut assigned: BTreeMap<String, String> = BTreeMap::new();
    // 1. Valid names are their own operation names (tool names are unique per server).
    for &tool in &tools {
        if is_valid_name(tool) {
            taken.insert(tool.to_owned());
            assigned.insert(tool.to_owned(), tool.to_owned());
        }
    }
    // 2. Names seen before keep their operation name when nobody took it meanwhile.
    for &tool in &tools {
        if assigned.contains_key(tool) {
            continue;
        }
        if let Some(old) = previous.get(tool)
            && is_valid_name(old)
            && !taken.contains(old)
        {
            taken.insert(old.clone());
            assigned.insert(tool.to_owned(), old.clone());
        }
    }
    // 3. The rest: sanitized, with `_2`, `_3`, ... on collisions, in real-name order.
    for &tool in &tools {
        if assigned.contains_key(tool) {
            continue;
        }
        let base = sanitize(tool);
        let mut candidate = base.clone();
        let mut suffix = 2usize;
        // Bounded: each round takes a new suffix, and at most `tools.len()` names are taken.
        while taken.contains(&candidate) {
            candidate = format!("{base}_{suffix}");
            suffix += 1;
        }
        taken.insert(candidate.clone());
        assigned.insert(tool.to_owned(), candidate);
    }
    assigned
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sanitizes_to_the_design_rules() {
        for (tool, expected) in [
            ("echo", "echo"),
            ("get-tiny-image", "get_tiny_image"),
            ("admin.tools.list", "admin_tools_list"),
            ("DATA_EXPORT_v2", "DATA_EXPORT_v2"),
            ("9lives", "_9lives"),
            ("with space,comma", "with_space_comma"),
            ("héllo", "h_llo"),
            ("", "_"),
            ("-", "_"),
        ] {
            let name = sanitize(tool);
            assert_eq!(name, expected, "sanitize({tool:?})");
            assert!(is_valid_name(&name), "{name:?} is valid");
        }
    }

    #[test]
    fn valid_names_are_kept_and_collisions_get_suffixes() {
        let mapping = assign(["a-b", "a.b", "a_b", "x"], &HashMap::new());
        assert_eq!(mapping["a_b"], "a_b");
        assert_eq!(mapping["a-b"], "a_b_2");
        assert_eq!(mapping["a.b"], "a_b_3");
        assert_eq!(mapping["x"], "x");
        let unique: BTreeSet<&String> = mapping.values().collect();
        assert_eq!(unique.len(), mapping.len());
    }

    #[test]
    fn order_of_listing_does_not_matter() {
        let one = assign(["a.b", "a-b"], &HashMap::new());
        let two = assign(["a-b", "a.b"], &HashMap::new());
        assert_eq!(one, two);
    }

    #[test]
    fn previous_names_survive_a_refresh() {
        let first = assign(["a.b"], &HashMap::new());
        assert_eq!(first["a.b"], "a_b");
        // A new tool `a-b` sorts before `a.b`, but `a.b` keeps `a_b`.
        let previous: HashMap<String, String> = first.into_iter().collect();
        let second = assign(["a-b", "a.b"], &previous);
        assert_eq!(second["a.b"], "a_b");
        assert_eq!(second["a-b"], "a_b_2");
    }

    #[test]
    fn a_new_valid_name_wins_over_a_previous_sanitized_one() {
        let previous: HashMap<String, String> = [("a-b".to_owned(), "a_b".to_owned())].into();
        let mapping = assign(["a-b", "a_b"], &previous);
        assert_eq!(mapping["a_b"], "a_b");
        assert_eq!(mapping["a-b"], "a_b_2");
    }
}
