//! Expansion: the typed handle, the input type, the `TypedOperation` impl and the inventory
//! entry generated beside the user's function.
//!
//! Every path to the runtime goes through `__private` (see `Operation::private`). Every trait
//! requirement on a user type is checked by a helper whose tokens carry that type's span, so
//! errors point at the type the user wrote; all uses of one type share one span and one
//! predicate, so the compiler reports a missing impl once.

use crate::args::Kind;
use crate::model::{Operation, Param};
use crate::shape::Shape;
use proc_macro2::{Ident, Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Expr, Type};

/// Names of the macro's own locals: `mixed_site`, so they never meet the user's names.
struct Locals {
    input: Ident,
    ctx: Ident,
    fields: Ident,
    state: Ident,
    serializer: Ident,
    deserializer: Ident,
}

impl Locals {
    fn new() -> Self {
        let local = |name: &str| Ident::new(name, Span::mixed_site());
        Self {
            input: local("__input"),
            ctx: local("__ctx"),
            fields: local("__fields"),
            state: local("__state"),
            serializer: local("__serializer"),
            deserializer: local("__deserializer"),
        }
    }
}

/// Everything generated beside the user's function.
pub(crate) fn expand(op: &Operation<'_>) -> TokenStream {
    let locals = Locals::new();
    let cfgs: Vec<&syn::Attribute> = cfg_attrs(op).collect();
    let handle = handle_struct(op);
    let input = input_type(op, &locals);
    let typed = typed_operation(op, &locals);
    let send_cause = send_cause(op);
    let inherent = inherent_items(op, &locals);
    let registration = registration(op);
    quote! {
        #(#cfgs)*
        #handle

        #(#cfgs)*
        #[allow(deprecated)]
        const _: () = {
            #input
            #typed
            #send_cause
            #inherent
            #registration
        };
    }
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

/// The input type: a struct with one field per parameter and its serde and schema impls;
/// nothing for `Input<T>`, whose input type is `T`.
fn input_type(op: &Operation<'_>, locals: &Locals) -> TokenStream {
    if op.whole_input().is_some() {
        return TokenStream::new();
    }
    let private = &op.private;
    let vis = &op.func.vis;
    let Locals {
        input: input_var,
        fields: fields_var,
        state,
        serializer,
        deserializer,
        ..
    } = locals;
    let fields: Vec<_> = op.fields().collect();
    let idents: Vec<&Ident> = fields.iter().map(|(ident, ..)| *ident).collect();
    let names: Vec<&str> = fields.iter().map(|(_, name, ..)| *name).collect();
    let types: Vec<&Type> = fields.iter().map(|(_, _, ty, _)| *ty).collect();
    let count = fields.len();
    let schema_name = format!("{}Input", pascal_case(&op.name));
    let error = quote!(<__D as #private::serde::Deserializer<'de>>::Error);
    let consts: Vec<Ident> = (0..count)
        .map(|i| format_ident!("__OPKIT_FIELD_{}", i))
        .collect();
    let typed_fields = fields
        .iter()
        .zip(&consts)
        .map(|((_, name, ty, docs), konst)| {
            let description = doc_option(private, docs);
            // The one use of the parameter's type that requires its traits.
            let at = respan(private, ty.span());
            let new = quote_spanned!(ty.span()=> #at::typed_field::<#ty>);
            quote!(const #konst: #private::TypedField<#ty> = #new(#name, #description);)
        });
    let takes = idents
        .iter()
        .zip(&consts)
        .enumerate()
        .map(|(index, (ident, konst))| quote!(#ident: #fields_var.take(#index, &#konst)?));
    quote! {
        #[doc(hidden)]
        #vis struct __OpkitInput {
            #(#vis #idents: #types,)*
        }

        #(#typed_fields)*
        const __OPKIT_FIELDS: &[#private::Field; #count] = &[#(#consts.erase()),*];

        impl __OpkitInput {
            /// Reads the input from its JSON object in one pass (the registry's decoder).
            fn __opkit_from_json(
                #input_var: #private::serde_json::Value,
            ) -> #private::Result<Self, #private::serde_json::Error> {
                #[allow(unused_mut)]
                let mut #fields_var = #private::InputFields::from_value(#input_var, __OPKIT_FIELDS)?;
                #private::Ok(__OpkitInput { #(#takes,)* })
            }
        }

        impl<'de> #private::serde::Deserialize<'de> for __OpkitInput {
            fn deserialize<__D>(#deserializer: __D) -> #private::Result<Self, #error>
            where
                __D: #private::serde::Deserializer<'de>,
            {
                let #input_var =
                    <#private::serde_json::Value as #private::serde::Deserialize<'de>>::deserialize(#deserializer)?;
                __OpkitInput::__opkit_from_json(#input_var)
                    .map_err(<#error as #private::serde::de::Error>::custom)
            }
        }

        impl #private::serde::Serialize for __OpkitInput
        where
            #(for<'__opkit> #types: #private::serde::Serialize,)*
        {
            fn serialize<__S>(&self, #serializer: __S) -> #private::Result<
                <__S as #private::serde::Serializer>::Ok,
                <__S as #private::serde::Serializer>::Error,
            >
            where
                __S: #private::serde::Serializer,
            {
                #[allow(unused_mut)]
                let mut #state = #private::serde::Serializer::serialize_struct(#serializer, #schema_name, #count)?;
                #(#private::serde::ser::SerializeStruct::serialize_field(&mut #state, #names, &self.#idents)?;)*
                #private::serde::ser::SerializeStruct::end(#state)
            }
        }

        impl #private::fmt::Debug for __OpkitInput
        where
            #(for<'__opkit> #types: #private::fmt::Debug,)*
        {
            fn fmt(&self, formatter: &mut #private::fmt::Formatter<'_>) -> #private::fmt::Result {
                formatter
                    .debug_struct(#schema_name)
                    #(.field(#names, &self.#idents))*
                    .finish()
            }
        }

        impl #private::schemars::JsonSchema for __OpkitInput {
            fn schema_name() -> #private::Cow<'static, #private::str> {
                #private::Cow::Borrowed(#schema_name)
            }

            fn inline_schema() -> #private::bool {
                true
            }

            fn json_schema(generator: &mut #private::schemars::SchemaGenerator) -> #private::schemars::Schema {
                #private::fields_schema(generator, __OPKIT_FIELDS)
            }
        }
    }
}

fn pascal_case(name: &str) -> String {
    name.split('_')
        .filter(|part| !part.is_empty())
        .map(|part| {
            let mut chars = part.chars();
            chars.next().map_or_else(String::new, |first| {
                first.to_ascii_uppercase().to_string() + chars.as_str()
            })
        })
        .collect()
}

fn kind_tokens(op: &Operation<'_>) -> TokenStream {
    let private = &op.private;
    match op.kind {
        Kind::Query => quote!(#private::OperationKind::Query),
        Kind::Mutation => quote!(#private::OperationKind::Mutation),
        Kind::Subscription => quote!(#private::OperationKind::Subscription),
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

/// `impl TypedOperation for <handle>`: id, kind, types, cached spec, JSON handler.
fn typed_operation(op: &Operation<'_>, locals: &Locals) -> TokenStream {
    let private = &op.private;
    let ident = &op.func.sig.ident;
    let id = &op.id;
    let namespace = &op.namespace;
    let name = &op.name;
    let kind = kind_tokens(op);
    let input_ty = match op.whole_input() {
        Some(inner) => quote_spanned!(inner.span()=> type Input = #inner;),
        None => quote!(
            type Input = __OpkitInput;
        ),
    };
    let data = data_type(op);
    let output_ty = quote_spanned!(data_span(op)=> type Output = #data;);
    let output_from_type = Shape::of(&op.output.value).is_data();
    let description = doc_option(private, &op.docs);
    let scopes = &op.scopes;
    let roles = &op.roles;
    let tool_name = match &op.tool_name {
        Some(name) => quote!(#private::Some(#name)),
        None => quote!(#private::None),
    };
    let error_kinds = op
        .errors
        .iter()
        .map(|variant| quote!(#private::ErrorKind::#variant));
    let states = op.states().map(|inner| {
        let at = respan(private, inner.span());
        quote_spanned!(inner.span()=> #at::state_key::<#inner>)
    });
    let input_schema = match op.whole_input() {
        Some(inner) => {
            let at = respan(private, inner.span());
            quote_spanned!(inner.span()=> #at::whole_input_schema::<#inner>)
        }
        None => quote!(|| #private::fields_input_schema(__OPKIT_FIELDS)),
    };
    let at = respan(private, data_span(op));
    let output_schema = quote_spanned!(data_span(op)=> #at::output_schema::<#data>);
    let checks = type_checks(op);
    let handler = json_handler(op, locals);
    quote! {
        impl #private::TypedOperation for #ident {
            const ID: &'static #private::str = #id;
            const KIND: #private::OperationKind = #kind;
            const OUTPUT_FROM_TYPE: #private::bool = #output_from_type;
            #input_ty
            #output_ty

            fn spec() -> #private::OperationSpec {
                static SPEC: #private::OnceLock<#private::OperationSpec> = #private::OnceLock::new();
                #private::cached_spec(
                    &SPEC,
                    #private::SpecParts {
                        namespace: #namespace,
                        name: #name,
                        kind: #kind,
                        description: #description,
                        scopes: &[#(#scopes),*],
                        roles: &[#(#roles),*],
                        errors: &[#(#error_kinds),*],
                        states: &[#(#states),*],
                        tool_name: #tool_name,
                        origin: #private::concat!(#private::file!(), ":", #private::line!()),
                    },
                    #input_schema,
                    #output_schema,
                )
            }

            fn handler() -> #private::Handler {
                #checks
                #handler
            }
        }
    }
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
            {
                #[allow(unused_imports)]
                use #at::{PlainProbe as _, ShapedProbe as _};
                #at::assert_plain((&#at::Probe::<#ty>::new()).verdict());
            }
        }
    });
    quote!(#(#contexts)* #plain)
}

/// The parameters of `__opkit_run` and of the typed calls: the fn's, without the context.
fn input_params(op: &Operation<'_>, locals: &Locals) -> Vec<TokenStream> {
    let input = &locals.input;
    op.params
        .iter()
        .filter_map(|param| match param {
            Param::Field { ident, ty, .. } => Some(quote!(#ident: #ty)),
            Param::Whole { ty, .. } => Some(quote!(#input: #ty)),
            Param::Context { .. } | Param::State { .. } => None,
        })
        .collect()
}

/// The arguments passing `input_params` on.
fn input_args(op: &Operation<'_>, locals: &Locals) -> Vec<TokenStream> {
    let input = &locals.input;
    op.params
        .iter()
        .filter_map(|param| match param {
            Param::Field { ident, .. } => Some(quote!(#ident)),
            Param::Whole { .. } => Some(quote!(#input)),
            Param::Context { .. } | Param::State { .. } => None,
        })
        .collect()
}

/// The arguments of `__opkit_run` from a decoded input.
fn args_from_input(op: &Operation<'_>, locals: &Locals) -> Vec<TokenStream> {
    let private = &op.private;
    let input = &locals.input;
    op.params
        .iter()
        .filter_map(|param| match param {
            Param::Field { ident, .. } => Some(quote!(#input.#ident)),
            Param::Whole { ty, .. } => {
                let at = respan(private, ty.span());
                Some(quote_spanned!(ty.span()=> #at::wrap_input::<#ty>(#input)))
            }
            Param::Context { .. } | Param::State { .. } => None,
        })
        .collect()
}

/// The arguments of the user's fn inside `__opkit_run`.
fn fn_args(op: &Operation<'_>, locals: &Locals) -> Vec<TokenStream> {
    let Locals { input, ctx, .. } = locals;
    let mut states = state_vars(op).into_iter();
    op.params
        .iter()
        .map(|param| match param {
            Param::Context { by_ref: true, .. } => quote!(&#ctx),
            Param::Context { by_ref: false, .. } => quote!(#ctx),
            Param::Field { ident, .. } => quote!(#ident),
            Param::Whole { .. } => quote!(#input),
            Param::State { .. } => {
                let var = states.next();
                quote!(#var)
            }
        })
        .collect()
}

/// The macro's locals holding the fn's `State<T>` arguments, one per state parameter.
fn state_vars(op: &Operation<'_>) -> Vec<Ident> {
    op.states()
        .enumerate()
        .map(|(index, _)| format_ident!("__opkit_state_{}", index, span = Span::mixed_site()))
        .collect()
}

/// `(__opkit_state_0, ..)` and the expression reading them from the context: the
/// `Result` of a tuple of the fn's `State<T>` arguments (`Ok(())` when it takes none).
fn state_reads(op: &Operation<'_>, locals: &Locals) -> (TokenStream, TokenStream) {
    let private = &op.private;
    let ident = &op.func.sig.ident;
    let ctx = &locals.ctx;
    let vars = state_vars(op);
    let reads = op.params.iter().filter_map(|param| match param {
        Param::State { inner, .. } => {
            let at = respan(private, inner.span());
            Some(quote_spanned!(inner.span()=> #at::state::<#inner>(&#ctx, <#ident as #private::TypedOperation>::ID)?))
        }
        _ => None,
    });
    (
        quote!((#(#vars,)*)),
        quote!((|| #private::Ok::<_, #private::CallError>((#(#reads,)*)))()),
    )
}

/// `__opkit_run`: calls the user's fn and splits its result, the one place the return type's
/// shape is checked; the JSON handler and the typed call both go through it.
fn run_fn(op: &Operation<'_>, locals: &Locals) -> TokenStream {
    let private = &op.private;
    let ident = &op.func.sig.ident;
    let ctx = &locals.ctx;
    let params = input_params(op, locals);
    let args = fn_args(op, locals);
    let marker = Shape::of(&op.output.value).marker(private);
    let value_span = op.output.value.span();
    let item = quote!(#private::Result<
        #private::Produced<<#ident as #private::TypedOperation>::Output>,
        #private::CallError,
    >);
    let has_states = op.states().next().is_some();
    let (state_vars, state_reads) = state_reads(op, locals);
    let convert = error_converter(op);
    if !op.output.stream {
        let at = respan(private, value_span);
        let produce = quote_spanned!(value_span=> #at::produce::<#marker, _, _, _>);
        let body = if has_states {
            quote! {
                let __opkit_states = #state_reads;
                async move {
                    let #state_vars = __opkit_states?;
                    #produce(#ident(#(#args),*).await, #convert)
                }
            }
        } else {
            quote!(async move { #produce(#ident(#(#args),*).await, #convert) })
        };
        return quote! {
            fn __opkit_run(#ctx: #private::OperationContext, #(#params),*)
                -> impl #private::Future<Output = #item> + use<>
            {
                #body
            }
        };
    }
    let borrows_ctx = op
        .params
        .iter()
        .any(|param| matches!(param, Param::Context { by_ref: true, .. }));
    let items = if borrows_ctx {
        let sink = Ident::new("__sink", Span::mixed_site());
        let made = if op.output.is_async {
            quote!(#ident(#(#args),*).await)
        } else {
            quote!(#ident(#(#args),*))
        };
        quote!(#private::forward_stream(move |#sink| async move {
            #private::forward(#made, #sink).await
        }))
    } else if op.output.is_async {
        quote!(#private::flatten_stream(async move { #ident(#(#args),*).await }))
    } else {
        quote!(#ident(#(#args),*))
    };
    let at = respan(private, value_span);
    let produce = quote_spanned!(value_span=> #at::produce_stream::<#marker, _, _, _>);
    let body = if has_states {
        quote! {
            match #state_reads {
                #private::Ok(#state_vars) => #private::futures::StreamExt::left_stream(#produce(#items, #convert)),
                #private::Err(error) => #private::futures::StreamExt::right_stream(#private::failed_stream(error)),
            }
        }
    } else {
        quote!(#produce(#items, #convert))
    };
    quote! {
        fn __opkit_run(#ctx: #private::OperationContext, #(#params),*)
            -> impl #private::futures::Stream<Item = #item> + use<>
        {
            #body
        }
    }
}

/// The conversion of the fn's error into the call's `CallError`, chosen by the error's type
/// (see `__private::ErrorProbe`: the user's `Into<CallError>`, else a `std::error::Error`,
/// else `anyhow::Error`) and spanned at the error type as written.
fn error_converter(op: &Operation<'_>) -> TokenStream {
    let private = &op.private;
    let value = &op.output.value;
    let Shape::Fallible { error, .. } = Shape::of(value) else {
        return quote!(#private::no_error);
    };
    let span = error.map_or_else(|| value.span(), Spanned::span);
    let at = respan(private, span);
    let error = Ident::new("__error", span);
    quote_spanned! {span=>
        |#error| {
            #[allow(unused_imports)]
            use #at::{AnyhowErrorKind as _, IntoCallErrorKind as _, OtherErrorKind as _, StdErrorKind as _};
            (&&&&#at::ErrorProbe(&#error)).opkit_error_kind().into_call_error(#error)
        }
    }
}

/// The type-erased JSON handler the registry runs.
fn json_handler(op: &Operation<'_>, locals: &Locals) -> TokenStream {
    let private = &op.private;
    let Locals { input, ctx, .. } = locals;
    let args = args_from_input(op, locals);
    let decode = match op.whole_input() {
        Some(inner) => {
            let at = respan(private, inner.span());
            quote_spanned!(inner.span()=> #at::decode::<#inner>)
        }
        None => quote!(__OpkitInput::__opkit_from_json),
    };
    let data = data_type(op);
    let at = respan(private, data_span(op));
    let encode = quote_spanned!(data_span(op)=> #at::encode::<#data>);
    let span = send_span(op);
    let at = respan(private, span);
    let (probes, build, checked) = if op.output.stream {
        (
            quote_spanned!(span=> #at::{NotSendProbe as _, SendStreamProbe as _}),
            quote_spanned!(span=> streaming),
            quote_spanned!(span=> stream::<Self>),
        )
    } else {
        (
            quote_spanned!(span=> #at::{NotSendProbe as _, SendProbe as _}),
            quote_spanned!(span=> unary),
            quote_spanned!(span=> future::<Self>),
        )
    };
    let verdict = Ident::new("__verdict", Span::mixed_site());
    quote! {
        #[allow(unused_imports)]
        use #probes;
        let #verdict = (&#private::Runner::<Self, _>::new(|#input: <Self as #private::TypedOperation>::Input, #ctx: #private::OperationContext| {
            __opkit_run(#ctx, #(#args),*)
        }))
        .#build(#private::Codec { decode: #decode, encode: #encode });
        #verdict.#checked()
    }
}

/// Where a future or stream that is not `Send` is reported: the return type of a
/// subscription (where `+ Send` goes), the name of a query or mutation.
fn send_span(op: &Operation<'_>) -> Span {
    match &op.func.sig.output {
        syn::ReturnType::Type(_, ty) if op.output.stream => ty.span(),
        _ => op.func.sig.ident.span(),
    }
}

/// A fn that is never called, calling the user's fn only to require `Send` of what it makes:
/// when the handler finds it is not `Send` (one error, of ours), the compiler explains this
/// bound with the value and the `.await` involved.
fn send_cause(op: &Operation<'_>) -> TokenStream {
    let private = &op.private;
    let ident = &op.func.sig.ident;
    let span = send_span(op);
    let at = respan(private, span);
    let args = op.params.iter().map(|_| quote!(#private::never()));
    let made = quote_spanned!(span=> #ident(#(#args),*));
    let check = if op.output.stream && op.output.is_async {
        quote_spanned!(span=> #at::assert_send_output(#made);)
    } else {
        quote_spanned!(span=> #at::assert_send(#made);)
    };
    let name = Ident::new("__opkit_send_cause", Span::mixed_site());
    quote! {
        #[allow(dead_code, unreachable_code, clippy::diverging_sub_expression)]
        fn #name() {
            #check
        }
    }
}

/// `add::ID`, `add::spec()`, `add::input(..)` and `add::call(&ctx, ..)` / `subscribe`.
fn inherent_items(op: &Operation<'_>, locals: &Locals) -> TokenStream {
    let private = &op.private;
    let vis = &op.func.vis;
    let ident = &op.func.sig.ident;
    let Locals { input, ctx, .. } = locals;
    let id = &op.id;
    let params = input_params(op, locals);
    let args = input_args(op, locals);
    let make_input = match op.params.iter().find_map(|param| match param {
        Param::Whole { ty, .. } => Some(*ty),
        _ => None,
    }) {
        Some(ty) => {
            let at = respan(private, ty.span());
            quote_spanned!(ty.span()=> #at::unwrap_input::<#ty>(#input))
        }
        None => {
            let idents = op.fields().map(|(ident, ..)| ident);
            quote!(__OpkitInput { #(#idents),* })
        }
    };
    let run = run_fn(op, locals);
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
    let call = if op.output.stream {
        quote! {
            #[doc = #call_doc]
            #vis fn subscribe(#ctx: &#private::OperationContext, #(#params),*)
                -> impl #private::futures::Stream<Item = #envelope> + use<>
            {
                #private::subscribe_typed::<Self, _, _>(#ctx, move |#ctx| __opkit_run(#ctx, #(#args),*))
            }
        }
    } else {
        quote! {
            #[doc = #call_doc]
            #vis fn call(#ctx: &#private::OperationContext, #(#params),*)
                -> impl #private::Future<Output = #envelope> + use<>
            {
                #private::call_unary::<Self, _, _>(#ctx, move |#ctx| __opkit_run(#ctx, #(#args),*))
            }
        }
    };
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

/// The inventory entry `OperationRegistry::from_inventory` finds.
fn registration(op: &Operation<'_>) -> TokenStream {
    let private = &op.private;
    let ident = &op.func.sig.ident;
    let type_id = format_ident!("__opkit_fn_type_id", span = Span::mixed_site());
    quote! {
        fn #type_id() -> #private::TypeId {
            #private::type_id_of(&#ident)
        }

        #private::inventory::submit! {
            #private::OperationRegistration {
                register: #private::register_typed::<#ident>,
                fn_type_id: #type_id,
            }
        }
    }
}
