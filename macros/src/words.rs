//! The attribute's words: an argument's key, a misspelling of a known one, a string value.

use crate::errors::Errors;
use syn::{Expr, ExprLit, Lit, LitStr, Meta};

/// The string literal of `key = "value"`.
pub(crate) fn string_value(meta: &Meta, errors: &Errors) -> Option<LitStr> {
    let key = meta_key(meta);
    match meta {
        Meta::NameValue(pair) => match &pair.value {
            Expr::Lit(ExprLit {
                lit: Lit::Str(lit), ..
            }) => Some(lit.clone()),
            other => {
                errors.spanned(
                    other,
                    format_args!("expected a string literal: `{key} = \"...\"`"),
                );
                None
            }
        },
        _ => {
            errors.spanned(
                meta,
                format_args!("`{key}` needs a value: `{key} = \"...\"`"),
            );
            None
        }
    }
}

/// The key of an argument as written (a path's tokens when it is not one word).
pub(crate) fn meta_key(meta: &Meta) -> String {
    let path = meta.path();
    match path.get_ident() {
        Some(ident) => ident.to_string(),
        None => quote::quote!(#path).to_string().replace(' ', ""),
    }
}

/// The accepted key `key` is most likely a misspelling of, if any is close.
pub(crate) fn closest_key(key: &str, keys: &[&'static str]) -> Option<&'static str> {
    keys.iter()
        .copied()
        .filter(|candidate| *candidate != key && edit_distance(key, candidate) <= 2)
        .min_by_key(|candidate| edit_distance(key, candidate))
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut current = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            current.push(
                (previous[j] + cost)
                    .min(previous[j + 1] + 1)
                    .min(current[j] + 1),
            );
        }
        previous = current;
    }
    previous[b.len()]
}
