//! Finding operations: every HTTP operation of the document's `paths`, in naming order,
//! skipping path items that are not objects and opkit's `POST` aliases.

use super::Found;
use super::served;
use crate::openapi::document::{SpecVersion, join_pointer};
use crate::openapi::error::SkippedOperation;
use crate::openapi::refs::Resolver;
use opkit::schema::json_type_name;
use serde_json::Value;

/// The HTTP methods of a path item, in the order used for naming.
const METHODS: [&str; 9] = [
    "get", "put", "post", "delete", "options", "head", "patch", "trace", "query",
];

/// The document's operations, paths sorted, methods in [`METHODS`] order then the 3.2
/// `additionalOperations` sorted; a path item that cannot be read is `skipped`.
pub(super) fn find_operations<'a>(
    resolver: Resolver<'a>,
    skipped: &mut Vec<SkippedOperation>,
) -> Vec<Found<'a>> {
    let mut found = Vec::new();
    let Some(Value::Object(paths)) = resolver.root.get("paths") else {
        return found;
    };
    let mut keys: Vec<&String> = paths.keys().collect();
    keys.sort();
    for path in keys {
        if !path.starts_with('/') {
            continue; // `x-` extensions and malformed keys
        }
        let pointer = join_pointer("/paths", path);
        let (item, item_pointer) = match resolver.deref(&paths[path.as_str()], &pointer) {
            Ok((item, item_pointer, _)) if item.is_object() => (item, item_pointer),
            Ok((item, item_pointer, _)) => {
                skipped.push(SkippedOperation {
                    method: "*".into(),
                    path: path.clone(),
                    pointer: item_pointer,
                    reason: format!(
                        "a path item must be an object, found {}",
                        json_type_name(item)
                    ),
                });
                continue;
            }
            Err(error) => {
                skipped.push(SkippedOperation {
                    method: "*".into(),
                    path: path.clone(),
                    pointer: error.pointer,
                    reason: error.message,
                });
                continue;
            }
        };
        path_item_operations(resolver, path, item, &item_pointer, &mut found);
    }
    found
}

/// The operations of one path item.
fn path_item_operations<'a>(
    resolver: Resolver<'a>,
    path: &str,
    item: &'a Value,
    item_pointer: &str,
    found: &mut Vec<Found<'a>>,
) {
    for method in METHODS {
        if method == "query" && resolver.version < SpecVersion::V3_2 {
            continue;
        }
        if let Some(operation) = item.get(method) {
            if served::is_alias(operation) {
                // opkit documents the `POST` twin of a `GET` operation: the canonical
                // operation is imported instead.
                continue;
            }
            found.push(Found {
                method: method.to_owned(),
                path: path.to_owned(),
                pointer: join_pointer(item_pointer, method),
                operation,
                path_item: item,
                path_item_pointer: item_pointer.to_owned(),
            });
        }
    }
    if resolver.version >= SpecVersion::V3_2
        && let Some(Value::Object(extra)) = item.get("additionalOperations")
    {
        let mut methods: Vec<&String> = extra.keys().collect();
        methods.sort();
        for method in methods {
            found.push(Found {
                method: method.clone(),
                path: path.to_owned(),
                pointer: join_pointer(&join_pointer(item_pointer, "additionalOperations"), method),
                operation: &extra[method.as_str()],
                path_item: item,
                path_item_pointer: item_pointer.to_owned(),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::document;
    use super::*;
    use serde_json::json;

    #[test]
    fn operations_in_order_without_aliases_and_bad_path_items_skipped() {
        let doc = document(
            json!({"openapi": "3.2.0", "info": {"title": "t", "version": "1"}, "paths": {
                "/b": {"post": {}, "get": {}, "query": {},
                    "additionalOperations": {"PURGE": {}, "COPY": {}}},
                "/a": {"get": {"x-opkit-id": "a.b", "x-opkit-kind": "QUERY", "x-opkit-alias": true}, "put": {}},
                "/c": [],
                "x-extension": {"get": {}}
            }}),
        );
        let resolver = Resolver {
            root: &doc.root,
            version: doc.version,
        };
        let mut skipped = Vec::new();
        let found = find_operations(resolver, &mut skipped);
        let listed: Vec<_> = found
            .iter()
            .map(|op| format!("{} {}", op.method, op.path))
            .collect();
        assert_eq!(
            listed,
            [
                "put /a", "get /b", "post /b", "query /b", "COPY /b", "PURGE /b"
            ]
        );
        assert_eq!(found[5].pointer, "/paths/~1b/additionalOperations/PURGE");
        assert_eq!(found[5].path_item_pointer, "/paths/~1b");
        assert_eq!(skipped.len(), 1);
        assert_eq!(
            (skipped[0].path.as_str(), skipped[0].pointer.as_str()),
            ("/c", "/paths/~1c")
        );
    }
}
