//! The attribute's arguments: opkit's own (`namespace = "..", name = "..", mutation |
//! subscription, access(scopes = [..], roles = [..]), errors(..), layer = "..", timeout =
//! "..", crate = path`) and the edge groups (`mcp(..)`, `http(..)`, `name(..)`: `edges.rs`).

use crate::errors::Errors;
use crate::kind::Kind;
pub(crate) use crate::segment::valid_segment;
use crate::words::{closest_key, meta_key, string_value};
use proc_macro2::{Span, TokenStream};
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Expr, ExprLit, Lit, LitStr, Meta, Token};

/// Every argument `#[operation(..)]` accepts, and opkit's edge groups, for "expected one of"
/// messages (any other `name(..)` is an edge of the application's).
const KEYS: &[&str] = &[
    "namespace",
    "name",
    "query",
    "mutation",
    "subscription",
    "access",
    "errors",
    "crate",
    "layer",
    "timeout",
    "mcp",
    "http",
];
/// The words of `errors(..)`: the application error kinds (`opkit::ErrorKind`), by their
/// snake_case names, and the variant each names.
const ERROR_KINDS: &[(&str, &str)] = &[
    ("not_found", "NotFound"),
    ("conflict", "Conflict"),
    ("unprocessable", "Unprocessable"),
    ("rate_limited", "RateLimited"),
    ("unauthenticated", "Unauthenticated"),
    ("unavailable", "Unavailable"),
];
const ACCESS_KEYS: &[&str] = &["scopes", "roles"];

/// The parsed arguments. Each is `None` when absent or invalid (the error is recorded).
#[derive(Default)]
pub(crate) struct Args {
    /// The namespace literal (already checked).
    pub namespace: Option<LitStr>,
    /// The name literal (already checked).
    pub name: Option<LitStr>,
    /// The kind flag and where it was written.
    pub kind: Option<(Kind, Span)>,
    pub scopes: Vec<LitStr>,
    pub roles: Vec<LitStr>,
    /// `errors(not_found, ..)`: the `ErrorKind` variants, spanned at the user's words.
    pub errors: Vec<syn::Ident>,
    /// `crate = path`: where the `opkit` crate is.
    pub krate: Option<syn::Path>,
    /// The edge groups: `mcp(..)`, `http(..)` and the application's.
    pub edges: crate::edges::Edges,
    /// `layer = ".."` (repeatable): the named middleware layers the operation asks for.
    pub layers: Vec<LitStr>,
    /// `timeout = ".."`: the per-call timeout, in milliseconds.
    pub timeout_ms: Option<u64>,
    /// `false` when the arguments did not even parse.
    pub parsed: bool,
    /// `true` when `namespace = ..` was written (valid or not).
    pub namespace_given: bool,
    /// `true` when two kinds were given (the error is recorded; kind checks are skipped).
    pub kind_conflict: bool,
}

impl Args {
    pub(crate) fn kind(&self) -> Kind {
        self.kind.map_or(Kind::Query, |(kind, _)| kind)
    }

    /// The path of the runtime's hidden module, e.g. `::opkit::__private`.
    pub(crate) fn private(&self) -> TokenStream {
        match &self.krate {
            Some(path) => quote::quote!(#path::__private),
            None => quote::quote!(::opkit::__private),
        }
    }
}

/// One argument slot; a second value for it is a "given twice" error.
struct Slot<T> {
    key: &'static str,
    value: Option<(Span, T)>,
    /// Set when a second, different value was refused as a conflict (two kinds given).
    conflict: bool,
}

impl<T> Slot<T> {
    fn new(key: &'static str) -> Self {
        Self {
            key,
            value: None,
            conflict: false,
        }
    }

    fn set(&mut self, errors: &Errors, span: Span, value: T) {
        if self.value.is_some() {
            errors.at(
                span,
                format_args!("`{}` is given twice: keep one", self.key),
            );
        } else {
            self.value = Some((span, value));
        }
    }

    fn take(self) -> Option<T> {
        self.value.map(|(_, value)| value)
    }
}

/// Parses and checks the attribute's arguments, recording every problem in `errors`.
pub(crate) fn parse(tokens: TokenStream, errors: &Errors) -> Args {
    let metas = match Punctuated::<Meta, Token![,]>::parse_terminated.parse2(tokens) {
        Ok(metas) => metas,
        Err(error) => {
            errors.push(error);
            return Args::default();
        }
    };
    let mut namespace = Slot::new("namespace");
    let mut name = Slot::new("name");
    let mut kind: Slot<Kind> = Slot::new("kind");
    let mut access = Slot::new("access");
    let mut krate = Slot::new("crate");
    let mut error_kinds = Slot::new("errors");
    let mut timeout = Slot::new("timeout");
    let mut edges = crate::edges::Edges::default();
    let mut layers = Vec::new();
    for meta in &metas {
        let key = meta_key(meta);
        let span = meta.path().span();
        match key.as_str() {
            "namespace" => set_name(&mut namespace, meta, true, errors),
            "name" => set_name(&mut name, meta, false, errors),
            "query" => set_kind(&mut kind, meta, Kind::Query, errors),
            "mutation" => set_kind(&mut kind, meta, Kind::Mutation, errors),
            "subscription" => set_kind(&mut kind, meta, Kind::Subscription, errors),
            "access" => {
                if let Some(rule) = parse_access(meta, errors) {
                    access.set(errors, span, rule);
                }
            }
            "errors" => {
                if let Some(kinds) = parse_error_kinds(meta, errors) {
                    error_kinds.set(errors, span, kinds);
                }
            }
            "layer" => {
                if let Some(lit) = string_value(meta, errors) {
                    if lit.value().is_empty() {
                        errors.at(lit.span(), "`layer` must not be empty: name the middleware layer, e.g. `layer = \"expensive\"`");
                    } else {
                        layers.push(lit);
                    }
                }
            }
            "timeout" => {
                if let Some(lit) = string_value(meta, errors) {
                    match parse_duration_ms(&lit.value()) {
                        Ok(ms) => timeout.set(errors, span, ms),
                        Err(message) => errors.at(lit.span(), message),
                    }
                }
            }
            "crate" => {
                if let Some(path) = crate_path(meta, errors) {
                    krate.set(errors, span, path);
                }
            }
            other if edges.take(other, meta, KEYS, errors) => {}
            _ => errors.spanned(meta.path(), unknown_argument(&key)),
        }
    }
    // A misspelt `namespace` already has its error ("did you mean `namespace`?").
    let namespace_given = metas.iter().any(|meta| {
        meta.path().is_ident("namespace") || closest_key(&meta_key(meta), KEYS) == Some("namespace")
    });
    let kind_conflict = kind.conflict;
    let kind = kind.value.map(|(span, kind)| (kind, span));
    let (scopes, roles) = access.take().unwrap_or_default();
    crate::mcp_args::check_mcp_role(kind, &edges.mcp, errors);
    crate::mcp_args::check_task(kind, &edges.mcp, errors);
    crate::mcp_args::check_complete(&edges.mcp, errors);
    Args {
        namespace: namespace.take().filter(|lit| !lit.value().is_empty()),
        name: name.take().filter(|lit| !lit.value().is_empty()),
        kind,
        scopes,
        roles,
        errors: error_kinds.take().unwrap_or_default(),
        krate: krate.take(),
        edges,
        layers,
        timeout_ms: timeout.take(),
        parsed: true,
        namespace_given,
        kind_conflict,
    }
}

/// `"500ms"`, `"5s"`, `"2m"` or `"1h"` in milliseconds (a whole number and a unit, more
/// than zero).
fn parse_duration_ms(text: &str) -> Result<u64, String> {
    let help = "write the timeout as a whole number and a unit: `timeout = \"500ms\"`, `\"5s\"`, `\"2m\"` or `\"1h\"`";
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let Ok(number) = number.parse::<u64>() else {
        return Err(format!("`{text}` is not a duration: {help}"));
    };
    let scale = match unit.trim() {
        "ms" => 1,
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        other => return Err(format!("unknown unit `{other}` in `{text}`: {help}")),
    };
    match number.checked_mul(scale) {
        Some(0) => Err(format!(
            "a timeout of zero stops every call before it starts: {help}"
        )),
        Some(ms) => Ok(ms),
        None => Err(format!("`{text}` is too long: {help}")),
    }
}

/// `namespace = ".."` or `name = ".."` into its slot; an invalid name is kept as `""` so it
/// still counts as given (its error is recorded).
fn set_name(slot: &mut Slot<LitStr>, meta: &Meta, namespace: bool, errors: &Errors) {
    let Some(lit) = string_value(meta, errors) else {
        return;
    };
    let lit = if check_name(&lit, namespace, errors) {
        lit
    } else {
        LitStr::new("", lit.span())
    };
    slot.set(errors, meta.path().span(), lit);
}

/// [`unknown_key`] of the attribute itself, which also takes the application's edge groups.
fn unknown_argument(key: &str) -> String {
    let message = unknown_key(key, KEYS);
    let (first, help) = message.split_once('\n').unwrap_or((&message, ""));
    let mut message = format!("{first}, or an edge's options as `name(key = value, ..)`");
    if !help.is_empty() {
        message.push('\n');
        message.push_str(help);
    }
    message
}

/// "unknown argument `x`", the accepted ones, and the closest one when it is close.
pub(crate) fn unknown_key(key: &str, keys: &[&'static str]) -> String {
    let list = keys
        .iter()
        .map(|key| format!("`{key}`"))
        .collect::<Vec<_>>()
        .join(", ");
    let mut message = format!("unknown argument `{key}`; expected one of: {list}");
    if let Some(close) = closest_key(key, keys) {
        message.push_str(&format!("\n  help: did you mean `{close}`?"));
    }
    message
}

fn set_kind(slot: &mut Slot<Kind>, meta: &Meta, kind: Kind, errors: &Errors) {
    if !matches!(meta, Meta::Path(_)) {
        errors.spanned(
            meta,
            format_args!("`{0}` takes no value: write `{0}` alone", kind.keyword()),
        );
        return;
    }
    let span = meta.path().span();
    match &slot.value {
        Some((_, first)) if *first == kind => errors.at(
            span,
            format_args!("`{}` is given twice: keep one", kind.keyword()),
        ),
        Some((_, first)) => {
            errors.at(
                span,
                format_args!(
                    "an operation has one kind, but both `{}` and `{}` are given: keep one (a query is the default)",
                    first.keyword(),
                    kind.keyword()
                ),
            );
            slot.conflict = true;
        }
        None => slot.value = Some((span, kind)),
    }
}

/// `errors(not_found, conflict)`: the variants of `opkit::ErrorKind` the words name.
fn parse_error_kinds(meta: &Meta, errors: &Errors) -> Option<Vec<syn::Ident>> {
    let words: Vec<&'static str> = ERROR_KINDS.iter().map(|(word, _)| *word).collect();
    let Meta::List(list) = meta else {
        errors.spanned(
            meta,
            "write the application errors the operation may answer with as a list: `errors(not_found, conflict)`",
        );
        return None;
    };
    let parsed = list.parse_args_with(Punctuated::<syn::Ident, Token![,]>::parse_terminated);
    let idents = match parsed {
        Ok(idents) => idents,
        Err(error) => {
            errors.push(error);
            return None;
        }
    };
    let mut variants = Vec::new();
    for ident in idents {
        let word = ident.to_string();
        match ERROR_KINDS.iter().find(|(known, _)| *known == word) {
            Some((_, variant)) => variants.push(syn::Ident::new(variant, ident.span())),
            None => errors.spanned(&ident, unknown_error_kind(&word, &words)),
        }
    }
    Some(variants)
}

/// "unknown error kind", the words, and the word meant: the closest spelling, or the word
/// of a variant written as in Rust (`NotFound`, `NOT_FOUND` → `not_found`).
fn unknown_error_kind(word: &str, words: &[&'static str]) -> String {
    let snake = snake_case(word);
    match words.iter().find(|known| **known == snake) {
        Some(known) => {
            let list = words
                .iter()
                .map(|word| format!("`{word}`"))
                .collect::<Vec<_>>()
                .join(", ");
            format!(
                "unknown error kind `{word}`: `errors(..)` takes the snake_case words {list}\n  help: did you mean `{known}`?"
            )
        }
        None => unknown_key(word, words).replace("argument", "error kind"),
    }
}

/// `NotFound` → `not_found`, `NOT_FOUND` → `not_found`, `rateLimited` → `rate_limited`.
fn snake_case(word: &str) -> String {
    let mut out = String::with_capacity(word.len() + 4);
    let mut previous_lower = false;
    for c in word.chars() {
        if c.is_ascii_uppercase() {
            if previous_lower {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
            previous_lower = false;
        } else {
            out.push(c);
            previous_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        }
    }
    out
}

/// Checks a namespace (dotted) or name (one segment) against `[A-Za-z_][A-Za-z0-9_]*`;
/// the error points at the literal and suggests a valid spelling.
fn check_name(lit: &LitStr, dotted: bool, errors: &Errors) -> bool {
    let text = lit.value();
    let what = if dotted { "namespace" } else { "name" };
    if text.is_empty() {
        errors.spanned(lit, format_args!("the {what} cannot be empty"));
        return false;
    }
    if !dotted && text.contains('.') {
        errors.spanned(
            lit,
            format_args!(
                "invalid name {text:?}: a name is a single segment without `.`; put the dotted part in the namespace (`namespace = \"a.b\", name = \"c\"`)"
            ),
        );
        return false;
    }
    let bad_segment = text.split('.').find(|segment| !valid_segment(segment));
    let Some(segment) = bad_segment else {
        return true;
    };
    let rule = if dotted {
        "each `.`-separated segment must match `[A-Za-z_][A-Za-z0-9_]*`"
    } else {
        "it must match `[A-Za-z_][A-Za-z0-9_]*`"
    };
    let problem = if segment.is_empty() {
        "an empty segment".to_owned()
    } else {
        format!("segment {segment:?}")
    };
    let suggestion = suggest_name(&text);
    errors.spanned(
        lit,
        format_args!("invalid {what} {text:?} ({problem}): {rule}\n  help: try {suggestion:?}"),
    );
    false
}

/// A valid spelling close to `text`: other characters become `_`, empty segments go away.
pub(crate) fn suggest_name(text: &str) -> String {
    let segments: Vec<String> = text
        .split('.')
        .filter(|segment| !segment.is_empty())
        .map(|segment| {
            let mut fixed: String = segment
                .chars()
                .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
                .collect();
            if fixed.starts_with(|c: char| c.is_ascii_digit()) {
                fixed.insert(0, '_');
            }
            fixed
        })
        .collect();
    if segments.is_empty() {
        "my_operation".to_owned()
    } else {
        segments.join(".")
    }
}

/// `access(scopes = [..], roles = [..])`.
fn parse_access(meta: &Meta, errors: &Errors) -> Option<(Vec<LitStr>, Vec<LitStr>)> {
    let entries = errors.list_entries(
        meta,
        "`access` takes a list: `access(scopes = [\"users:write\"], roles = [\"admin\"])`",
    )?;
    let mut scopes = Slot::new("scopes");
    let mut roles = Slot::new("roles");
    for entry in &entries {
        let key = meta_key(entry);
        match key.as_str() {
            "scopes" => set_string_list(&mut scopes, entry, errors),
            "roles" => set_string_list(&mut roles, entry, errors),
            _ => errors.spanned(entry.path(), unknown_key(&key, ACCESS_KEYS)),
        }
    }
    Some((
        scopes.take().unwrap_or_default(),
        roles.take().unwrap_or_default(),
    ))
}

/// `scopes = [..]` or `roles = [..]` into its slot.
fn set_string_list(slot: &mut Slot<Vec<LitStr>>, meta: &Meta, errors: &Errors) {
    if let Some(values) = string_list(meta, errors) {
        slot.set(errors, meta.path().span(), values);
    }
}

/// `key = ["a", "b"]`.
fn string_list(meta: &Meta, errors: &Errors) -> Option<Vec<LitStr>> {
    let key = meta_key(meta);
    let usage = format!("expected a list of strings: `{key} = [\"...\"]`");
    let Meta::NameValue(pair) = meta else {
        errors.spanned(meta, usage);
        return None;
    };
    let Expr::Array(array) = &pair.value else {
        errors.spanned(&pair.value, usage);
        return None;
    };
    let mut values = Vec::new();
    for element in &array.elems {
        match element {
            Expr::Lit(ExprLit {
                lit: Lit::Str(lit), ..
            }) if !lit.value().trim().is_empty() => values.push(lit.clone()),
            Expr::Lit(ExprLit {
                lit: Lit::Str(lit), ..
            }) => errors.spanned(lit, format_args!("an entry of `{key}` cannot be empty")),
            other => errors.spanned(other, &usage),
        }
    }
    Some(values)
}

/// `crate = path` (or `crate = "path"`): where generated code finds opkit.
fn crate_path(meta: &Meta, errors: &Errors) -> Option<syn::Path> {
    let usage = "expected a path to the opkit crate: `crate = ::my_reexport::opkit`";
    let Meta::NameValue(pair) = meta else {
        errors.spanned(meta, usage);
        return None;
    };
    match &pair.value {
        Expr::Path(path) if path.qself.is_none() => Some(path.path.clone()),
        Expr::Lit(ExprLit {
            lit: Lit::Str(lit), ..
        }) => match lit.parse::<syn::Path>() {
            Ok(path) => Some(path),
            Err(_) => {
                errors.spanned(lit, usage);
                None
            }
        },
        other => {
            errors.spanned(other, usage);
            None
        }
    }
}
