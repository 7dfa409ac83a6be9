//! Signature checks: turn the attribute's arguments and the fn's signature into the model,
//! recording one spanned error per problem.

use crate::args::{self, Args};
use crate::errors::Errors;
use crate::kind::Kind;
use crate::model::{Operation, Output, Param};
use crate::shape::{self, ContextParam, Streaming};
use proc_macro2::Span;
use quote::ToTokens;
use syn::ext::IdentExt;
use syn::{Attribute, Expr, FnArg, Ident, ItemFn, LitStr, Meta, Pat, PatType, ReturnType, Type};

/// The shapes `#[operation]` accepts, shown after signature errors.
const USAGE: &str = "\
  = note: `#[operation]` accepts:
          async fn name(a: A, b: B, ..) -> T                      (query, or `mutation`)
          async fn name(ctx: &OperationContext, Input(x): Input<X>) -> Result<T, E>
          fn name(..) -> impl Stream<Item = T> + Send + 'static    (with `subscription`)
          a stream may also be `BoxStream<'static, T>` or `Pin<Box<dyn Stream<Item = T> + Send>>`
          the output is `T`, `Result<T, E>`, `ResponseEnvelope<T>` or `()`";

/// Builds the model, or records why it cannot be built.
pub(crate) fn analyze<'a>(func: &'a ItemFn, args: Args, errors: &Errors) -> Option<Operation<'a>> {
    let before = errors.count();
    let fn_name = func.sig.ident.unraw().to_string();
    check_qualifiers(func, errors);
    let params = check_params(func, errors);
    let output = check_output(func, args.kind(), args.kind_conflict, errors);
    if let Some(params) = &params {
        let takes_context = params
            .iter()
            .any(|param| matches!(param, Param::Context { .. }));
        let task = args.edges.mcp.task.as_ref().map(|(_, support)| support);
        crate::mcp_args::check_after_input(&fn_name, task, takes_context, errors);
    }
    let namespace = args.namespace.as_ref().map(syn::LitStr::value);
    if !args.namespace_given && args.parsed {
        errors.at(
            Span::call_site(),
            format_args!(
                "`#[operation]` needs a namespace: write `#[operation(namespace = \"...\")]`; the operation id is `<namespace>.{fn_name}`"
            ),
        );
    }
    let name = match &args.name {
        Some(lit) => lit.value(),
        None => {
            if !args::valid_segment(&fn_name) {
                errors.spanned(
                    &func.sig.ident,
                    format_args!(
                        "`{fn_name}` is not a valid operation name (`[A-Za-z_][A-Za-z0-9_]*`): set one with `name = {:?}`",
                        args::suggest_name(&fn_name)
                    ),
                );
            }
            fn_name
        }
    };
    if errors.count() > before {
        return None;
    }
    let namespace = namespace?;
    if let Some(params) = &params {
        if let Some((_, complete)) = &args.edges.mcp.complete {
            check_completed_arguments(complete, params, &func.sig.ident, errors);
        }
        check_template_variables(&args.edges, params, &func.sig.ident, errors);
    }
    if let Some(output) = &output {
        check_no_body_status(&args.edges, output, &func.sig.ident, errors);
    }
    let runtime = args.private();
    Some(Operation {
        func,
        private: quote::quote!(__opkit_private),
        runtime,
        id: format!("{namespace}.{name}"),
        namespace,
        name,
        kind: args.kind(),
        docs: doc_values(&func.attrs),
        scopes: args.scopes,
        roles: args.roles,
        errors: args.errors,
        edges: args.edges,
        layers: args.layers,
        timeout_ms: args.timeout_ms,
        params: params?,
        output: output?,
    })
}

/// Each argument `complete(..)` names is an input field: a parameter of the fn, unless the
/// fn takes its input whole (`Input<T>`), whose fields the macro cannot see.
fn check_completed_arguments(
    complete: &[(Ident, LitStr)],
    params: &[Param<'_>],
    fn_name: &Ident,
    errors: &Errors,
) {
    if params
        .iter()
        .any(|param| matches!(param, Param::Whole { .. }))
    {
        return;
    }
    let fields: Vec<&str> = params
        .iter()
        .filter_map(|param| match param {
            Param::Field { name, .. } => Some(name.as_str()),
            _ => None,
        })
        .collect();
    for (argument, _) in complete {
        let name = argument.to_string();
        if !fields.contains(&name.as_str()) {
            let known = if fields.is_empty() {
                "it has none".to_owned()
            } else {
                format!("complete one of `{}`", fields.join("`, `"))
            };
            errors.spanned(
                argument,
                format_args!("`{name}` is not an input of `{fn_name}`: {known}"),
            );
        }
    }
}

/// The fields of the input the macro can see: the fn's parameters, or `None` when it takes
/// its input whole (`Input<T>`), whose fields it cannot see.
fn visible_fields<'a>(params: &'a [Param<'_>]) -> Option<Vec<&'a str>> {
    if params
        .iter()
        .any(|param| matches!(param, Param::Whole { .. }))
    {
        return None;
    }
    Some(
        params
            .iter()
            .filter_map(|param| match param {
                Param::Field { name, .. } => Some(name.as_str()),
                _ => None,
            })
            .collect(),
    )
}

/// Each `{variable}` of `http(path = ..)` and `mcp(resource = ..)` is an input field: a
/// parameter of the fn (unless it takes its input whole; the edge checks that when it starts).
fn check_template_variables(
    edges: &crate::edges::Edges,
    params: &[Param<'_>],
    fn_name: &Ident,
    errors: &Errors,
) {
    let Some(fields) = visible_fields(params) else {
        return;
    };
    let templates = edges
        .http
        .iter()
        .map(|route| ("route path", &route.path))
        .chain(
            edges
                .mcp
                .resource
                .iter()
                .map(|(_, uri)| ("resource URI", uri)),
        );
    for (what, template) in templates {
        for variable in crate::http_args::template_variables(&template.value()) {
            if !fields.contains(&variable.as_str()) {
                let known = if fields.is_empty() {
                    format!("`{fn_name}` has none")
                } else {
                    format!("its parameters are `{}`", fields.join("`, `"))
                };
                errors.spanned(
                    template,
                    format_args!("the {what}'s `{{{variable}}}` is not a parameter of `{fn_name}` ({known})\n  help: add a parameter `{variable}`, or rename the variable after one"),
                );
            }
        }
    }
}

/// A success status without a body (`204`, `205`) goes with an operation that returns
/// nothing (`()`): its data would be dropped.
fn check_no_body_status(
    edges: &crate::edges::Edges,
    output: &Output,
    fn_name: &Ident,
    errors: &Errors,
) {
    let Some(route) = &edges.http else {
        return;
    };
    if !matches!(route.status, 204 | 205) {
        return;
    }
    let data = shape::Shape::of(&output.value).data();
    let nothing = matches!(data, Some(Type::Tuple(tuple)) if tuple.elems.is_empty());
    if !nothing {
        let returns = data.map_or_else(
            || output.value.to_token_stream().to_string(),
            |ty| ty.to_token_stream().to_string(),
        );
        errors.at(
            route.status_span.unwrap_or_else(|| route.path.span()),
            format_args!("status {} sends no body, but `{fn_name}` returns `{returns}`, which would be dropped\n  help: return `()`, or answer with `status = 200`", route.status),
        );
    }
}

/// The values of `#[doc = ..]` attributes.
pub(crate) fn doc_values(attrs: &[Attribute]) -> Vec<&Expr> {
    attrs
        .iter()
        .filter_map(|attr| match &attr.meta {
            Meta::NameValue(pair) if pair.path.is_ident("doc") => Some(&pair.value),
            _ => None,
        })
        .collect()
}

fn check_qualifiers(func: &ItemFn, errors: &Errors) {
    let sig = &func.sig;
    let name = &sig.ident;
    if let Some(constness) = &sig.constness {
        errors.spanned(
            constness,
            format_args!("operation `{name}` cannot be a `const fn`: remove `const`"),
        );
    }
    if let Some(unsafety) = &sig.unsafety {
        errors.spanned(
            unsafety,
            format_args!(
                "operation `{name}` cannot be an `unsafe fn`: callers through the registry cannot uphold its contract; make it safe and use `unsafe` blocks inside"
            ),
        );
    }
    if let Some(abi) = &sig.abi {
        errors.spanned(
            abi,
            format_args!("operation `{name}` cannot have an `extern` ABI: remove it"),
        );
    }
    if let Some(variadic) = &sig.variadic {
        errors.spanned(
            variadic,
            format_args!("operation `{name}` cannot be variadic"),
        );
    }
    if !sig.generics.params.is_empty() {
        errors.spanned(
            &sig.generics,
            format_args!(
                "operation `{name}` cannot be generic: its input and output schemas are computed from concrete types\n  help: use concrete types, or write one `#[operation]` per type, each calling a generic helper"
            ),
        );
    }
}

fn check_params<'a>(func: &'a ItemFn, errors: &Errors) -> Option<Vec<Param<'a>>> {
    let name = &func.sig.ident;
    let before = errors.count();
    let mut params = Vec::new();
    let mut context_seen = false;
    for arg in &func.sig.inputs {
        let typed = match arg {
            FnArg::Receiver(receiver) => {
                errors.spanned(
                    receiver,
                    format_args!(
                        "operation `{name}` cannot take `self`: an operation is a free function\n  help: move it out of the `impl` block, or write a free `async fn` that calls the method\n{USAGE}"
                    ),
                );
                continue;
            }
            FnArg::Typed(typed) => typed,
        };
        if let Some(param) = check_param(name, typed, &mut context_seen, errors) {
            params.push(param);
        }
    }
    check_whole_input_alone(&params, errors);
    (errors.count() == before).then_some(params)
}

fn check_param<'a>(
    fn_name: &syn::Ident,
    typed: &'a PatType,
    context_seen: &mut bool,
    errors: &Errors,
) -> Option<Param<'a>> {
    let ty = &*typed.ty;
    if shape::contains_impl_trait(ty) {
        errors.spanned(
            ty,
            format_args!(
                "an `impl Trait` parameter makes operation `{fn_name}` generic, and an operation's input schema needs a concrete type\n  help: take a concrete type, e.g. `String` or a struct of yours deriving `Deserialize` and `JsonSchema`"
            ),
        );
        return None;
    }
    if let Some(context) = shape::context_param(ty) {
        return check_context(fn_name, typed, context, context_seen, errors);
    }
    if let Some(inner) = shape::input_param(ty) {
        return Some(Param::Whole { ty, inner });
    }
    if let Some(inner) = shape::state_param(ty) {
        return Some(Param::State { ty, inner });
    }
    if let Type::Reference(reference) = shape::peel(ty) {
        refuse_borrowed(ty, &reference.elem, errors);
        return None;
    }
    field_param(typed, errors)
}

/// The context parameter: taken by reference or by value, once.
fn check_context<'a>(
    fn_name: &syn::Ident,
    typed: &'a PatType,
    context: ContextParam<'a>,
    context_seen: &mut bool,
    errors: &Errors,
) -> Option<Param<'a>> {
    let (inner, by_ref) = match context {
        ContextParam::Ref(inner) => (inner, true),
        ContextParam::Owned(inner) => (inner, false),
        ContextParam::RefMut => {
            errors.spanned(
                &*typed.ty,
                "the context is shared: take `&OperationContext` (or `OperationContext`), not `&mut OperationContext`",
            );
            return None;
        }
    };
    if std::mem::replace(context_seen, true) {
        errors.spanned(
            typed,
            format_args!(
                "operation `{fn_name}` takes the context twice: keep one `&OperationContext` parameter"
            ),
        );
        return None;
    }
    Some(Param::Context { ty: inner, by_ref })
}

/// A borrowed parameter (`ty`, borrowing `elem`) is refused: a field is read from JSON and
/// owns its data (and a context under another name is pointed at).
fn refuse_borrowed(ty: &Type, elem: &Type, errors: &Errors) {
    let owned = owned_suggestion(elem);
    let mut message = format!(
        "operation parameters are read from JSON and must own their data: take `{owned}` instead of `{}`",
        display(ty)
    );
    if may_name_the_context(elem) {
        message.push_str(&format!(
            "\n  help: if `{owned}` is the context under another name, write `&OperationContext`: the context parameter is recognised by that name"
        ));
    }
    errors.spanned(ty, message);
}

/// A field of the input: a parameter bound to a plain name (its field's name).
fn field_param<'a>(typed: &'a PatType, errors: &Errors) -> Option<Param<'a>> {
    let ty = &*typed.ty;
    match &*typed.pat {
        Pat::Ident(binding) if binding.by_ref.is_none() && binding.subpat.is_none() => {
            Some(Param::Field {
                ident: binding.ident.clone(),
                name: binding.ident.unraw().to_string(),
                ty,
                docs: doc_values(&typed.attrs),
            })
        }
        Pat::Wild(wild) => {
            errors.spanned(
                wild,
                "name this parameter: its name becomes the name of its field in the operation's input",
            );
            None
        }
        Pat::TupleStruct(tuple)
            if tuple
                .path
                .segments
                .last()
                .is_some_and(|s| s.ident == "Input") =>
        {
            errors.spanned(
                ty,
                format_args!(
                    "the pattern `Input(..)` takes the whole input, so the type must be `Input<T>`: write `{}: Input<{}>`",
                    display(&typed.pat),
                    display(ty)
                ),
            );
            None
        }
        other => {
            errors.spanned(
                other,
                "operation parameters must be plain names (their names become the input's field names); the only pattern accepted is `Input(x): Input<T>`\n  help: bind the parameter to a name (`point: Point`) and destructure it in the body",
            );
            None
        }
    }
}

/// Borrowed types that are surely data, never the context under another name.
const NOT_CONTEXTS: &[&str] = &[
    "str", "String", "Path", "PathBuf", "OsStr", "CStr", "bool", "char", "i8", "i16", "i32", "i64",
    "i128", "isize", "u8", "u16", "u32", "u64", "u128", "usize", "f32", "f64",
];

/// `true` when a borrowed type could be `OperationContext` under another name (an alias or a
/// renamed import): a plain path without type arguments.
fn may_name_the_context(elem: &Type) -> bool {
    match shape::peel(elem) {
        Type::Path(path) => {
            path.qself.is_none()
                && path
                    .path
                    .segments
                    .iter()
                    .all(|segment| segment.arguments.is_none())
                && !NOT_CONTEXTS.iter().any(|name| path.path.is_ident(name))
        }
        _ => false,
    }
}

/// The owned type to suggest for a borrowed parameter type.
fn owned_suggestion(elem: &Type) -> String {
    match shape::peel(elem) {
        Type::Path(path) if path.path.is_ident("str") => "String".to_owned(),
        Type::Slice(slice) => format!("Vec<{}>", display(&slice.elem)),
        Type::Path(path) if path.path.is_ident("Path") => "PathBuf".to_owned(),
        other => display(other),
    }
}

/// `Input<T>` must be the only input parameter.
fn check_whole_input_alone(params: &[Param<'_>], errors: &Errors) {
    let wholes: Vec<&Type> = params
        .iter()
        .filter_map(|param| match param {
            Param::Whole { ty, .. } => Some(*ty),
            _ => None,
        })
        .collect();
    let fields: Vec<String> = params
        .iter()
        .filter_map(|param| match param {
            Param::Field { name, .. } => Some(format!("`{name}`")),
            _ => None,
        })
        .collect();
    let Some(first) = wholes.first() else {
        return;
    };
    if wholes.len() > 1 {
        errors.spanned(
            wholes[1],
            "the input is taken whole twice: keep one `Input<T>` parameter",
        );
    } else if !fields.is_empty() {
        errors.spanned(
            first,
            format_args!(
                "`Input<T>` takes the whole input, so it must be the only input parameter, but {} {} also here\n  help: move {} into `T`, or drop `Input<..>` and take every field as its own parameter",
                fields.join(", "),
                if fields.len() == 1 { "is" } else { "are" },
                if fields.len() == 1 { "it" } else { "them" },
            ),
        );
    }
}

fn check_output(func: &ItemFn, kind: Kind, kind_conflict: bool, errors: &Errors) -> Option<Output> {
    let sig = &func.sig;
    let name = &sig.ident;
    let is_async = sig.asyncness.is_some();
    let return_span: &dyn ToTokens = match &sig.output {
        ReturnType::Type(_, ty) => ty,
        ReturnType::Default => &sig.ident,
    };
    let value = match shape::streaming(&sig.output) {
        Streaming::Items(_) | Streaming::No if kind_conflict => return None,
        Streaming::Items(item) => {
            if kind != Kind::Subscription {
                errors.spanned(
                    return_span,
                    format_args!(
                        "operation `{name}` returns a stream, so it is a subscription: add `subscription` to the attribute, e.g. `#[operation(namespace = \"...\", subscription)]`"
                    ),
                );
                return None;
            }
            item.clone()
        }
        Streaming::NoItem => {
            errors.spanned(
                return_span,
                "name the stream's item type: `impl Stream<Item = T> + Send + 'static`",
            );
            return None;
        }
        Streaming::No => {
            if kind == Kind::Subscription {
                errors.spanned(
                    return_span,
                    format_args!(
                        "operation `{name}` is a subscription, so it must return a stream: `-> impl Stream<Item = T> + Send + 'static`, `BoxStream<'static, T>` or `Pin<Box<dyn Stream<Item = T> + Send>>` (from a `fn` or an `async fn`)\n  help: or remove `subscription` to make it a query"
                    ),
                );
                return None;
            }
            if !is_async {
                errors.spanned(
                    sig.fn_token,
                    format_args!(
                        "operation `{name}` must be an `async fn`: queries and mutations are `async fn`s; only subscriptions, which return `impl Stream<Item = T>`, may be plain `fn`s\n  help: write `async fn {name}(..)`\n{USAGE}"
                    ),
                );
                return None;
            }
            match &sig.output {
                ReturnType::Type(_, ty) => (**ty).clone(),
                ReturnType::Default => syn::parse_quote!(()),
            }
        }
    };
    if let Some(borrowed) = borrowed_output(&value) {
        let owned = match borrowed {
            Type::Reference(reference) => owned_suggestion(&reference.elem),
            other => display(other),
        };
        errors.spanned(
            borrowed,
            format_args!(
                "operation `{name}` returns the borrowed `{}`, but its result is serialized after the fn has returned, so it must own its data: return an owned type such as `{owned}`",
                display(borrowed)
            ),
        );
        return None;
    }
    if shape::contains_impl_trait(&value) {
        errors.spanned(
            &value,
            format_args!(
                "the output type of operation `{name}` must be a concrete type, not `impl Trait`: its JSON Schema is derived from it"
            ),
        );
        return None;
    }
    Some(Output {
        stream: kind == Kind::Subscription,
        value,
        is_async,
    })
}

/// The output data type when it is a reference (`&str`, `Result<&T, E>`,
/// `ResponseEnvelope<&T>`).
fn borrowed_output(value: &Type) -> Option<&Type> {
    let data = shape::Shape::of(value).data()?;
    matches!(shape::peel(data), Type::Reference(_)).then_some(data)
}

/// Tokens as a user would write them: `Vec<T>`, `&str`, `Result<T, E>`.
pub(crate) fn display<T: ToTokens>(tokens: T) -> String {
    let text = tokens.to_token_stream().to_string();
    let chars: Vec<char> = text.chars().collect();
    let word = |c: char| c.is_alphanumeric() || c == '_';
    let mut out = String::with_capacity(text.len());
    for (i, &c) in chars.iter().enumerate() {
        if c == ' ' {
            let before = i.checked_sub(1).map(|j| chars[j]);
            let after = chars.get(i + 1).copied();
            let keep = match (before, after) {
                (Some(b), Some(a)) => {
                    (word(b) && (word(a) || a == '\''))
                        || b == ','
                        || b == '+'
                        || a == '+'
                        || b == '='
                        || a == '='
                }
                _ => false,
            };
            if keep {
                out.push(c);
            }
        } else {
            out.push(c);
        }
    }
    out
}
