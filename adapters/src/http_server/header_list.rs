//! Headers whose value is a comma-separated list (RFC 9110 §5.6.1), each item a value with
//! optional `;`-separated parameters: `Accept`, `Accept-Encoding`, `If-None-Match`.

use http::{HeaderMap, HeaderName};

/// The items of every `name` header of `headers`, trimmed, in order (a value that is not
/// visible ASCII is skipped).
pub(crate) fn items(headers: &HeaderMap, name: HeaderName) -> impl Iterator<Item = &str> {
    headers
        .get_all(name)
        .into_iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .map(str::trim)
}

/// An item's value and its `name=value` parameters, each side trimmed (a parameter without
/// `=` is skipped).
pub(crate) fn with_params(item: &str) -> (&str, impl Iterator<Item = (&str, &str)>) {
    let mut parts = item.split(';').map(str::trim);
    let value = parts.next().unwrap_or_default();
    let params = parts.filter_map(|param| {
        let (name, value) = param.split_once('=')?;
        Some((name.trim(), value.trim()))
    });
    (value, params)
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::{HeaderValue, header};

    #[test]
    fn items_span_repeated_headers_and_params_are_trimmed() {
        let mut headers = HeaderMap::new();
        headers.append(
            header::ACCEPT,
            HeaderValue::from_static(" a/b ; q = 0.5 ;x, c"),
        );
        headers.append(header::ACCEPT, HeaderValue::from_static("d;y=\"1\""));
        let read: Vec<(&str, Vec<(&str, &str)>)> = items(&headers, header::ACCEPT)
            .map(|item| {
                let (value, params) = with_params(item);
                (value, params.collect())
            })
            .collect();
        assert_eq!(
            read,
            [
                ("a/b", vec![("q", "0.5")]),
                ("c", vec![]),
                ("d", vec![("y", "\"1\"")]),
            ]
        );
    }
}
