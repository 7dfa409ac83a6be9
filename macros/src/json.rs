//! JSON from attribute tokens: how an edge group's keys (`key = "text"`, `key = 3`,
//! `key = [..]`, `key` alone, `key(..)`) travel to the runtime, as JSON text it parses once.

use crate::errors::Errors;
use serde_json::{Map, Number, Value};
use syn::{Expr, ExprArray, ExprLit, ExprUnary, Lit, Meta, UnOp};

/// The JSON object of a group's entries (`name(key = .., ..)`), or `None` (recorded) when one
/// is not a form the group takes.
pub(crate) fn group(meta: &Meta, errors: &Errors) -> Option<Value> {
    let entries = errors.list_entries(
        meta,
        "an edge's options are a list: `name(key = \"value\", flag, nested(key = 1))`",
    )?;
    let mut options = Map::new();
    for entry in &entries {
        let (key, value) = entry_json(entry, errors)?;
        if options.contains_key(&key) {
            errors.spanned(
                entry.path(),
                format_args!("`{key}` is given twice: keep one"),
            );
            return None;
        }
        options.insert(key, value);
    }
    Some(Value::Object(options))
}

/// One entry of a group as a key and its JSON value.
pub(crate) fn entry_json(entry: &Meta, errors: &Errors) -> Option<(String, Value)> {
    let Some(key) = entry.path().get_ident().map(ToString::to_string) else {
        errors.spanned(
            entry.path(),
            "an option is named by one word: `key = value`",
        );
        return None;
    };
    let value = match entry {
        Meta::Path(_) => Value::Bool(true),
        Meta::List(_) => group(entry, errors)?,
        Meta::NameValue(pair) => expr_json(&pair.value, errors)?,
    };
    Some((key, value))
}

/// A literal, a negative number or a list of them as JSON.
fn expr_json(expr: &Expr, errors: &Errors) -> Option<Value> {
    match expr {
        Expr::Lit(ExprLit { lit, .. }) => lit_json(lit, errors),
        Expr::Unary(ExprUnary {
            op: UnOp::Neg(_),
            expr,
            ..
        }) => match &**expr {
            Expr::Lit(ExprLit {
                lit: lit @ (Lit::Int(_) | Lit::Float(_)),
                ..
            }) => match lit_json(lit, errors)? {
                Value::Number(number) => negate(&number).or_else(|| {
                    errors.spanned(lit, "this number cannot travel as JSON");
                    None
                }),
                _ => None,
            },
            other => {
                errors.spanned(other, "write a number after `-`");
                None
            }
        },
        Expr::Array(ExprArray { elems, .. }) => {
            let items: Option<Vec<Value>> =
                elems.iter().map(|item| expr_json(item, errors)).collect();
            items.map(Value::Array)
        }
        other => {
            errors.spanned(
                other,
                "an option's value is a literal (`\"text\"`, a number, `true`/`false`) or a list of them",
            );
            None
        }
    }
}

fn lit_json(lit: &Lit, errors: &Errors) -> Option<Value> {
    let number = |text: &str| -> Option<Value> {
        if let Ok(int) = text.parse::<u64>() {
            return Some(Value::from(int));
        }
        text.parse::<f64>()
            .ok()
            .and_then(Number::from_f64)
            .map(Value::Number)
    };
    match lit {
        Lit::Str(text) => Some(Value::String(text.value())),
        Lit::Bool(flag) => Some(Value::Bool(flag.value)),
        Lit::Int(int) => number(int.base10_digits()),
        Lit::Float(float) => number(float.base10_digits()),
        other => {
            errors.spanned(
                other,
                "an option's value is a string, a number or `true`/`false`",
            );
            None
        }
    }
    .or_else(|| {
        errors.spanned(lit, "this number cannot travel as JSON");
        None
    })
}

/// `-number`.
fn negate(number: &Number) -> Option<Value> {
    if let Some(int) = number.as_u64() {
        return i64::try_from(int).ok().map(|int| Value::from(-int));
    }
    number
        .as_f64()
        .and_then(|float| Number::from_f64(-float))
        .map(Value::Number)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json_of(tokens: proc_macro2::TokenStream) -> Option<String> {
        let meta: Meta = syn::parse2(tokens).unwrap();
        let errors = Errors::new();
        let json = group(&meta, &errors);
        let _ = errors.finish();
        json.map(|json| json.to_string())
    }

    #[test]
    fn every_form_becomes_json() {
        let json = json_of(quote::quote!(grpc(
            method = "Get\"Note\"",
            retries = 3,
            backoff = 1.5,
            offset = -2,
            stream,
            enabled = false,
            tags = ["a", "b"],
            limits(rate = 10)
        )));
        assert_eq!(
            json.unwrap(),
            r#"{"backoff":1.5,"enabled":false,"limits":{"rate":10},"method":"Get\"Note\"","offset":-2,"retries":3,"stream":true,"tags":["a","b"]}"#
        );
    }

    #[test]
    fn a_key_given_twice_or_an_expression_is_refused() {
        assert!(json_of(quote::quote!(grpc(a = 1, a = 2))).is_none());
        assert!(json_of(quote::quote!(grpc(a = foo()))).is_none());
        assert!(json_of(quote::quote!(grpc(a::b = 1))).is_none());
    }
}
