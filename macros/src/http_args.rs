//! The `http(..)` group: the REST route an operation is also served at,
//! `http(method = "PATCH", path = "/todos/{id}", status = 200, body = "data",
//! location = "/todos/{id}", body_limit = "5MB")`, checked here where the macro can (the
//! signature checks its variables and status against the fn in `signature.rs`). An option
//! the macro does not know travels as it is, for the HTTP server to check when it starts.
//! `body_limit` is in bytes: `KB`, `MB`, `GB` are powers of 10, `KiB`, `MiB`, `GiB` of 2.

use crate::errors::Errors;
use proc_macro2::Span;
use serde_json::{Map, Value};
use syn::{Expr, ExprLit, Lit, LitStr, Meta};

/// The options of `http(..)` the macro checks.
pub(crate) const HTTP_KEYS: &[&str] =
    &["method", "path", "status", "body", "location", "body_limit"];
const METHODS: &[&str] = &["GET", "POST", "PUT", "PATCH", "DELETE"];

/// A checked `http(..)`.
pub(crate) struct HttpArgs {
    pub method: String,
    pub path: LitStr,
    pub status: u16,
    /// Where `status` was written, when it was.
    pub status_span: Option<Span>,
    pub envelope: bool,
    pub location: Option<LitStr>,
    pub body_limit: Option<usize>,
    /// Options the macro does not know, carried for the HTTP server.
    pub other: Map<String, Value>,
}

impl HttpArgs {
    /// The group as the HTTP server reads it: the keys as written, `method` upper case,
    /// `body_limit` in bytes.
    pub(crate) fn to_json(&self) -> Value {
        let mut options = self.other.clone();
        options.insert("method".to_owned(), Value::String(self.method.clone()));
        options.insert("path".to_owned(), Value::String(self.path.value()));
        options.insert("status".to_owned(), Value::from(self.status));
        if self.envelope {
            options.insert("body".to_owned(), Value::String("envelope".to_owned()));
        }
        if let Some(location) = &self.location {
            options.insert("location".to_owned(), Value::String(location.value()));
        }
        if let Some(bytes) = self.body_limit {
            options.insert("body_limit".to_owned(), Value::from(bytes));
        }
        Value::Object(options)
    }
}

/// The `{variables}` of a path or URI template, in order (a `+` before a name is dropped).
pub(crate) fn template_variables(template: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let after = &rest[open + 1..];
        let Some(close) = after.find('}') else {
            break;
        };
        names.push(after[..close].trim_start_matches('+').to_owned());
        rest = &after[close + 1..];
    }
    names
}

/// Parses `http(..)`, recording every problem in `errors`.
pub(crate) fn parse_http(meta: &Meta, errors: &Errors) -> Option<HttpArgs> {
    let example = "`http(method = \"PATCH\", path = \"/todos/{id}\")`";
    let entries = errors.list_entries(meta, format_args!("`http` takes a list: {example}"))?;
    let mut seen = Seen::default();
    let mut other = Map::new();
    let before = errors.count();
    for entry in &entries {
        let key = entry
            .path()
            .get_ident()
            .map(ToString::to_string)
            .unwrap_or_default();
        if !HTTP_KEYS.contains(&key.as_str()) {
            match crate::words::closest_key(&key, HTTP_KEYS) {
                Some(close) => errors.spanned(
                    entry.path(),
                    format_args!(
                        "unknown option `{key}` in `http(..)`\n  help: did you mean `{close}`?"
                    ),
                ),
                None => {
                    if let Some((key, value)) = crate::json::entry_json(entry, errors) {
                        other.insert(key, value);
                    }
                }
            }
            continue;
        }
        if let Some((span, value)) = value_of(entry, errors) {
            seen.take(&key, span, value, errors);
        }
    }
    let (Some(method), Some(path)) = (seen.method, seen.path) else {
        if errors.count() == before {
            errors.spanned(
                meta,
                format_args!("`http(..)` needs a `method` and a `path`: {example}"),
            );
        }
        return None;
    };
    Some(HttpArgs {
        method,
        path,
        status: seen.status.map_or(200, |(code, _)| code),
        status_span: seen.status.map(|(_, span)| span),
        envelope: seen.envelope,
        location: seen.location,
        body_limit: seen.limit,
        other,
    })
}

/// The known options of `http(..)` read so far.
#[derive(Default)]
struct Seen {
    method: Option<String>,
    path: Option<LitStr>,
    status: Option<(u16, Span)>,
    envelope: bool,
    location: Option<LitStr>,
    limit: Option<usize>,
}

impl Seen {
    /// Reads the known option `key` = `value` (written at `span`), recording a bad value.
    fn take(&mut self, key: &str, span: Span, value: Lit, errors: &Errors) {
        match (key, value) {
            ("method", Lit::Str(lit)) => {
                let upper = lit.value().to_ascii_uppercase();
                if METHODS.contains(&upper.as_str()) {
                    self.method = Some(upper);
                } else {
                    errors.at(span, format_args!("`{}` is not a method a route takes: use one of {}", lit.value(), METHODS.join(", ")));
                }
            }
            ("path", Lit::Str(lit)) => {
                if let Err(message) = check_path(&lit.value()) {
                    errors.at(span, message);
                } else {
                    self.path = Some(lit);
                }
            }
            ("status", Lit::Int(int)) => match int.base10_parse::<u16>() {
                Ok(code @ 200..=299) => self.status = Some((code, span)),
                _ => errors.at(span, "`status` is the status of a success: a number from 200 to 299, e.g. `status = 201`"),
            },
            ("body", Lit::Str(lit)) => match lit.value().as_str() {
                "data" => self.envelope = false,
                "envelope" => self.envelope = true,
                other => errors.at(span, format_args!("`body = \"{other}\"`: write `body = \"data\"` (the bare data, the default) or `body = \"envelope\"`")),
            },
            ("location", Lit::Str(lit)) => self.location = Some(lit),
            ("body_limit", Lit::Str(lit)) => match parse_size(&lit.value()) {
                Ok(bytes) => self.limit = Some(bytes),
                Err(message) => errors.at(span, message),
            },
            (known, _) => {
                let form = match known {
                    "status" => "a number: `status = 201`",
                    _ => "a string literal",
                };
                errors.at(span, format_args!("`{known}` takes {form}"));
            }
        }
    }
}

/// The literal of `key = literal`.
fn value_of(entry: &Meta, errors: &Errors) -> Option<(Span, Lit)> {
    match entry {
        Meta::NameValue(pair) => match &pair.value {
            Expr::Lit(ExprLit { lit, .. }) => Some((lit.span(), lit.clone())),
            other => {
                errors.spanned(other, "write a literal here");
                None
            }
        },
        _ => {
            errors.spanned(entry, "write `key = value` here");
            None
        }
    }
}

/// A route path: starts with `/`, and each `{variable}` is a whole segment named like a field.
fn check_path(path: &str) -> Result<(), String> {
    if !path.starts_with('/') {
        return Err(format!(
            "the path `{path}` must start with `/`: e.g. `/todos/{{id}}`"
        ));
    }
    if path == "/ops" || path.starts_with("/ops/") {
        return Err(format!(
            "`{path}` is under `/ops/`, where every operation's RPC route is (`/ops/<id>`): choose a path outside it, e.g. `/todos/{{id}}`"
        ));
    }
    for segment in path.split('/') {
        if let Some(name) = segment.strip_prefix(':') {
            return Err(format!(
                "`{segment}` in `{path}`: a path variable is written `{{{name}}}`, not `:{name}`"
            ));
        }
        if segment.contains(['{', '}']) {
            let name = segment
                .strip_prefix('{')
                .and_then(|rest| rest.strip_suffix('}'))
                .filter(|name| {
                    !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                });
            if name.is_none() {
                return Err(format!(
                    "`{segment}` in `{path}`: a path variable is a whole segment naming an input field, e.g. `/todos/{{id}}`"
                ));
            }
        }
    }
    Ok(())
}

/// `"5MB"`, `"512KiB"`, `"1048576"` in bytes.
fn parse_size(text: &str) -> Result<usize, String> {
    let help = "write the limit as a whole number and a unit: `body_limit = \"5MB\"`, `\"512KiB\"` or `\"1048576\"` (bytes)";
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let Ok(number) = number.parse::<usize>() else {
        return Err(format!("`{text}` is not a size: {help}"));
    };
    let scale: usize = match unit.trim() {
        "" | "B" => 1,
        "KB" => 1_000,
        "KiB" => 1 << 10,
        "MB" => 1_000_000,
        "MiB" => 1 << 20,
        "GB" => 1_000_000_000,
        "GiB" => 1 << 30,
        other => return Err(format!("unknown unit `{other}` in `{text}`: {help}")),
    };
    number
        .checked_mul(scale)
        .filter(|bytes| *bytes > 0)
        .ok_or_else(|| format!("`{text}` is not a usable limit: {help}"))
}
