//! The `#[operation]` attribute of opkit. Use it through `opkit::operation`; its documentation
//! lives there, with examples.
//!
//! Stages: `enclosing` tells whether the fn sits in an `impl` or `trait` block, `args` parses
//! the attribute (its edge groups in `edges`, checked by `mcp_args` and `http_args`, carried
//! as JSON by `json`; `words` and `kind` are the words they share), `signature` checks the fn
//! and builds the `model` (reading names through `shape`), `expand` generates code; `errors`
//! collects every problem so all are reported at once.
//!
//! # Adding a signature shape
//!
//! Which signatures the attribute accepts is decided at expansion time from the types as
//! written, then checked by the type system in generated code. A new return or parameter
//! shape touches, in order:
//!
//! 1. `shape.rs`: how the type reads (`Shape` for returns — plain, envelope, fallible;
//!    `context_param`, `state_param`, `input_param` for parameters; `streaming` for
//!    streams). Only names are read here, never meaning.
//! 2. `model.rs` (`Param`, `Output`) and `signature.rs`, which builds them and reports a
//!    misuse on the user's token, with a fix-it.
//! 3. `expand/input.rs` (the generated input type and the arguments of the fn) and
//!    `expand/run.rs` (`__opkit_run`: the one call of the user's fn; `unary_run` and
//!    `stream_run`), which name a shape marker of the runtime.
//! 4. `core/src/private/`: the marker and its impls — `output.rs` (`Plain`, `Envelope`,
//!    `Fallible` and `produce`), `errors.rs` (which error types convert, by deref probes),
//!    `send.rs` (the `Send` checks and their messages).
//! 5. Pin it: an expansion snapshot in `src/tests.rs` (one per accepted shape, in
//!    `tests/expanded/`), a `ui-tests/pass/` case that runs it, and a `ui-tests/fail/` case for
//!    each new misuse with its exact error.

//!
//! # Adding an edge, an edge option, a transport, or an attribute argument
//!
//! **An option of an existing edge** (a new key in `mcp(..)` or `http(..)`): one file, the
//! edge's typed options — `adapters/src/mcp_server/options.rs` (`McpEdgeOptions`) or
//! `adapters/src/http_server/route.rs` (`HttpRoute`) — and the code of the edge that acts on
//! it. The macro carries a key it does not know as it is written, and the edge refuses a key
//! it cannot read when it starts. Teach the macro the key only to check it at compile time:
//! `mcp_args.rs` (`MCP_KEYS`, `McpArgs::take_known`, `to_json`) or `http_args.rs`, with a
//! `ui-tests/fail/` case per misuse.
//!
//! **An edge** (a server of opkit's or the application's): nothing here. The edge picks a
//! name, reads its group with `OperationSpec::edge_options::<ItsOptions>("name")` when it
//! starts, serves calls through the registry's front door (`OperationRegistry::serve`) and
//! puts what it knows on the context (`opkit::edge::Edge`). An edge of opkit's also gets a
//! feature in `adapters/Cargo.toml`, a module in `adapters/src/lib.rs` with a manual in
//! `adapters/docs/`, an entry in `ADAPTER_EDGES` of `core/tests/architecture.rs` when it
//! uses another adapter, and, when the macro should check its options at compile time, a
//! `KEYS` entry and a parser beside `http_args.rs` wired in `edges.rs`.
//!
//! **A transport** of the call protocol: an implementation of `opkit::protocol::PubSub` in
//! its own adapter module (`adapters/src/<name>/`, feature `<name>`), its manual, its bounds
//! in `docs/limits.md`, its trust in `docs/security.md`, and the test kit's transport
//! conformance over it (`opkit_testkit::protocol::conformance::check(server, caller,
//! settled)`: outcomes, reply-topic events and calls in flight ending as on the in-memory
//! bus), added beside the others in `adapters/tests/transports_agree.rs`, plus fault and
//! partition suites like `redis_partition.rs` and `websocket_partition.rs` (their fixtures:
//! `opkit_testkit::protocol`).
//!
//! **An argument of opkit's own** (not an edge's: it changes what every edge sees, like
//! `timeout` or `layer`): `args.rs` (`KEYS`, the parse and its checks), `model.rs` and
//! `signature.rs` (into the model), `expand/mod.rs` (into `SpecParts`),
//! `core/src/private/spec.rs` (`SpecParts` and `build_spec`), the `OperationSpec` field in
//! `core/src/spec.rs`, the table in `core/src/operation.md`, and `ui-tests` cases. Prefer an
//! edge option when only one edge reads it.

mod args;
mod edges;
mod enclosing;
mod errors;
mod expand;
mod http_args;
mod json;
mod kind;
mod mcp_args;
mod model;
mod segment;
mod shape;
mod signature;
#[cfg(test)]
mod tests;
mod words;

use proc_macro::TokenStream;
use quote::quote;

/// Turns an `async fn` or a stream function into an opkit operation.
///
/// See `opkit::operation` for the arguments, the accepted signatures and examples.
#[proc_macro_attribute]
pub fn operation(args: TokenStream, item: TokenStream) -> TokenStream {
    let block = enclosing::of(proc_macro::Span::call_site());
    operation_impl(args.into(), item.into(), block).into()
}

fn operation_impl(
    args: proc_macro2::TokenStream,
    item: proc_macro2::TokenStream,
    block: Option<enclosing::Block>,
) -> proc_macro2::TokenStream {
    let func: syn::ItemFn = match syn::parse2(item.clone()) {
        Ok(func) => func,
        Err(_) => {
            let message = if is_closure(&item) {
                "`#[operation]` goes on a named `async fn`, not on a closure: an operation's handle is a struct named after its fn\n  help: write it as an item, `async fn name(a: A, ..) -> T { .. }`, and put `#[operation(..)]` on that fn"
            } else {
                "`#[operation]` goes on an `async fn` (a query or mutation) or on a fn returning `impl Stream<Item = T>` (a subscription)"
            };
            let error = syn::Error::new(proc_macro2::Span::call_site(), message).to_compile_error();
            return quote!(#error #item);
        }
    };
    // A method gets its own error ("cannot take `self`") below.
    let associated = block.filter(|_| func.sig.receiver().is_none());
    if let Some(error) = associated.and_then(|block| associated_fn_error(&func, block)) {
        let error = error.to_compile_error();
        let emitted = strip_param_docs(&func);
        return quote!(#error #emitted);
    }
    let errors = errors::Errors::new();
    let args = args::parse(args, &errors);
    let private = args.private();
    let operation = signature::analyze(&func, args, &errors);
    let generated = operation.as_ref().map(expand::expand);
    let mut emitted = strip_param_docs(&func);
    match errors.finish() {
        Ok(()) => quote!(#emitted #generated),
        Err(compile_errors) => {
            // `const async fn` is rejected by Rust too; the error above already says so.
            if emitted.sig.asyncness.is_some() {
                emitted.sig.constness = None;
            }
            let stub = expand::stub_handle(&func, &private);
            quote!(#compile_errors #emitted #stub)
        }
    }
}

/// `true` when the attribute sits on a closure (`#[operation] let f = |..| ..;` or an
/// attribute on the closure expression itself).
fn is_closure(item: &proc_macro2::TokenStream) -> bool {
    fn closure(expr: &syn::Expr) -> bool {
        match expr {
            syn::Expr::Closure(_) => true,
            syn::Expr::Paren(paren) => closure(&paren.expr),
            _ => false,
        }
    }
    if let Ok(expr) = syn::parse2::<syn::Expr>(item.clone()) {
        return closure(&expr);
    }
    match syn::parse::Parser::parse2(syn::Block::parse_within, item.clone()) {
        Ok(stmts) => stmts.iter().any(|stmt| match stmt {
            syn::Stmt::Local(local) => local.init.as_ref().is_some_and(|init| closure(&init.expr)),
            syn::Stmt::Expr(expr, _) => closure(expr),
            _ => false,
        }),
        Err(_) => false,
    }
}

/// The error for an operation written inside an `impl` or `trait` block, where its handle (a
/// struct) cannot be; nothing else is generated, so it is the only error.
fn associated_fn_error(func: &syn::ItemFn, block: enclosing::Block) -> Option<syn::Error> {
    let name = &func.sig.ident;
    let (block, remedy) = match block {
        enclosing::Block::Impl => (
            "an `impl` block",
            format!(
                "move `{name}` out of the `impl` block, to the module; to keep a method, write a free `#[operation]` fn that calls it (`Type::{name}(..)`)"
            ),
        ),
        enclosing::Block::Trait => (
            "a `trait`",
            format!(
                "move `{name}` out of the `trait`, to the module; a free `#[operation]` fn can call the trait's method"
            ),
        ),
        enclosing::Block::Other => return None,
    };
    Some(syn::Error::new(
        name.span(),
        format!(
            "operation `{name}` is inside {block}, but an operation is a free fn: its handle `{name}` is a struct beside the fn, which {block} cannot hold\n  help: {remedy}"
        ),
    ))
}

/// The user's fn as written, except doc comments on parameters (which Rust rejects there):
/// they describe the input fields instead.
fn strip_param_docs(func: &syn::ItemFn) -> syn::ItemFn {
    let mut func = func.clone();
    for input in &mut func.sig.inputs {
        if let syn::FnArg::Typed(typed) = input {
            typed.attrs.retain(|attr| !attr.path().is_ident("doc"));
        }
    }
    func
}
