//! Parameter serialization: `style` and `explode` per location, with the OpenAPI defaults
//! (query and cookie: `form`, exploded; path and header: `simple`, not exploded).
//!
//! Values come from the JSON input: strings are used as they are, numbers and booleans in
//! their JSON text, `null` as an empty value; arrays and objects follow the style table of
//! the specification (objects nested inside arrays or objects, which the specification leaves
//! undefined, are sent as their JSON text). Percent-encoding: path values encode everything
//! outside RFC 3986 *unreserved* (so `/`, `?` and `#` cannot change the route); query names
//! and values likewise (`allowReserved` keeps the reserved set as is); the delimiters the
//! style adds (`,` `.` `;` `=` `&`) are literal. Header values are never percent-encoded.

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use serde_json::Value;

/// Everything but RFC 3986 unreserved (`A-Z a-z 0-9 - . _ ~`) is encoded.
const UNRESERVED: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// `allowReserved`: RFC 3986 reserved characters pass too (`:/?#[]@!$&'()*+,;=`), except
/// those that would break the query string itself (`#`, `&`, `=`, `+`).
const ALLOW_RESERVED: &AsciiSet = &UNRESERVED
    .remove(b':')
    .remove(b'/')
    .remove(b'?')
    .remove(b'[')
    .remove(b']')
    .remove(b'@')
    .remove(b'!')
    .remove(b'$')
    .remove(b'\'')
    .remove(b'(')
    .remove(b')')
    .remove(b'*')
    .remove(b',')
    .remove(b';');

/// Where a parameter goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Location {
    Path,
    Query,
    Header,
    Cookie,
    /// 3.2 `in: querystring`: the whole query string.
    QueryString,
}

impl Location {
    pub fn parse(text: &str) -> Option<Self> {
        Some(match text {
            "path" => Self::Path,
            "query" => Self::Query,
            "header" => Self::Header,
            "cookie" => Self::Cookie,
            "querystring" => Self::QueryString,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Path => "path",
            Self::Query => "query",
            Self::Header => "header",
            Self::Cookie => "cookie",
            Self::QueryString => "querystring",
        }
    }

    /// The default style of the location.
    pub fn default_style(self) -> Style {
        match self {
            Self::Path | Self::Header => Style::Simple,
            Self::Query | Self::Cookie | Self::QueryString => Style::Form,
        }
    }
}

/// A serialization style.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Style {
    Matrix,
    Label,
    Simple,
    Form,
    SpaceDelimited,
    PipeDelimited,
    DeepObject,
    /// 3.2 `style: cookie`: like `form`, without percent-encoding.
    Cookie,
}

impl Style {
    pub fn parse(text: &str) -> Option<Self> {
        Some(match text {
            "matrix" => Self::Matrix,
            "label" => Self::Label,
            "simple" => Self::Simple,
            "form" => Self::Form,
            "spaceDelimited" => Self::SpaceDelimited,
            "pipeDelimited" => Self::PipeDelimited,
            "deepObject" => Self::DeepObject,
            "cookie" => Self::Cookie,
            _ => return None,
        })
    }

    /// `true` when the style may be used at `location`.
    pub fn allowed_in(self, location: Location) -> bool {
        match self {
            Self::Matrix | Self::Label => location == Location::Path,
            Self::Simple => matches!(location, Location::Path | Location::Header),
            Self::Form => matches!(location, Location::Query | Location::Cookie),
            Self::SpaceDelimited | Self::PipeDelimited | Self::DeepObject => {
                location == Location::Query
            }
            Self::Cookie => location == Location::Cookie,
        }
    }

    /// The default `explode` of the style.
    pub fn default_explode(self) -> bool {
        matches!(self, Self::Form | Self::Cookie)
    }
}

/// A primitive (or nested) value as text.
fn text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

fn encode(text: &str, set: &'static AsciiSet) -> String {
    utf8_percent_encode(text, set).to_string()
}

/// The entries of an array or object value: `(key, text)` pairs (keys `None` for arrays).
enum Shape {
    Primitive(String),
    Array(Vec<String>),
    Object(Vec<(String, String)>),
}

fn shape(value: &Value) -> Shape {
    match value {
        Value::Array(items) => Shape::Array(items.iter().map(text).collect()),
        Value::Object(map) => {
            Shape::Object(map.iter().map(|(k, v)| (k.clone(), text(v))).collect())
        }
        other => Shape::Primitive(text(other)),
    }
}

/// Serializes a path parameter: the text that replaces `{name}` (already percent-encoded).
pub(crate) fn path(name: &str, value: &Value, style: Style, explode: bool) -> String {
    let enc = |s: &str| encode(s, UNRESERVED);
    let name = enc(name);
    match (style, shape(value)) {
        (Style::Label, Shape::Primitive(v)) => format!(".{}", enc(&v)),
        (Style::Label, Shape::Array(items)) => {
            let sep = if explode { "." } else { "," };
            format!(
                ".{}",
                items.iter().map(|v| enc(v)).collect::<Vec<_>>().join(sep)
            )
        }
        (Style::Label, Shape::Object(pairs)) => {
            if explode {
                format!(
                    ".{}",
                    pairs
                        .iter()
                        .map(|(k, v)| format!("{}={}", enc(k), enc(v)))
                        .collect::<Vec<_>>()
                        .join(".")
                )
            } else {
                format!(
                    ".{}",
                    pairs
                        .iter()
                        .flat_map(|(k, v)| [enc(k), enc(v)])
                        .collect::<Vec<_>>()
                        .join(",")
                )
            }
        }
        (Style::Matrix, Shape::Primitive(v)) => {
            if value.is_null() {
                format!(";{name}")
            } else {
                format!(";{name}={}", enc(&v))
            }
        }
        (Style::Matrix, Shape::Array(items)) => {
            if explode {
                items
                    .iter()
                    .map(|v| format!(";{name}={}", enc(v)))
                    .collect()
            } else {
                format!(
                    ";{name}={}",
                    items.iter().map(|v| enc(v)).collect::<Vec<_>>().join(",")
                )
            }
        }
        (Style::Matrix, Shape::Object(pairs)) => {
            if explode {
                pairs
                    .iter()
                    .map(|(k, v)| format!(";{}={}", enc(k), enc(v)))
                    .collect()
            } else {
                format!(
                    ";{name}={}",
                    pairs
                        .iter()
                        .flat_map(|(k, v)| [enc(k), enc(v)])
                        .collect::<Vec<_>>()
                        .join(",")
                )
            }
        }
        // `simple` (and anything else, which mapping rejects for paths).
        (_, shape) => simple(shape, explode, enc),
    }
}

fn simple(shape: Shape, explode: bool, enc: impl Fn(&str) -> String) -> String {
    match shape {
        Shape::Primitive(v) => enc(&v),
        Shape::Array(items) => items.iter().map(|v| enc(v)).collect::<Vec<_>>().join(","),
        Shape::Object(pairs) => {
            if explode {
                pairs
                    .iter()
                    .map(|(k, v)| format!("{}={}", enc(k), enc(v)))
                    .collect::<Vec<_>>()
                    .join(",")
            } else {
                pairs
                    .iter()
                    .flat_map(|(k, v)| [enc(k), enc(v)])
                    .collect::<Vec<_>>()
                    .join(",")
            }
        }
    }
}

/// Serializes a header parameter value (`simple` style, never percent-encoded).
pub(crate) fn header(value: &Value, explode: bool) -> String {
    simple(shape(value), explode, str::to_owned)
}

/// Serializes a query parameter: the `name=value` pieces to join with `&` (encoded).
pub(crate) fn query(
    name: &str,
    value: &Value,
    style: Style,
    explode: bool,
    allow_reserved: bool,
) -> Vec<String> {
    let set = if allow_reserved {
        ALLOW_RESERVED
    } else {
        UNRESERVED
    };
    let enc = |s: &str| encode(s, set);
    let key = encode(name, UNRESERVED);
    match (style, shape(value)) {
        (Style::DeepObject, Shape::Object(pairs)) => pairs
            .iter()
            .map(|(k, v)| format!("{}={}", encode(&format!("{name}[{k}]"), UNRESERVED), enc(v)))
            .collect(),
        (
            Style::SpaceDelimited | Style::PipeDelimited,
            shape @ (Shape::Array(_) | Shape::Object(_)),
        ) if !explode => {
            let sep = if style == Style::SpaceDelimited {
                "%20"
            } else {
                "%7C"
            };
            let parts: Vec<String> = match shape {
                Shape::Array(items) => items.iter().map(|v| enc(v)).collect(),
                Shape::Object(pairs) => pairs.iter().flat_map(|(k, v)| [enc(k), enc(v)]).collect(),
                Shape::Primitive(_) => unreachable!(),
            };
            vec![format!("{key}={}", parts.join(sep))]
        }
        (_, Shape::Primitive(v)) => vec![format!("{key}={}", enc(&v))],
        (_, Shape::Array(items)) => {
            if explode {
                items.iter().map(|v| format!("{key}={}", enc(v))).collect()
            } else {
                vec![format!(
                    "{key}={}",
                    items.iter().map(|v| enc(v)).collect::<Vec<_>>().join(",")
                )]
            }
        }
        (_, Shape::Object(pairs)) => {
            if explode {
                pairs
                    .iter()
                    .map(|(k, v)| format!("{}={}", encode(k, UNRESERVED), enc(v)))
                    .collect()
            } else {
                vec![format!(
                    "{key}={}",
                    pairs
                        .iter()
                        .flat_map(|(k, v)| [enc(k), enc(v)])
                        .collect::<Vec<_>>()
                        .join(",")
                )]
            }
        }
    }
}

/// Characters a cookie value cannot hold as is (RFC 6265 `cookie-octet` excludes them).
const COOKIE_UNSAFE: &AsciiSet = &percent_encoding::CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b',')
    .add(b';')
    .add(b'\\')
    .add(b'%');

/// Serializes a cookie parameter: the `name=value` pairs of the `Cookie` header.
///
/// `form` style (3.0/3.1) percent-encodes only what a cookie cannot hold; the 3.2 `cookie`
/// style sends the text as it is.
pub(crate) fn cookie(name: &str, value: &Value, style: Style, explode: bool) -> Vec<String> {
    let enc = |s: &str| {
        if style == Style::Cookie {
            s.to_owned()
        } else {
            encode(s, COOKIE_UNSAFE)
        }
    };
    match shape(value) {
        Shape::Primitive(v) => vec![format!("{name}={}", enc(&v))],
        Shape::Array(items) => {
            if explode {
                items.iter().map(|v| format!("{name}={}", enc(v))).collect()
            } else {
                vec![format!(
                    "{name}={}",
                    items.iter().map(|v| enc(v)).collect::<Vec<_>>().join(",")
                )]
            }
        }
        Shape::Object(pairs) => {
            if explode {
                pairs
                    .iter()
                    .map(|(k, v)| format!("{k}={}", enc(v)))
                    .collect()
            } else {
                vec![format!(
                    "{name}={}",
                    pairs
                        .iter()
                        .flat_map(|(k, v)| [k.clone(), enc(v)])
                        .collect::<Vec<_>>()
                        .join(",")
                )]
            }
        }
    }
}

/// Serializes a value as `application/x-www-form-urlencoded` pieces (for `querystring`
/// parameters and form bodies): `form` style, exploded.
pub(crate) fn form_pairs(value: &Value) -> Vec<String> {
    match value {
        Value::Object(map) => map
            .iter()
            .flat_map(|(key, member)| match member {
                Value::Object(_) => vec![format!(
                    "{}={}",
                    encode(key, UNRESERVED),
                    encode(&member.to_string(), UNRESERVED)
                )],
                other => query(key, other, Style::Form, true, false),
            })
            .collect(),
        other => vec![encode(&text(other), UNRESERVED)],
    }
}

/// Percent-encodes free text for a query string (unreserved set).
pub(crate) fn encode_component(text: &str) -> String {
    encode(text, UNRESERVED)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The serialization table of the OpenAPI specification (Style Examples) for `color` with
    /// `"blue"`, `["blue","black","brown"]` and `{"R":100,"G":200,"B":150}`.
    #[test]
    fn the_style_table() {
        let string = json!("blue");
        let array = json!(["blue", "black", "brown"]);
        let object = json!({"R": 100, "G": 200, "B": 150});
        // serde_json keeps object keys sorted unless `preserve_order` is on; build the
        // expected text in the value's own order.
        let keys: Vec<&String> = object.as_object().unwrap().keys().collect();
        let pairs = |kv: &str, pair: &str| {
            keys.iter()
                .map(|k| format!("{k}{kv}{}", object[k.as_str()]))
                .collect::<Vec<_>>()
                .join(pair)
        };
        let p = |value: &Value, style, explode| path("color", value, style, explode);
        let q =
            |value: &Value, style, explode| query("color", value, style, explode, false).join("&");

        // simple
        assert_eq!(p(&string, Style::Simple, false), "blue");
        assert_eq!(p(&array, Style::Simple, false), "blue,black,brown");
        assert_eq!(p(&object, Style::Simple, false), pairs(",", ","));
        assert_eq!(p(&string, Style::Simple, true), "blue");
        assert_eq!(p(&array, Style::Simple, true), "blue,black,brown");
        assert_eq!(p(&object, Style::Simple, true), pairs("=", ","));
        // label
        assert_eq!(p(&string, Style::Label, false), ".blue");
        assert_eq!(p(&array, Style::Label, false), ".blue,black,brown");
        assert_eq!(
            p(&object, Style::Label, false),
            format!(".{}", pairs(",", ","))
        );
        assert_eq!(p(&string, Style::Label, true), ".blue");
        assert_eq!(p(&array, Style::Label, true), ".blue.black.brown");
        assert_eq!(
            p(&object, Style::Label, true),
            format!(".{}", pairs("=", "."))
        );
        // matrix
        assert_eq!(p(&string, Style::Matrix, false), ";color=blue");
        assert_eq!(p(&array, Style::Matrix, false), ";color=blue,black,brown");
        assert_eq!(
            p(&object, Style::Matrix, false),
            format!(";color={}", pairs(",", ","))
        );
        assert_eq!(p(&string, Style::Matrix, true), ";color=blue");
        assert_eq!(
            p(&array, Style::Matrix, true),
            ";color=blue;color=black;color=brown"
        );
        assert_eq!(
            p(&object, Style::Matrix, true),
            format!(";{}", pairs("=", ";"))
        );
        // form
        assert_eq!(q(&string, Style::Form, false), "color=blue");
        assert_eq!(q(&array, Style::Form, false), "color=blue,black,brown");
        assert_eq!(
            q(&object, Style::Form, false),
            format!("color={}", pairs(",", ","))
        );
        assert_eq!(q(&string, Style::Form, true), "color=blue");
        assert_eq!(
            q(&array, Style::Form, true),
            "color=blue&color=black&color=brown"
        );
        assert_eq!(q(&object, Style::Form, true), pairs("=", "&"));
        // spaceDelimited / pipeDelimited
        assert_eq!(
            q(&array, Style::SpaceDelimited, false),
            "color=blue%20black%20brown"
        );
        assert_eq!(
            q(&array, Style::PipeDelimited, false),
            "color=blue%7Cblack%7Cbrown"
        );
        assert_eq!(
            q(&object, Style::SpaceDelimited, false),
            format!("color={}", pairs("%20", "%20"))
        );
        assert_eq!(
            q(&object, Style::PipeDelimited, false),
            format!("color={}", pairs("%7C", "%7C"))
        );
        // deepObject
        let deep: Vec<String> = keys
            .iter()
            .map(|k| format!("color%5B{k}%5D={}", object[k.as_str()]))
            .collect();
        assert_eq!(q(&object, Style::DeepObject, true), deep.join("&"));
        // headers: simple, never encoded
        assert_eq!(header(&string, false), "blue");
        assert_eq!(header(&array, false), "blue,black,brown");
        assert_eq!(header(&object, true), pairs("=", ","));
        // cookies: form
        assert_eq!(cookie("color", &string, Style::Form, true), ["color=blue"]);
        assert_eq!(
            cookie("color", &array, Style::Form, false),
            ["color=blue,black,brown"]
        );
        assert_eq!(
            cookie("color", &array, Style::Form, true),
            ["color=blue", "color=black", "color=brown"]
        );
    }

    #[test]
    fn empty_values_per_style() {
        let null = Value::Null;
        assert_eq!(path("color", &null, Style::Matrix, false), ";color");
        assert_eq!(path("color", &null, Style::Label, false), ".");
        assert_eq!(path("color", &null, Style::Simple, false), "");
        assert_eq!(query("color", &null, Style::Form, true, false), ["color="]);
    }

    #[test]
    fn percent_encoding_rules() {
        // Path values: `/`, `?`, `#` and spaces never reach the route raw.
        assert_eq!(
            path("p", &json!("a/b?c#d e"), Style::Simple, false),
            "a%2Fb%3Fc%23d%20e"
        );
        assert_eq!(
            path("p", &json!("ünï"), Style::Simple, false),
            "%C3%BCn%C3%AF"
        );
        // Query values: `+` and `&` are encoded; unreserved characters are not.
        assert_eq!(
            query("q", &json!("a+b&c=d ~x_y.z-"), Style::Form, true, false),
            ["q=a%2Bb%26c%3Dd%20~x_y.z-"]
        );
        // allowReserved keeps reserved characters (but not the query delimiters).
        assert_eq!(
            query("q", &json!("a/b:c,d&e"), Style::Form, true, true),
            ["q=a/b:c,d%26e"]
        );
        // A value holding the delimiter is encoded; the delimiter is not.
        assert_eq!(
            query("q", &json!(["a,b", "c"]), Style::Form, false, false),
            ["q=a%2Cb,c"]
        );
        // Headers are never encoded.
        assert_eq!(header(&json!("a b/c%20"), false), "a b/c%20");
        // Numbers and booleans use their JSON text.
        assert_eq!(query("n", &json!(1.5), Style::Form, true, false), ["n=1.5"]);
        assert_eq!(
            query("b", &json!(true), Style::Form, true, false),
            ["b=true"]
        );
        // Cookies encode only what a cookie cannot hold.
        assert_eq!(
            cookie("s", &json!("a b;c"), Style::Form, true),
            ["s=a%20b%3Bc"]
        );
        assert_eq!(cookie("s", &json!("a/b"), Style::Cookie, true), ["s=a/b"]);
    }

    #[test]
    fn defaults_and_allowed_styles() {
        assert_eq!(Location::Query.default_style(), Style::Form);
        assert_eq!(Location::Cookie.default_style(), Style::Form);
        assert_eq!(Location::Path.default_style(), Style::Simple);
        assert_eq!(Location::Header.default_style(), Style::Simple);
        assert!(Style::Form.default_explode());
        assert!(!Style::Simple.default_explode());
        assert!(!Style::DeepObject.default_explode());
        assert!(Style::Matrix.allowed_in(Location::Path));
        assert!(!Style::Matrix.allowed_in(Location::Query));
        assert!(!Style::DeepObject.allowed_in(Location::Path));
        assert!(!Style::Form.allowed_in(Location::Header));
        assert!(Style::Simple.allowed_in(Location::Header));
    }

    #[test]
    fn form_pairs_json_stringify_nested_objects() {
        assert_eq!(
            form_pairs(&json!({"a": "x y", "b": [1, 2], "c": {"d": 1}})),
            ["a=x%20y", "b=1", "b=2", "c=%7B%22d%22%3A1%7D"]
        );
    }
}
