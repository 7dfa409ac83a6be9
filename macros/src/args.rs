//! The attribute's arguments: `namespace = "..", name = "..", mutation | subscription,
//! access(scopes = [..], roles = [..]), crate = path`.

use crate::errors::Errors;
use crate::model::Kind;
pub(crate) use crate::segment::valid_segment;
use proc_macro2::{Span, TokenStream};
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Expr, ExprLit, Lit, LitStr, Meta, Token};

/// Every argument `#[operation(..)]` accepts, for "expected one of" messages.
const KEYS: &[&str] = &[
    "namespace",
    "name",
    "query",
    "mutation",
    "subscription",
    "access",
    "errors",
    "crate",
    "tool_name",
    "tool_meta",
    "resource",
    "prompt",
    "task",
    "complete",
    "layer",
    "timeout",
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
    /// `tool_name = ".."`: the name tool servers (MCP) serve the operation under.
    pub tool_name: Option<LitStr>,
    /// `tool_meta = "{..}"`: a JSON object tool servers add to the tool's `_meta`.
    pub tool_meta: Option<LitStr>,
    /// `resource = ".."`: the MCP resource URI (or URI template) the operation serves.
    pub resource: Option<LitStr>,
    /// `prompt`: the operation is an MCP prompt, and where the word was written.
    pub prompt: Option<Span>,
    /// `task`, `task = "required"` or `task = "after_input"`: the operation may (or must, or
    /// once its questions are answered) run as an MCP task.
    pub task: Option<LitStr>,
    /// `complete(argument = "ns.query", ..)`: the queries that complete MCP arguments.
    pub complete: Vec<(syn::Ident, LitStr)>,
    /// `layer = ".."` (repeatable): the named middleware layers the operation asks for.
    pub layers: Vec<LitStr>,
    /// `timeout = ".."`: the per-call timeout, in milliseconds.
    pub timeout_ms: Option<u64>,
    /// `http(..)`: the REST route.
    pub http: Option<crate::http_args::HttpArgs>,
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
    let mut tool_name = Slot::new("tool_name");
    let mut tool_meta = Slot::new("tool_meta");
    let mut timeout = Slot::new("timeout");
    let mut http = Slot::new("http");
    let mut resource = Slot::new("resource");
    let mut prompt = Slot::new("prompt");
    let mut task = Slot::new("task");
    let mut complete = Slot::new("complete");
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
            "tool_name" => {
                if let Some(lit) = string_value(meta, errors) {
                    match check_tool_name(&lit.value()) {
                        Ok(()) => tool_name.set(errors, span, lit),
                        Err(message) => errors.spanned(&lit, message),
                    }
                }
            }
            "tool_meta" => {
                if let Some(lit) = string_value(meta, errors) {
                    match check_tool_meta(&lit.value()) {
                        Ok(()) => tool_meta.set(errors, span, lit),
                        Err(message) => errors.spanned(&lit, message),
                    }
                }
            }
            "resource" => {
                if let Some(lit) = string_value(meta, errors) {
                    match crate::mcp_args::check_resource_uri(&lit.value()) {
                        Ok(()) => resource.set(errors, span, lit),
                        Err(message) => errors.spanned(&lit, message),
                    }
                }
            }
            "prompt" => {
                if matches!(meta, Meta::Path(_)) {
                    prompt.set(errors, span, span);
                } else {
                    errors.spanned(meta, "`prompt` takes no value: write `prompt` alone (the prompt is named like the tool would be, see `tool_name`)");
                }
            }
            "task" => {
                let support = match meta {
                    Meta::Path(path) => Some(LitStr::new("optional", path.span())),
                    _ => string_value(meta, errors),
                };
                if let Some(support) =
                    support.and_then(|lit| crate::mcp_args::check_task_support(lit, errors))
                {
                    task.set(errors, span, support);
                }
            }
            "complete" => {
                if let Some(pairs) = crate::mcp_args::parse_complete(meta, errors) {
                    complete.set(errors, span, pairs);
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
            "http" => {
                if let Some(route) = crate::http_args::parse_http(meta, errors) {
                    http.set(errors, span, route);
                }
            }
            "crate" => {
                if let Some(path) = crate_path(meta, errors) {
                    krate.set(errors, span, path);
                }
            }
            _ => errors.spanned(meta.path(), unknown_key(&key, KEYS)),
        }
    }
    // A misspelt `namespace` already has its error ("did you mean `namespace`?").
    let namespace_given = metas.iter().any(|meta| {
        meta.path().is_ident("namespace") || closest_key(&meta_key(meta), KEYS) == Some("namespace")
    });
    let kind_conflict = kind.conflict;
    let kind = kind.value.map(|(span, kind)| (kind, span));
    let (scopes, roles) = access.take().unwrap_or_default();
    crate::mcp_args::check_mcp_role(kind, resource.value.as_ref(), prompt.value.as_ref(), errors);
    crate::mcp_args::check_task(kind, task.value.as_ref(), errors);
    crate::mcp_args::check_complete(
        complete.value.as_ref().map(|(span, _)| *span),
        resource.value.as_ref(),
        prompt.value.as_ref(),
        errors,
    );
    Args {
        namespace: namespace.take().filter(|lit| !lit.value().is_empty()),
        name: name.take().filter(|lit| !lit.value().is_empty()),
        kind,
        scopes,
        roles,
        errors: error_kinds.take().unwrap_or_default(),
        krate: krate.take(),
        tool_name: tool_name.take(),
        tool_meta: tool_meta.take(),
        resource: resource.take(),
        prompt: prompt.take(),
        task: task.take(),
        complete: complete.take().unwrap_or_default(),
        layers,
        timeout_ms: timeout.take(),
        http: http.take(),
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

fn meta_key(meta: &Meta) -> String {
    let path = meta.path();
    match path.get_ident() {
        Some(ident) => ident.to_string(),
        None => quote::quote!(#path).to_string().replace(' ', ""),
    }
}

/// "unknown argument `x`", the accepted ones, and the closest one when it is close.
fn unknown_key(key: &str, keys: &[&'static str]) -> String {
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

/// The accepted key `key` is most likely a misspelling of, if any is close.
fn closest_key(key: &str, keys: &[&'static str]) -> Option<&'static str> {
    keys.iter()
        .copied()
        .filter(|candidate| *candidate != key && edit_distance(key, candidate) <= 2)
        .min_by_key(|candidate| edit_distance(key, candidate))
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut current = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            current.push(
                (previous[j] + cost)
                    .min(previous[j + 1] + 1)
                    .min(current[j] + 1),
            );
        }
        previous = current;
    }
    previous[b.len()]
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

/// The rule of an MCP tool name as opkit's MCP server applies it when it starts (the
/// default naming, `ToolNaming::OperationId`): 1 to 128 characters of `[A-Za-z0-9_.-]`.
/// `Err` says what is wrong and suggests a valid spelling.
fn check_tool_name(name: &str) -> Result<(), String> {
    const MAX: usize = 128;
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.');
    let problem = if name.is_empty() {
        "it is empty".to_owned()
    } else if let Some(bad) = name.chars().find(|&c| !allowed(c)) {
        format!("{bad:?} is not allowed")
    } else if name.chars().count() > MAX {
        format!("it has {} characters", name.chars().count())
    } else {
        return Ok(());
    };
    let mut suggestion: String = name
        .chars()
        .map(|c| if allowed(c) { c } else { '_' })
        .take(MAX)
        .collect();
    if suggestion.is_empty() {
        suggestion.push_str("my_tool");
    }
    Err(format!(
        "invalid `tool_name` {name:?}: {problem}; an MCP tool name has 1 to {MAX} characters of `[A-Za-z0-9_.-]` (opkit's MCP server refuses any other when it starts)\n  help: try {suggestion:?}"
    ))
}

/// The string literal of `key = "value"`.
/// `Err` with the message when `text` is not a JSON object.
fn check_tool_meta(text: &str) -> Result<(), String> {
    let help = "write the tool's `_meta` as a JSON object: `tool_meta = r#\"{\"ui\": {\"resourceUri\": \"ui://notes/list\"}}\"#`";
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(serde_json::Value::Object(_)) => Ok(()),
        Ok(_) => Err(format!("`tool_meta` must be a JSON object\n  help: {help}")),
        Err(error) => Err(format!("`tool_meta` is not JSON: {error}\n  help: {help}")),
    }
}

fn string_value(meta: &Meta, errors: &Errors) -> Option<LitStr> {
    let key = meta_key(meta);
    match meta {
        Meta::NameValue(pair) => match &pair.value {
            Expr::Lit(ExprLit {
                lit: Lit::Str(lit), ..
            }) => Some(lit.clone()),
            other => {
                errors.spanned(
                    other,
                    format_args!("expected a string literal: `{key} = \"...\"`"),
                );
                None
            }
        },
        _ => {
            errors.spanned(
                meta,
                format_args!("`{key}` needs a value: `{key} = \"...\"`"),
            );
            None
        }
    }
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
    let Meta::List(list) = meta else {
        errors.spanned(
            meta,
            "`access` takes a list: `access(scopes = [\"users:write\"], roles = [\"admin\"])`",
        );
        return None;
    };
    let entries = match list.parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated) {
        Ok(entries) => entries,
        Err(error) => {
            errors.push(error);
            return None;
        }
    };
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
