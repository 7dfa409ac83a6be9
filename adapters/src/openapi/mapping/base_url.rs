//! Base URLs: the server an operation's path is appended to — the options' `base_url`, else
//! the first of the operation's, path item's or document's `servers` (see
//! [`crate::openapi::servers`]).

use super::Found;
use crate::openapi::document::{Document, join_pointer};
use crate::openapi::error::MapError;
use crate::openapi::options::OpenApiOptions;
use crate::openapi::servers;
use serde_json::{Map, Value};

/// The base URL (without a trailing `/`) of the operation `op` (whose object is `operation`).
pub(super) fn operation_base_url(
    doc: &Document,
    op: &Found<'_>,
    operation: &Map<String, Value>,
    options: &OpenApiOptions,
) -> Result<String, MapError> {
    if let Some(base) = &options.base_url {
        return Ok(servers::trim_base(base));
    }
    let empty = Value::Array(Vec::new());
    let candidates = [
        (
            operation.get("servers").unwrap_or(&empty),
            join_pointer(&op.pointer, "servers"),
        ),
        (
            op.path_item.get("servers").unwrap_or(&empty),
            join_pointer(&op.path_item_pointer, "servers"),
        ),
        (
            doc.root.get("servers").unwrap_or(&empty),
            "/servers".to_owned(),
        ),
    ];
    servers::base_url(
        &candidates,
        &options.server_variables,
        doc.location.as_ref(),
    )
}

#[cfg(test)]
mod tests {
    use super::super::tests::{document, found};
    use super::*;
    use crate::openapi::refs::Resolver;
    use serde_json::json;

    #[test]
    fn operation_then_path_item_then_root_servers_and_the_options_win() {
        let doc = document(
            json!({"openapi": "3.1.0", "info": {"title": "t", "version": "1"},
            "servers": [{"url": "http://127.0.0.1:1/root"}],
            "paths": {
                "/a": {"servers": [{"url": "http://127.0.0.1:2/item/"}],
                    "get": {"servers": [{"url": "http://127.0.0.1:3/op"}]}, "put": {}},
                "/b": {"get": {}}
            }}),
        );
        let resolver = Resolver {
            root: &doc.root,
            version: doc.version,
        };
        let base = |path: &str, method: &str, options: &OpenApiOptions| {
            let op = found(resolver, path, method);
            operation_base_url(&doc, &op, op.operation.as_object().unwrap(), options).unwrap()
        };
        let options = OpenApiOptions::new("t");
        assert_eq!(base("/a", "get", &options), "http://127.0.0.1:3/op");
        assert_eq!(base("/a", "put", &options), "http://127.0.0.1:2/item");
        assert_eq!(base("/b", "get", &options), "http://127.0.0.1:1/root");
        let options = OpenApiOptions::new("t").base_url("http://127.0.0.1:4/given/");
        assert_eq!(base("/a", "get", &options), "http://127.0.0.1:4/given");
    }
}
