//! The `http(..)` argument: the REST route an operation is also served at,
//! `http(method = "PATCH", path = "/todos/{id}", status = 200, body = "data",
//! location = "/todos/{id}", body_limit = "5MB")`.

use crate::errors::Errors;
use proc_macro2::Span;
use syn::punctuated::Punctuated;
use syn::{Expr, ExprLit, Lit, LitStr, Meta, Token};

const HTTP_KEYS: &[&str] = &["method", "path", "status", "body", "location", "body_limit"];
const METHODS: &[&str] = &["GET", "POST", "PUT", "PATCH", "DELETE"];

/// A checked `http(..)`.
pub(crate) struct HttpArgs {
    pub method: String,
    pub path: LitStr,
    pub status: u16,
    pub envelope: bool,
    pub location: Option<LitStr>,
    pub body_limit: Option<usize>,
}

/// Parses `http(..)`, recording every problem in `errors`.
pub(crate) fn parse_http(meta: &Meta, errors: &Errors) -> Option<HttpArgs> {
    let example = "`http(method = \"PATCH\", path = \"/todos/{id}\")`";
    let Meta::List(list) = meta else {
        errors.spanned(meta, format_args!("`http` takes a list: {example}"));
        return None;
    };
    let entries = match list.parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated) {
        Ok(entries) => entries,
        Err(error) => {
            errors.push(error);
            return None;
        }
    };
    let (mut method, mut path, mut status, mut envelope, mut location, mut limit) =
        (None, None, None, false, None, None);
    let before = errors.count();
    for entry in &entries {
        let key = entry
            .path()
            .get_ident()
            .map(ToString::to_string)
            .unwrap_or_default();
        let Some((span, value)) = value_of(entry, errors) else {
            continue;
        };
        match (key.as_str(), value) {
            ("method", Lit::Str(lit)) => {
                let upper = lit.value().to_ascii_uppercase();
                if METHODS.contains(&upper.as_str()) {
                    method = Some(upper);
                } else {
                    errors.at(span, format_args!("`{}` is not a method a route takes: use one of {}", lit.value(), METHODS.join(", ")));
                }
            }
            ("path", Lit::Str(lit)) => {
                if let Err(message) = check_path(&lit.value()) {
                    errors.at(span, message);
                } else {
                    path = Some(lit);
                }
            }
            ("status", Lit::Int(int)) => match int.base10_parse::<u16>() {
                Ok(code @ 200..=299) => status = Some(code),
                _ => errors.at(span, "`status` is the status of a success: a number from 200 to 299, e.g. `status = 201`"),
            },
            ("body", Lit::Str(lit)) => match lit.value().as_str() {
                "data" => envelope = false,
                "envelope" => envelope = true,
                other => errors.at(span, format_args!("`body = \"{other}\"`: write `body = \"data\"` (the bare data, the default) or `body = \"envelope\"`")),
            },
            ("location", Lit::Str(lit)) => location = Some(lit),
            ("body_limit", Lit::Str(lit)) => match parse_size(&lit.value()) {
                Ok(bytes) => limit = Some(bytes),
                Err(message) => errors.at(span, message),
            },
            (known, _) if HTTP_KEYS.contains(&known) => {
                let form = match known {
                    "status" => "a number: `status = 201`",
                    _ => "a string literal",
                };
                errors.at(span, format_args!("`{known}` takes {form}"));
            }
            (other, _) => errors.spanned(
                entry.path(),
                format_args!("unknown key `{other}` in `http(..)`; expected one of: {}", HTTP_KEYS.join(", ")),
            ),
        }
    }
    let (Some(method), Some(path)) = (method, path) else {
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
        status: status.unwrap_or(200),
        envelope,
        location,
        body_limit: limit,
    })
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
    for segment in path.split('/') {
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
