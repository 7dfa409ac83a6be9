//! The MCP roles an operation can take in the attribute: `resource = ".."` (checked as a
//! URI or URI template), `prompt` and `task` / `task = "required"` / `task = "after_input"`,
//! and which kinds and signatures they go with; and `complete(argument = "ns.query")`, the
//! queries completing its arguments.

use crate::errors::Errors;
use crate::model::Kind;
use proc_macro2::Span;
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::{Expr, ExprLit, Lit, LitStr, Meta, Token};

/// A resource is read (a query; a subscription with the same URI backs its updates) and a
/// prompt is a query; one operation is not both.
pub(crate) fn check_mcp_role(
    kind: Option<(Kind, Span)>,
    resource: Option<&(Span, LitStr)>,
    prompt: Option<&(Span, Span)>,
    errors: &Errors,
) {
    let kind_of = kind.map_or(Kind::Query, |(kind, _)| kind);
    if let (Some((span, _)), Some(_)) = (prompt, resource) {
        errors.at(*span, "an operation is an MCP resource or a prompt, not both: keep `resource = \"..\"` or `prompt`");
        return;
    }
    if let Some((span, _)) = prompt
        && kind_of != Kind::Query
    {
        errors.at(*span, format_args!("a prompt is a query (`prompts/get` reads it), but this operation is a {0}: remove `{0}` or `prompt`", kind_of.keyword()));
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
        errors.spanned(&lit, "`task` is `task` (a task when the client can follow one), `task = \"required\"` (clients that cannot are refused) or `task = \"after_input\"` (questions by input-required rounds first, then a task)");
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
pub(crate) fn check_task(
    kind: Option<(Kind, Span)>,
    task: Option<&(Span, LitStr)>,
    errors: &Errors,
) {
    if let (Some((span, _)), Some((Kind::Subscription, _))) = (task, kind) {
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
pub(crate) fn check_complete(
    complete: Option<Span>,
    resource: Option<&(Span, LitStr)>,
    prompt: Option<&(Span, Span)>,
    errors: &Errors,
) {
    let Some(span) = complete else {
        return;
    };
    let template = resource.is_some_and(|(_, uri)| uri.value().contains('{'));
    if prompt.is_none() && !template {
        errors.at(span, "`complete` completes the arguments of an MCP prompt or the variables of a resource template: add `prompt`, or `resource = \"..{argument}..\"` with the argument in the URI");
    }
}
