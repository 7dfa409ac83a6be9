//! A linear pre-check of how deep a YAML document nests flow collections (`[..]`, `{..}`).
//!
//! The YAML parser reads a whole document before it enforces its recursion limit, in time that
//! grows with the square of the flow nesting: a few hundred kilobytes of `[` would keep an
//! import busy for hours. [`check_flow_depth`] refuses such a document first, in one pass.
//!
//! The scan is deliberately rough but never stricter than YAML itself: an opening bracket
//! counts only where a flow collection can start (at the start of a line or a value, or inside
//! another flow collection, where plain scalars cannot contain brackets); quoted scalars and
//! comments are skipped. A bracket inside a plain scalar such as `summary: see [1` is text.

/// How deep flow collections may nest: the YAML parser's own recursion limit.
pub(crate) const MAX_YAML_FLOW_DEPTH: usize = 128;

/// `Err` with a message naming the limit when flow collections nest deeper than `limit`.
pub(crate) fn check_flow_depth(text: &str, limit: usize) -> Result<(), String> {
    let bytes = text.as_bytes();
    let mut depth = 0usize;
    // Whether the next significant byte starts a value (a flow collection or a quoted scalar
    // may begin there).
    let mut value_start = true;
    let mut index = 0;
    while index < bytes.len() {
        let byte = bytes[index];
        match byte {
            b'\n' => value_start = true,
            b' ' | b'\t' | b'\r' => {}
            b'#' if index == 0 || matches!(bytes[index - 1], b' ' | b'\t' | b'\n') => {
                index = skip_until(bytes, index, b'\n');
                continue;
            }
            b'[' | b'{' if value_start || depth > 0 => {
                depth += 1;
                if depth > limit {
                    return Err(format!(
                        "flow collections ([..], {{..}}) nest deeper than {limit} levels \
                         (found at byte {index}); refused before parsing"
                    ));
                }
                value_start = true;
            }
            b']' | b'}' if depth > 0 => {
                depth -= 1;
                value_start = false;
            }
            b'"' if value_start => {
                index = skip_double_quoted(bytes, index + 1);
                value_start = false;
                continue;
            }
            b'\'' if value_start => {
                index = skip_single_quoted(bytes, index + 1);
                value_start = false;
                continue;
            }
            b':' | b',' | b'-' | b'?' => value_start = true,
            _ => value_start = false,
        }
        index += 1;
    }
    Ok(())
}

/// The index just past the first `stop` at or after `from` (or the end).
fn skip_until(bytes: &[u8], from: usize, stop: u8) -> usize {
    bytes[from..]
        .iter()
        .position(|&byte| byte == stop)
        .map_or(bytes.len(), |offset| from + offset)
}

/// The index just past the closing `"` of a double-quoted scalar starting at `from`.
fn skip_double_quoted(bytes: &[u8], mut from: usize) -> usize {
    while from < bytes.len() {
        match bytes[from] {
            b'\\' => from += 2,
            b'"' => return from + 1,
            _ => from += 1,
        }
    }
    bytes.len()
}

/// The index just past the closing `'` of a single-quoted scalar starting at `from` (`''` is an
/// escaped quote).
fn skip_single_quoted(bytes: &[u8], mut from: usize) -> usize {
    while from < bytes.len() {
        if bytes[from] == b'\'' {
            if bytes.get(from + 1) == Some(&b'\'') {
                from += 2;
                continue;
            }
            return from + 1;
        }
        from += 1;
    }
    bytes.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested(levels: usize) -> String {
        format!("a: {}0{}\n", "[".repeat(levels), "]".repeat(levels))
    }

    #[test]
    fn nesting_up_to_the_limit_passes_and_deeper_is_refused() {
        assert_eq!(check_flow_depth(&nested(128), 128), Ok(()));
        let error = check_flow_depth(&nested(129), 128).unwrap_err();
        assert!(error.contains("128 levels"), "{error}");
        assert!(check_flow_depth(&"{".repeat(1_000_000), 128).is_err());
    }

    #[test]
    fn brackets_in_text_quotes_and_comments_do_not_count() {
        let text = format!(
            "summary: see [1 and {{2\npattern: '^[a-z]+$'\nquoted: \"{}\"\nsingle: '{}''{}'\n# {}\nlist:\n  - [a, {{b: [c]}}]\n",
            "[".repeat(500),
            "{".repeat(300),
            "[".repeat(300),
            "[".repeat(500)
        );
        assert_eq!(check_flow_depth(&text, 128), Ok(()));
    }

    #[test]
    fn block_sequences_and_mappings_are_not_flow_collections() {
        let mut text = String::new();
        for level in 0..300 {
            text.push_str(&"  ".repeat(level));
            text.push_str("- key:\n");
        }
        assert_eq!(check_flow_depth(&text, 128), Ok(()));
    }
}
