//! The one rule of every segment of a namespace, name or operation id:
//! `[A-Za-z_][A-Za-z0-9_]*`.

/// `true` when `segment` matches `[A-Za-z_][A-Za-z0-9_]*`.
pub(crate) fn valid_segment(segment: &str) -> bool {
    let mut chars = segment.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}
