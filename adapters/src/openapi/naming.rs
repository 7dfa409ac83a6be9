//! Operation names: `operationId` sanitized to `[A-Za-z_][A-Za-z0-9_]*`, or one synthesized
//! from the method and path; collisions resolved deterministically.
//!
//! * Sanitizing keeps ASCII letters, digits and `_`, turns every run of other characters
//!   (`.`, `-`, `/`, spaces, non-ASCII) into one `_`, trims `_` at both ends (unless nothing
//!   else is left), and prefixes `_` when the result starts with a digit. Case is kept:
//!   `getPetById` stays `getPetById`, `pets/list-all` becomes `pets_list_all`.
//! * Without a usable `operationId`: `<method>_<path>`, where each literal path segment is
//!   sanitized and each `{param}` becomes `by_<param>` (`GET /pets/{petId}` →
//!   `get_pets_by_petId`; `GET /` → `get`).
//! * Collisions: operations are numbered in document order made deterministic (paths
//!   sorted byte-wise, then methods in the order get, put, post, delete, options, head,
//!   patch, trace, query, then `additionalOperations` by name). A name claimed once is kept;
//!   a name claimed several times is kept by the first claimant and the others get `_2`,
//!   `_3`, ... (skipping names already taken by anyone).

use std::collections::{BTreeMap, HashSet};

/// Sanitizes a free-form identifier; `None` when nothing usable is left.
pub(crate) fn sanitize(raw: &str) -> Option<String> {
    let mut out = String::with_capacity(raw.len());
    let mut pending_separator = false;
    for c in raw.chars() {
        if c.is_ascii_alphanumeric() || c == '_' {
            if pending_separator && !out.is_empty() && !out.ends_with('_') {
                out.push('_');
            }
            pending_separator = false;
            out.push(c);
        } else {
            pending_separator = true;
        }
    }
    let trimmed = out.trim_matches('_');
    let mut name = if trimmed.is_empty() {
        out.clone()
    } else {
        trimmed.to_owned()
    };
    if name.is_empty() {
        return None;
    }
    if name.starts_with(|c: char| c.is_ascii_digit()) {
        name.insert(0, '_');
    }
    Some(name)
}

/// `<method>_<path>` with `{param}` → `by_<param>`.
pub(crate) fn synthesize(method: &str, path: &str) -> String {
    let mut parts = vec![method.to_ascii_lowercase()];
    for segment in path.split('/').filter(|segment| !segment.is_empty()) {
        // A segment may mix literals and templates: `{name}.{ext}`.
        let mut literal = String::new();
        let mut rest = segment;
        while let Some(open) = rest.find('{') {
            literal.push_str(&rest[..open]);
            let after = &rest[open + 1..];
            let close = after.find('}').unwrap_or(after.len());
            if let Some(clean) = sanitize(&literal) {
                parts.push(clean);
            }
            literal.clear();
            if let Some(param) = sanitize(&after[..close]) {
                parts.push(format!("by_{param}"));
            }
            rest = after.get(close + 1..).unwrap_or("");
        }
        literal.push_str(rest);
        if let Some(clean) = sanitize(&literal) {
            parts.push(clean);
        }
    }
    sanitize(&parts.join("_")).unwrap_or_else(|| method.to_ascii_lowercase())
}

/// The base name of an operation.
pub(crate) fn base_name(operation_id: Option<&str>, method: &str, path: &str) -> String {
    operation_id
        .and_then(sanitize)
        .unwrap_or_else(|| synthesize(method, path))
}

/// Final names for base names given in deterministic order.
pub(crate) fn dedupe(bases: &[String]) -> Vec<String> {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for base in bases {
        *counts.entry(base).or_default() += 1;
    }
    let mut taken: HashSet<String> = counts
        .iter()
        .filter(|(_, count)| **count == 1)
        .map(|(base, _)| (*base).to_owned())
        .collect();
    let mut first_claimed: HashSet<&str> = HashSet::new();
    bases
        .iter()
        .map(|base| {
            if counts[base.as_str()] == 1 {
                return base.clone();
            }
            if first_claimed.insert(base) && taken.insert(base.clone()) {
                return base.clone();
            }
            let mut n = 2;
            loop {
                let candidate = format!("{base}_{n}");
                if !counts.contains_key(candidate.as_str()) && taken.insert(candidate.clone()) {
                    return candidate;
                }
                n += 1;
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operation_ids_are_sanitized() {
        let cases = [
            ("getPetById", Some("getPetById")),
            ("pets/list-all", Some("pets_list_all")),
            ("pets.list", Some("pets_list")),
            ("  spaced  out ", Some("spaced_out")),
            ("3dModels", Some("_3dModels")),
            ("créer", Some("cr_er")),
            ("__private__", Some("private")),
            ("_", Some("_")),
            ("---", None),
            ("", None),
        ];
        for (raw, expected) in cases {
            assert_eq!(sanitize(raw).as_deref(), expected, "{raw:?}");
        }
    }

    #[test]
    fn names_are_synthesized_from_method_and_path() {
        assert_eq!(synthesize("GET", "/pets/{petId}"), "get_pets_by_petId");
        assert_eq!(synthesize("POST", "/pets"), "post_pets");
        assert_eq!(synthesize("GET", "/"), "get");
        assert_eq!(
            synthesize("DELETE", "/v1/store-items/{item-id}/photos"),
            "delete_v1_store_items_by_item_id_photos"
        );
        assert_eq!(
            synthesize("GET", "/files/{name}.{ext}"),
            "get_files_by_name_by_ext"
        );
        assert_eq!(
            synthesize("GET", "/report.{format}"),
            "get_report_by_format"
        );
        assert_eq!(base_name(Some("!!"), "GET", "/a"), "get_a");
        assert_eq!(base_name(Some("listPets"), "GET", "/a"), "listPets");
        for name in ["get_pets_by_petId", "get", "_3dModels"] {
            assert!(name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'));
        }
    }

    #[test]
    fn collisions_are_resolved_in_order() {
        let bases: Vec<String> = ["list", "list", "get", "list_2", "list"]
            .iter()
            .map(|s| (*s).to_owned())
            .collect();
        // `list_2` is a real name elsewhere, so the second `list` skips it.
        assert_eq!(
            dedupe(&bases),
            ["list", "list_3", "get", "list_2", "list_4"]
        );
        let again = dedupe(&bases);
        assert_eq!(again, dedupe(&bases), "deterministic");
    }
}
