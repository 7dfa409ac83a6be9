//! Server URLs: the base URL each operation's path is appended to.
//!
//! The options' `base_url` wins for every operation. Otherwise the first entry of the
//! operation's `servers`, else the path item's, else the root's, else `/` (the default of the
//! specification); `{variables}` are substituted with the options' values or their
//! `default`; a relative URL is resolved against the URL the document was fetched from (and
//! is an error for a document read from a string or file).

use super::document::join_pointer;
use super::error::MapError;
use opkit::schema::json_type_name;
use serde_json::Value;
use std::collections::BTreeMap;
use url::Url;

/// The base URL (without a trailing `/`) for an operation.
pub(crate) fn base_url(
    candidates: &[(&Value, String)],
    variables: &BTreeMap<String, String>,
    location: Option<&Url>,
) -> Result<String, MapError> {
    let chosen = candidates
        .iter()
        .find_map(|(servers, pointer)| match servers {
            Value::Array(list) if !list.is_empty() => Some((&list[0], join_pointer(pointer, "0"))),
            _ => None,
        });
    let (template, pointer, server) = match chosen {
        Some((server, pointer)) => {
            let url = server
                .get("url")
                .ok_or_else(|| MapError::new(&pointer, "a server needs a `url`"))?;
            let url = url.as_str().ok_or_else(|| {
                MapError::new(
                    join_pointer(&pointer, "url"),
                    format!(
                        "a server `url` must be a string, found {}",
                        json_type_name(url)
                    ),
                )
            })?;
            (url.to_owned(), join_pointer(&pointer, "url"), Some(server))
        }
        None => ("/".to_owned(), "/servers".to_owned(), None),
    };
    let url = substitute(&template, &pointer, server, variables)?;
    let absolute = match Url::parse(&url) {
        Ok(absolute) => absolute,
        Err(url::ParseError::RelativeUrlWithoutBase) => match location {
            Some(location) => location.join(&url).map_err(|error| {
                MapError::new(
                    &pointer,
                    format!("the server URL {url:?} does not resolve against {location}: {error}"),
                )
            })?,
            None => {
                return Err(MapError::new(
                    &pointer,
                    format!(
                        "the server URL {url:?} is relative and the document has no URL to resolve it against; set OpenApiOptions::base_url"
                    ),
                ));
            }
        },
        Err(error) => {
            return Err(MapError::new(
                &pointer,
                format!("the server URL {url:?} is invalid: {error}"),
            ));
        }
    };
    if !matches!(absolute.scheme(), "http" | "https") {
        return Err(MapError::new(
            &pointer,
            format!("the server URL {absolute} is not http(s)"),
        ));
    }
    Ok(trim_base(absolute.as_str()))
}

/// Removes a query, fragment and trailing `/` from a base URL.
pub(crate) fn trim_base(url: &str) -> String {
    let end = url.find(['?', '#']).unwrap_or(url.len());
    url[..end].trim_end_matches('/').to_owned()
}

fn substitute(
    template: &str,
    pointer: &str,
    server: Option<&Value>,
    variables: &BTreeMap<String, String>,
) -> Result<String, MapError> {
    let mut out = String::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let Some(close) = after.find('}') else {
            return Err(MapError::new(
                pointer,
                format!("unclosed `{{` in the server URL {template:?}"),
            ));
        };
        let name = &after[..close];
        let value = match variables.get(name) {
            Some(value) => value.clone(),
            None => server
                .and_then(|server| server.get("variables"))
                .and_then(|vars| vars.get(name))
                .and_then(|var| var.get("default"))
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or_else(|| {
                    MapError::new(
                        pointer,
                        format!("the server variable `{name}` has no value and no default"),
                    )
                })?,
        };
        out.push_str(&value);
        rest = &after[close + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn servers_variables_and_relative_urls() {
        let none = BTreeMap::new();
        let root = json!([{"url": "https://{region}.example.com:{port}/v1/", "variables": {"region": {"default": "eu", "enum": ["eu", "us"]}, "port": {"default": "8443"}}}]);
        let candidates = [(&root, "/servers".to_owned())];
        assert_eq!(
            base_url(&candidates, &none, None).unwrap(),
            "https://eu.example.com:8443/v1"
        );
        let us: BTreeMap<String, String> = [("region".to_owned(), "us".to_owned())].into();
        assert_eq!(
            base_url(&candidates, &us, None).unwrap(),
            "https://us.example.com:8443/v1"
        );

        // The operation's servers win over the root's.
        let op = json!([{"url": "http://uploads.example.com"}]);
        let candidates = [
            (&op, "/paths/~1a/get/servers".to_owned()),
            (&root, "/servers".to_owned()),
        ];
        assert_eq!(
            base_url(&candidates, &none, None).unwrap(),
            "http://uploads.example.com"
        );

        // Missing servers mean `/`, relative to the document's URL.
        let empty = json!([]);
        let doc = Url::parse("http://127.0.0.1:8000/openapi.json").unwrap();
        let candidates = [(&empty, "/servers".to_owned())];
        assert_eq!(
            base_url(&candidates, &none, Some(&doc)).unwrap(),
            "http://127.0.0.1:8000"
        );
        let relative = json!([{"url": "/api/v2"}]);
        let candidates = [(&relative, "/servers".to_owned())];
        assert_eq!(
            base_url(&candidates, &none, Some(&doc)).unwrap(),
            "http://127.0.0.1:8000/api/v2"
        );
        let error = base_url(&candidates, &none, None).unwrap_err();
        assert_eq!(error.pointer, "/servers/0/url");
        assert!(error.message.contains("base_url"), "{error:?}");

        let missing = json!([{"url": "http://{host}/"}]);
        let candidates = [(&missing, "/servers".to_owned())];
        let error = base_url(&candidates, &none, None).unwrap_err();
        assert!(error.message.contains("`host`"), "{error:?}");
    }
}
