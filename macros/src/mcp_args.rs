//! The `mcp(..)` group: the options the MCP server takes from an operation, checked here
//! where the macro can — `tool_name` and `tool_meta`, the roles `resource = ".."` (a URI or
//! URI template), `prompt` and `task` / `task = "required"` / `task = "after_input"` with the
//! kinds and signatures they go with, and `complete(argument = "ns.query")`, the queries
//! completing its arguments. An option the macro does not know travels as it is, for the
//! MCP server to check when it starts.

use crate::errors::Errors;
use crate::kind::Kind;
use proc_macro2::{Ident, Span};
use serde_json::{Map, Value};
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Expr, ExprLit, Lit, LitStr, Meta, Token};

/// The options of `mcp(..)` the macro checks.
pub(crate) const MCP_KEYS: &[&str] = &[
    "tool_name",
    "tool_meta",
    "resource",
    "prompt",
    "task",
    "complete",
];

/// The `task` values, for messages.
pub(crate) const TASK_VALUES: &str = "`task` (a task when the client can follow one), `task = \"required\"` (clients that cannot are refused) or `task = \"after_input\"` (questions by input-required rounds first, then a task)";

/// `mcp(..)` as written (and the deprecated flat keys), each option where it was written.
#[derive(Default)]
pub(crate) struct McpArgs {
    pub tool_name: Option<LitStr>,
    /// A JSON object (checked).
    pub tool_meta: Option<LitStr>,
    pub resource: Option<(Span, LitStr)>,
    pub prompt: Option<Span>,
    pub task: Option<(Span, LitStr)>,
    pub complete: Option<(Span, Vec<(Ident, LitStr)>)>,
    /// Options the macro does not know, carried for the MCP server.
    pub other: Map<String, Value>,
}

impl McpArgs {
    /// Takes one option the macro knows (`key`, written as `meta`); `false` when `key` is not
    /// one of [`MCP_KEYS`].
    pub(crate) fn take_known(&mut self, key: &str, meta: &Meta, errors: &Errors) -> bool {
        let span = meta.path().span();
        let twice = |errors: &Errors| {
            errors.at(span, format_args!("`{key}` is given twice: keep one"));
        };
        match key {
            "tool_name" => {
                if let Some(lit) = crate::words::string_value(meta, errors) {
                    match check_tool_name(&lit.value()) {
                        Err(message) => errors.spanned(&lit, message),
                        Ok(()) if self.tool_name.is_some() => twice(errors),
                        Ok(()) => self.tool_name = Some(lit),
                    }
                }
            }
            "tool_meta" => {
                if let Some(lit) = crate::words::string_value(meta, errors) {
                    match check_tool_meta(&lit.value()) {
                        Err(message) => errors.spanned(&lit, message),
                        Ok(()) if self.tool_meta.is_some() => twice(errors),
                        Ok(()) => self.tool_meta = Some(lit),
                    }
                }
            }
            "resource" => {
                if let Some(lit) = crate::words::string_value(meta, errors) {
                    match check_resource_uri(&lit.value()) {
                        Err(message) => errors.spanned(&lit, message),
                        Ok(()) if self.resource.is_some() => twice(errors),
                        Ok(()) => self.resource = Some((span, lit)),
                    }
                }
            }
            "prompt" => {
                if !matches!(meta, Meta::Path(_)) {
                    errors.spanned(meta, "`prompt` takes no value: write `prompt` alone (the prompt is named like the tool would be, see `tool_name`)");
                } else if self.prompt.is_some() {
                    twice(errors);
                } else {
                    self.prompt = Some(span);
                }
            }
            "task" => {
                let support = match meta {
                    Meta::Path(path) => Some(LitStr::new("optional", path.span())),
                    Meta::NameValue(pair) => match &pair.value {
                        Expr::Lit(ExprLit {
                            lit: Lit::Str(lit), ..
                        }) => Some(lit.clone()),
                        other => {
                            errors.spanned(other, format_args!("`task` is one of {TASK_VALUES}"));
                            None
                        }
                    },
                    Meta::List(_) => {
                        errors.spanned(meta, format_args!("`task` is one of {TASK_VALUES}"));
                        None
                    }
                };
                match support.and_then(|lit| check_task_support(lit, errors)) {
                    Some(_) if self.task.is_some() => twice(errors),
                    Some(support) => self.task = Some((span, support)),
                    None => {}
                }
            }
            "complete" => {
                if let Some(pairs) = parse_complete(meta, errors) {
                    if self.complete.is_some() {
                        twice(errors);
                    } else {
                        self.complete = Some((span, pairs));
                    }
                }
            }
            _ => return false,
        }
        true
    }

    /// The group as the MCP server reads it, or `None` when nothing was given.
    pub(crate) fn to_json(&self) -> Option<Value> {
        let mut options = self.other.clone();
        if let Some(name) = &self.tool_name {
            options.insert("tool_name".to_owned(), Value::String(name.value()));
        }
        if let Some(meta) = &self.tool_meta
            && let Ok(meta) = serde_json::from_str::<Value>(&meta.value())
        {
            options.insert("tool_meta".to_owned(), meta);
        }
        if let Some((_, uri)) = &self.resource {
            options.insert("resource".to_owned(), Value::String(uri.value()));
        }
        if self.prompt.is_some() {
            options.insert("prompt".to_owned(), Value::Bool(true));
        }
        if let Some((_, support)) = &self.task {
            options.insert("task".to_owned(), Value::String(support.value()));
        }
        if let Some((_, pairs)) = &self.complete {
            let completers: Map<String, Value> = pairs
                .iter()
                .map(|(argument, query)| (argument.to_string(), Value::String(query.value())))
                .collect();
            options.insert("complete".to_owned(), Value::Object(completers));
        }
        (!options.is_empty()).then_some(Value::Object(options))
    }
}

/// The rule of an MCP tool name as opkit's MCP server applies it when it starts (the
/// default naming, `ToolNaming::OperationId`): 1 to 128 characters of `[A-Za-z0-9_.-]`.
/// `Err` says what is wrong and suggests a valid spelling.
pub(crate) fn check_tool_name(name: &str) -> Result<(), String> {
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

/// `Err` with the message when `text` is not a JSON object.
pub(crate) fn check_tool_meta(text: &str) -> Result<(), String> {
    let help = "write the tool's `_meta` as a JSON object: `tool_meta = r#\"{\"ui\": {\"resourceUri\": \"ui://notes/list\"}}\"#`";
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(serde_json::Value::Object(_)) => Ok(()),
        Ok(_) => Err(format!("`tool_meta` must be a JSON object\n  help: {help}")),
        Err(error) => Err(format!("`tool_meta` is not JSON: {error}\n  help: {help}")),
    }
}

/// A resource is read (a query; a subscription with the same URI backs its updates) and a
/// prompt is a query; one operation is not both.
pub(crate) fn check_mcp_role(kind: Option<(Kind, Span)>, mcp: &McpArgs, errors: &Errors) {
    let (resource, prompt) = (mcp.resource.as_ref(), mcp.prompt);
    let kind_of = kind.map_or(Kind::Query, |(kind, _)| kind);
    if let (Some(span), Some(_)) = (prompt, resource) {
        errors.at(span, "an operation is an MCP resource or a prompt, not both: keep `resource = \"..\"` or `prompt`");
        return;
    }
    if let Some(span) = prompt
        && kind_of != Kind::Query
    {
        errors.at(span, format_args!("a prompt is a query (`prompts/get` reads it), but this operation is a {0}: remove `{0}` or `prompt`", kind_of.keyword()));
    }
    if let Some((span, _)) = resource
        && kind_of == Kind::Mutation
    {
        errors.at(*span, "a resource is read, but this operation is a `mutation`: make it a query (it serves `resources/read`) or a `subscription` (it backs `resources/subscribe`)");
    }
}

/// An MCP resource URI or URI template: a scheme (`notes:`), no spaces, and `{variables}`
/// that are identifiers (optionally `{+name}`), none nested or unclosed.
pub(crate) fn check_resource_uri(uri: &str) -> Result<(), String> {
    let help = "help: write a URI, with `{field}` for each input field it carries: `resource = \"notes://{id}\"`";
    let scheme = uri.split_once(':').map(|(scheme, _)| scheme);
    let scheme_ok = scheme.is_some_and(|scheme| {
        scheme.starts_with(|c: char| c.is_ascii_alphabetic())
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    });
    if !scheme_ok {
        return Err(format!(
            "`resource` must be a URI with a scheme, like `notes://{{id}}`\n  {help}"
        ));
    }
    if let Some(bad) = uri.chars().find(|c| c.is_whitespace()) {
        return Err(format!("`resource` must not contain {bad:?}\n  {help}"));
    }
    let mut rest = uri;
    while let Some(open) = rest.find(['{', '}']) {
        if rest[open..].starts_with('}') {
            return Err(format!("`resource` has a `}}` with no `{{`\n  {help}"));
        }
        let after = &rest[open + 1..];
        let Some(close) = after.find('}') else {
            return Err(format!("`resource` has a `{{` with no `}}`\n  {help}"));
        };
        let name = after[..close].strip_prefix('+').unwrap_or(&after[..close]);
        let ident = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !ident {
            return Err(format!(
                "`{{{name}}}` in `resource` must name an input field\n  {help}"
            ));
        }
        rest = &after[close + 1..];
    }
    Ok(())
}

/// The value of `task` (`"optional"`, what `task` alone means), `task = "required"` or
/// `task = "after_input"`.
pub(crate) fn check_task_support(lit: LitStr, errors: &Errors) -> Option<LitStr> {
    if matches!(lit.value().as_str(), "optional" | "required" | AFTER_INPUT) {
        Some(lit)
    } else {
        errors.spanned(&lit, format_args!("`task` is one of {TASK_VALUES}"));
        None
    }
}

/// The `task` value of an operation that asks its questions before it becomes a task.
const AFTER_INPUT: &str = "after_input";

/// `task = "after_input"` waits for the answers to the operation's questions, so the
/// operation must be able to ask: it takes the context.
pub(crate) fn check_after_input(
    fn_name: &str,
    task: Option<&LitStr>,
    takes_context: bool,
    errors: &Errors,
) {
    if let Some(lit) = task
        && lit.value() == AFTER_INPUT
        && !takes_context
    {
        errors.spanned(lit, format_args!("`task = \"after_input\"` makes the operation a task once the client has answered its questions, but `{fn_name}` takes no `&OperationContext`, so it cannot ask any\n  help: add a `ctx: &OperationContext` parameter and ask with `ctx.elicit`, or write `task` to run it as a task from the first call"));
    }
}

/// A task has one result: a subscription cannot be one.
pub(crate) fn check_task(kind: Option<(Kind, Span)>, mcp: &McpArgs, errors: &Errors) {
    if let (Some((span, _)), Some((Kind::Subscription, _))) = (&mcp.task, kind) {
        errors.at(*span, "a subscription cannot run as an MCP task (a task has one result): remove `task`, or make it a query or a mutation");
    }
}

const COMPLETE_HELP: &str =
    "write `complete(argument = \"namespace.query\")`, e.g. `complete(topic = \"notes.topics\")`";

/// `complete(topic = "notes.topics", ..)`: each argument an identifier, each completer the
/// id of an operation (`namespace.name`, segments `[A-Za-z_][A-Za-z0-9_]*`).
pub(crate) fn parse_complete(meta: &Meta, errors: &Errors) -> Option<Vec<(syn::Ident, LitStr)>> {
    let Meta::List(list) = meta else {
        errors.spanned(
            meta,
            format_args!("`complete` names the query completing each argument: {COMPLETE_HELP}"),
        );
        return None;
    };
    let pairs = match Punctuated::<Meta, Token![,]>::parse_terminated.parse2(list.tokens.clone()) {
        Ok(pairs) => pairs,
        Err(error) => {
            errors.at(
                error.span(),
                format_args!("{error}: each argument is completed by a query: {COMPLETE_HELP}"),
            );
            return None;
        }
    };
    if pairs.is_empty() {
        errors.spanned(meta, format_args!("`complete()` is empty: {COMPLETE_HELP}"));
        return None;
    }
    let mut completers = Vec::new();
    for pair in &pairs {
        let Meta::NameValue(pair) = pair else {
            errors.spanned(
                pair,
                format_args!("each argument is completed by a query: {COMPLETE_HELP}"),
            );
            continue;
        };
        let Some(argument) = pair.path.get_ident() else {
            errors.spanned(
                &pair.path,
                format_args!("name the argument, not a path: {COMPLETE_HELP}"),
            );
            continue;
        };
        let Expr::Lit(ExprLit {
            lit: Lit::Str(completer),
            ..
        }) = &pair.value
        else {
            errors.spanned(
                &pair.value,
                format_args!("the completer is a string naming a query: {COMPLETE_HELP}"),
            );
            continue;
        };
        let id = completer.value();
        let segments: Vec<&str> = id.split('.').collect();
        if segments.len() < 2
            || !segments
                .iter()
                .all(|segment| crate::segment::valid_segment(segment))
        {
            errors.spanned(
                completer,
                format_args!("`{id}` is not an operation id (`namespace.name`): {COMPLETE_HELP}"),
            );
            continue;
        }
        if completers
            .iter()
            .any(|(seen, _): &(syn::Ident, LitStr)| seen == argument)
        {
            errors.spanned(
                argument,
                format_args!("`{argument}` is completed twice: keep one"),
            );
            continue;
        }
        completers.push((argument.clone(), completer.clone()));
    }
    Some(completers)
}

/// Completion is of a prompt's arguments or a resource template's variables.
pub(crate) fn check_complete(mcp: &McpArgs, errors: &Errors) {
    let Some((span, _)) = &mcp.complete else {
        return;
    };
    let template = mcp
        .resource
        .as_ref()
        .is_some_and(|(_, uri)| uri.value().contains('{'));
    if mcp.prompt.is_none() && !template {
        errors.at(*span, "`complete` completes the arguments of an MCP prompt or the variables of a resource template: add `prompt`, or `resource = \"..{argument}..\"` with the argument in the URI");
    }
}
