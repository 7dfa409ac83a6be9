//! JSON Pointer tokens (RFC 6901): the one place a token is escaped (`~` → `~0`, `/` → `~1`)
//! and unescaped, for every pointer opkit writes or reads (violation paths, `$ref`s,
//! document locations).
//!
//! ```
//! use opkit::schema::pointer;
//! let mut at = String::new();
//! pointer::push(&mut at, "paths");
//! pointer::push(&mut at, "/pets/{id}");
//! assert_eq!(at, "/paths/~1pets~1{id}");
//! assert_eq!(pointer::unescape("~1pets~1{id}"), "/pets/{id}");
//! assert_eq!(pointer::escape("a~b"), "a~0b");
//! ```

use std::borrow::Cow;

/// `token` escaped for a pointer: `~` as `~0`, then `/` as `~1`.
pub fn escape(token: &str) -> Cow<'_, str> {
    if token.contains(['~', '/']) {
        Cow::Owned(token.replace('~', "~0").replace('/', "~1"))
    } else {
        Cow::Borrowed(token)
    }
}

/// A pointer's `token` as the key it names: `~1` as `/`, then `~0` as `~`.
pub fn unescape(token: &str) -> Cow<'_, str> {
    if token.contains('~') {
        Cow::Owned(token.replace("~1", "/").replace("~0", "~"))
    } else {
        Cow::Borrowed(token)
    }
}

/// Appends `/` and `token`, escaped, to `pointer`.
pub fn push(pointer: &mut String, token: &str) {
    pointer.push('/');
    for character in token.chars() {
        match character {
            '~' => pointer.push_str("~0"),
            '/' => pointer.push_str("~1"),
            other => pointer.push(other),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_round_trips_and_orders_the_replacements() {
        for token in ["", "plain", "a/b", "a~b", "~1", "~01", "/~/"] {
            assert_eq!(unescape(&escape(token)), token);
            let mut pointer = String::new();
            push(&mut pointer, token);
            assert_eq!(pointer, format!("/{}", escape(token)));
        }
        // `~01` is `~1` (not `/`): `~1` is read before `~0`.
        assert_eq!(unescape("~01"), "~1");
    }
}
