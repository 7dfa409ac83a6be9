//! Expansion: the typed handle, the input type, the `OperationDef` impl (from which opkit
//! implements `TypedOperation`) and the constructor that registers it, generated beside the
//! user's function.
//!
//! Every path to the runtime goes through `__private` (see `Operation::private`). Every trait
//! requirement on a user type is checked by a helper whose tokens carry that type's span, so
//! errors point at the type the user wrote; all uses of one type share one span and one
//! predicate, so the compiler reports a missing impl once.
//!
//! `input` builds the input side (the input struct, the arguments), `run` the running side
//! (the shared `run` fn, the JSON handler, the `Send` checks); this module assembles them.

use crate::kind::Kind;
use crate::model::{Operation, Param};
use crate::shape::Shape;
use proc_macro2::{Ident, Span, TokenStream};
use quote::{ToTokens, quote, quote_spanned};
use syn::Expr;
use syn::spanned::Spanned;

mod input;
mod run;

use input::{cons, input_args, input_params, input_type, local};
use run::{json_handler, run_fn};

/// Names of the macro's own locals: `mixed_site`, so they never meet the user's names.
struct Locals {
    input: Ident,
    ctx: Ident,
}

impl Locals {
    fn new() -> Self {
        let local = |name: &str| Ident::new(name, Span::mixed_site());
        Self {
            input: local("__input"),
            ctx: local("__ctx"),
        }
    }
}

/// Everything generated beside the user's function.
pub(crate) fn expand(op: &Operation<'_>) -> TokenStream {
    let locals = Locals::new();
    let cfgs: Vec<&syn::Attribute> = cfg_attrs(op).collect();
    let handle = handle_struct(op);
    let input = input_type(op);
    let typed = typed_operation(op);
    let inherent = inherent_items(op, &locals);
    let registration = registration(op);
    let deprecated = deprecated_keys(op);
    let Operation {
        runtime, private, ..
    } = op;
    quote! {
        #(#cfgs)*
        #handle

        #(#cfgs)*
        #[allow(deprecated)]
        const _: () = {
            use #runtime as #private;
            #input
            #typed
            #inherent
            #registration
        };
        #deprecated
    }
}

/// One deprecation warning, at the user's word, for each flat MCP key of earlier versions
/// (`tool_name = ..` for `mcp(tool_name = ..)`): outside the block above, whose
/// `allow(deprecated)` would silence it.
fn deprecated_keys(op: &Operation<'_>) -> TokenStream {
    let warnings = op.edges.deprecated.iter().map(|(span, key)| {
        let word = proc_macro2::Ident::new(key, *span);
        let form = match key.as_str() {
            "prompt" => "mcp(prompt)".to_owned(),
            "task" => "mcp(task)` or `mcp(task = \"..\")".to_owned(),
            "complete" => "mcp(complete(..))".to_owned(),
            other => format!("mcp({other} = \"..\")"),
        };
        let note =
            format!("`{key}` is an option of the MCP server: write it in its group, `{form}`");
        quote_spanned! {*span=>
            const _: () = {
                #[deprecated(note = #note)]
                #[allow(non_upper_case_globals)]
                const #word: () = ();
                #word
            };
        }
    });
    quote!(#(#warnings)*)
}

/// What stands in for the handle when the attribute has errors: the struct with `ID`,
/// `spec()` and a `TypedOperation` impl, so uses of the handle elsewhere (`add::ID`,
/// `register_typed::<add>()`) do not add errors to the ones that matter. Nothing in it runs:
/// the crate does not compile.
pub(crate) fn stub_handle(func: &syn::ItemFn, private: &TokenStream) -> TokenStream {
    if func.sig.receiver().is_some() {
        // A method: in an `impl` or `trait` block, where a struct cannot be.
        return TokenStream::new();
    }
    let vis = &func.vis;
    let ident = &func.sig.ident;
    let cfgs: Vec<&syn::Attribute> = cfgs_of(func).collect();
    let value = quote!(#private::serde_json::Value);
    quote! {
        #(#cfgs)*
        #[allow(non_camel_case_types, dead_code)]
        #vis struct #ident {}

        #(#cfgs)*
        #[allow(dead_code)]
        const _: () = {
            impl #ident {
                #vis const ID: &'static #private::str = "";

                #vis fn spec() -> #private::OperationSpec {
                    #private::unreachable!()
                }
            }

            impl #private::TypedOperation for #ident {
                const ID: &'static #private::str = "";
                const KIND: #private::OperationKind = #private::OperationKind::Query;
                type Input = #value;
                type Output = #value;

                fn spec() -> #private::OperationSpec {
                    #private::unreachable!()
                }

                fn handler() -> #private::Handler {
                    #private::unreachable!()
                }
            }
        };
    }
}

/// The fn's `#[cfg]`s, repeated on every generated item so they come and go together.
fn cfg_attrs<'a>(op: &'a Operation<'_>) -> impl Iterator<Item = &'a syn::Attribute> {
    cfgs_of(op.func)
}

fn cfgs_of(func: &syn::ItemFn) -> impl Iterator<Item = &syn::Attribute> {
    func.attrs.iter().filter(|attr| attr.path().is_ident("cfg"))
}

/// `concat!(doc, "\n", doc, ..)` of doc attribute values, as `Option<&'static str>`.
fn doc_option(private: &TokenStream, docs: &[&Expr]) -> TokenStream {
    if docs.is_empty() {
        return quote!(#private::None);
    }
    let lines = docs.iter().enumerate().map(|(i, doc)| {
        if i == 0 {
            quote!(#doc)
        } else {
            quote!("\n", #doc)
        }
    });
    quote!(#private::Some(#private::concat!(#(#lines),*)))
}

/// `private` with every token at `span`, so a helper's path points where its check applies.
fn respan(private: &TokenStream, span: Span) -> TokenStream {
    private
        .clone()
        .into_iter()
        .map(|mut token| {
            token.set_span(span);
            token
        })
        .collect()
}

/// The span of the output data type as written (the return type when it is not written).
fn data_span(op: &Operation<'_>) -> Span {
    let shape = Shape::of(&op.output.value);
    shape
        .data()
        .map_or_else(|| op.output.value.span(), Spanned::span)
}

fn handle_struct(op: &Operation<'_>) -> TokenStream {
    let vis = &op.func.vis;
    let ident = &op.func.sig.ident;
    let call = if op.output.stream {
        "subscribe"
    } else {
        "call"
    };
    let doc = format!(
        "Typed handle of the operation `{id}` (generated by `#[operation]` on the fn `{ident}`).\n\n\
         `{ident}::ID`, `{ident}::spec()`, `{ident}::input(..)` and `{ident}::{call}(&ctx, ..)`; \
         it implements `opkit::TypedOperation` for `register_typed::<{ident}>()` and \
         `OperationEnv::{call}_typed::<{ident}>(..)`.",
        id = op.id,
    );
    quote! {
        #[doc = #doc]
        #[allow(non_camel_case_types, dead_code)]
        #vis struct #ident {}
    }
}

fn kind_tokens(op: &Operation<'_>) -> TokenStream {
    let private = &op.private;
    match op.kind {
        Kind::Query => quote!(#private::OperationKind::Query),
        Kind::Mutation => quote!(#private::OperationKind::Mutation),
        Kind::Subscription => quote!(#private::OperationKind::Subscription),
    }
}

/// The input object's type: `T` for a parameter `Input<T>`, opkit's `Args<handle>` otherwise.
fn object_type(op: &Operation<'_>) -> TokenStream {
    let private = &op.private;
    let ident = &op.func.sig.ident;
    match op.whole_input() {
        Some(inner) => quote!(#inner),
        None => quote!(#private::Args<#ident>),
    }
}

/// The output data type as written; `serde_json::Value` for a bare `ResponseEnvelope`.
fn data_type(op: &Operation<'_>) -> TokenStream {
    let private = &op.private;
    match Shape::of(&op.output.value).data() {
        Some(ty) => quote!(#ty),
        None => quote!(#private::serde_json::Value),
    }
}

/// `impl OperationDef for <handle>` (opkit implements `TypedOperation` from it): the types,
/// one const of the operation's facts (its id, its cache, its spec's parts and schemas) and
/// the JSON handler. Each item written is one more the compiler checks, lowers and hashes on
/// every edit, for every operation: the id, kind, timeout, shared id and spec are read from
/// the const by opkit's generic impl.
fn typed_operation(op: &Operation<'_>) -> TokenStream {
    let private = &op.private;
    let ident = &op.func.sig.ident;
    let id = &op.id;
    let namespace = &op.namespace;
    let name = &op.name;
    let kind = kind_tokens(op);
    let input_ty = match op.whole_input() {
        Some(inner) => quote_spanned!(inner.span()=> type Input = #inner;),
        None => quote!(type Input = #private::Args<#ident>;),
    };
    let data = data_type(op);
    let output_ty = quote_spanned!(data_span(op)=> type Output = #data;);
    let input_schema = match op.whole_input() {
        Some(inner) => {
            let at = respan(private, inner.span());
            quote_spanned!(inner.span()=> #at::whole_input_schema::<#inner>)
        }
        None => quote!(#private::args_schema::<#ident>),
    };
    let at = respan(private, data_span(op));
    let output_schema = quote_spanned!(data_span(op)=> #at::output_schema::<#data>);
    let optional_parts = optional_spec_parts(op);
    let checks = type_checks(op);
    let handler = json_handler(op);
    quote! {
        static __OPKIT_CACHE: #private::OperationCache = #private::OperationCache::new();

        impl #private::OperationDef for #ident {
            #input_ty
            #output_ty
            const PARTS: #private::OperationParts = #private::OperationParts {
                id: #id,
                cache: &__OPKIT_CACHE,
                spec: #private::SpecParts {
                    namespace: #namespace,
                    name: #name,
                    kind: #kind,
                    origin: #private::file!(),
                    line: #private::line!(),
                    #optional_parts
                    ..#private::SpecParts::DEFAULT
                },
                input_schema: #input_schema,
                output_schema: #output_schema,
            };

            fn handler() -> #private::Handler {
                #checks
                #handler
            }
        }
    }
}

/// The fields of `SpecParts` the attribute gives (description, access rule, errors, states,
/// layers, edge options, timeout); `SpecParts::DEFAULT` has the rest.
fn optional_spec_parts(op: &Operation<'_>) -> TokenStream {
    let private = &op.private;
    let mut parts = TokenStream::new();
    if !op.docs.is_empty() {
        let description = doc_option(private, &op.docs);
        parts.extend(quote!(description: #description,));
    }
    let states = op.states().map(|inner| {
        let at = respan(private, inner.span());
        quote_spanned!(inner.span()=> #at::state_key::<#inner>)
    });
    let lists: [(TokenStream, Vec<TokenStream>); 6] = [
        (
            quote!(scopes),
            op.scopes.iter().map(ToTokens::to_token_stream).collect(),
        ),
        (
            quote!(roles),
            op.roles.iter().map(ToTokens::to_token_stream).collect(),
        ),
        (
            quote!(errors),
            op.errors
                .iter()
                .map(|variant| quote!(#private::ErrorKind::#variant))
                .collect(),
        ),
        (quote!(states), states.collect()),
        (
            quote!(layers),
            op.layers.iter().map(ToTokens::to_token_stream).collect(),
        ),
        (
            quote!(edges),
            op.edges
                .json()
                .into_iter()
                .map(|(name, options)| quote!((#name, #options)))
                .collect(),
        ),
    ];
    for (field, items) in lists {
        if !items.is_empty() {
            parts.extend(quote!(#field: &[#(#items),*],));
        }
    }
    if let Some(ms) = op.timeout_ms {
        parts.extend(quote!(timeout_ms: #private::Some(#ms),));
    }
    parts
}

/// Checks of what the macro read from names: context parameters are opkit's, and a type read
/// as plain data is not a `Result` or `ResponseEnvelope` behind an alias.
fn type_checks(op: &Operation<'_>) -> TokenStream {
    let private = &op.private;
    let contexts = op.params.iter().filter_map(|param| match param {
        Param::Context { ty, .. } => {
            let at = respan(private, ty.span());
            Some(quote_spanned!(ty.span()=> #at::assert_context::<#ty>();))
        }
        Param::State { ty, .. } => {
            let at = respan(private, ty.span());
            Some(quote_spanned!(ty.span()=> #at::assert_state_param::<#ty>();))
        }
        _ => None,
    });
    let plain = Shape::of(&op.output.value).plain().map(|ty| {
        let at = respan(private, ty.span());
        quote_spanned! {ty.span()=>
            #at::assert_plain(#at::Probe::<#ty>::new().verdict());
        }
    });
    quote!(#(#contexts)* #plain)
}

/// `add::ID`, `add::spec()`, `add::input(..)` and `add::call(&ctx, ..)` / `subscribe`.
fn inherent_items(op: &Operation<'_>, locals: &Locals) -> TokenStream {
    let private = &op.private;
    let vis = &op.func.vis;
    let ident = &op.func.sig.ident;
    let id = &op.id;
    let params = input_params(op, locals);
    let make_input = make_input(op, locals);
    let run = run_fn(op, locals);
    let call = typed_call(op, locals);
    let id_doc = format!("The operation id: `{id}`.");
    quote! {
        #run

        #[allow(dead_code, clippy::too_many_arguments)]
        impl #ident {
            #[doc = #id_doc]
            #vis const ID: &'static #private::str = #id;

            /// The operation's spec; its schemas are computed once.
            #vis fn spec() -> #private::OperationSpec {
                <Self as #private::TypedOperation>::spec()
            }

            /// The operation's input object, from the fn's arguments (without the context).
            #vis fn input(#(#params),*) -> <Self as #private::TypedOperation>::Input {
                #make_input
            }

            #call
        }
    }
}

/// The body of `add::input(..)`: the whole input unwrapped, or the fields' values in the
/// input's `Args`.
fn make_input(op: &Operation<'_>, locals: &Locals) -> TokenStream {
    let private = &op.private;
    let whole = op.params.iter().find_map(|param| match param {
        Param::Whole { ty, .. } => Some(*ty),
        _ => None,
    });
    match whole {
        Some(ty) => {
            let at = respan(private, ty.span());
            let input = &locals.input;
            quote_spanned!(ty.span()=> #at::unwrap_input::<#ty>(#input))
        }
        None => {
            let values = cons(
                op.fields()
                    .map(|(ident, ..)| local(ident).into_token_stream()),
            );
            quote!(#private::Args::new(#values))
        }
    }
}

/// `add::call(&ctx, ..)`, or `add::subscribe(&ctx, ..)` for a stream: the typed path.
fn typed_call(op: &Operation<'_>, locals: &Locals) -> TokenStream {
    let private = &op.private;
    let vis = &op.func.vis;
    let ident = &op.func.sig.ident;
    let ctx = &locals.ctx;
    let id = &op.id;
    let params = input_params(op, locals);
    let args = input_args(op, locals);
    let views = quote!(#private::typed_views!(#ident));
    let call_doc = format!(
        "Calls the fn directly (no JSON), as the registry would run operation `{id}`: a panic \
         becomes `EXECUTION_ERROR`, the context's deadline `TIMEOUT` and its cancellation \
         `ABORTED`; the result comes back in a `ResponseEnvelope` (a local envelope, unless the \
         fn returned its own)."
    );
    let envelope = quote!(#private::Result<
        #private::ResponseEnvelope<<Self as #private::TypedOperation>::Output>,
        #private::CallError,
    >);
    // `call` / `subscribe` are `#[inline]` so they are compiled only where they are used, not
    // in every crate that defines operations: the typed path (its views, its endpoint for
    // middleware, its guard) is most of an operation's code, and many crates never call it.
    if op.output.stream {
        quote! {
            #[doc = #call_doc]
            #[inline]
            #vis fn subscribe(#ctx: &#private::OperationContext, #(#params),*)
                -> impl #private::futures::Stream<Item = #envelope> + use<>
            {
                #private::subscribe_typed::<Self, _, _>(
                    #ctx,
                    Self::input(#(#args),*),
                    #views,
                    #private::stream_endpoint!(#ident, __opkit_run),
                    __opkit_run,
                )
            }
        }
    } else {
        quote! {
            #[doc = #call_doc]
            #[inline]
            #vis fn call(#ctx: &#private::OperationContext, #(#params),*)
                -> impl #private::Future<Output = #envelope> + use<>
            {
                #private::call_unary::<Self, _, _>(
                    #ctx,
                    Self::input(#(#args),*),
                    #views,
                    #private::unary_endpoint!(#ident, __opkit_run),
                    __opkit_run,
                )
            }
        }
    }
}

/// The constructor `static` that adds the operation to the list
/// `OperationRegistry::from_inventory` reads: in the platform's constructor section, so the
/// loader runs it before `main` (opkit's `registry/linked.rs`; opkit itself does not build for
/// a target outside these three).
fn registration(op: &Operation<'_>) -> TokenStream {
    let private = &op.private;
    let ident = &op.func.sig.ident;
    quote!(#private::constructor_static!(#ident);)
}
