//! Running the fn: the `run` function the handler and the typed call share, the error
//! converter, the JSON handler, and the `Send` checks' spans and causes.

use super::input::{args_from_input, fn_args, input_args, state_reads};
use super::{Locals, data_span, data_type, object_type, respan};
use crate::model::{Operation, Param};
use crate::shape::Shape;
use proc_macro2::{Ident, Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

/// `__opkit_run`: calls the user's fn and splits its result, the one place the return type's
/// shape is checked; the JSON handler and the typed call both go through it.
pub(super) fn run_fn(op: &Operation<'_>, locals: &Locals) -> TokenStream {
    let run = RunParts::of(op, locals);
    if op.output.stream {
        stream_run(op, &run)
    } else {
        unary_run(op, &run)
    }
}

/// What both kinds of `__opkit_run` are made of.
struct RunParts<'a> {
    /// The context parameter, for a fn that reads its context only.
    ctx: Option<&'a Ident>,
    /// The input parameter and the input object's type.
    input: (&'a Ident, TokenStream),
    /// The fn's arguments taken out of the input object: `let a = __input.values.0;` per
    /// field, or the whole input wrapped back into its `Input<T>`.
    unpack: TokenStream,
    /// The user's fn called with its arguments: `add(a, b)`.
    call: TokenStream,
    /// The runtime's shape marker of the return type (`Plain`, `Envelope`, `Fallible<..>`).
    marker: TokenStream,
    /// `(__opkit_state_0, ..)` and the expression reading them, when the fn takes state.
    states: Option<(TokenStream, TokenStream)>,
    /// The conversion of the fn's error into a `CallError`.
    convert: TokenStream,
}

impl<'a> RunParts<'a> {
    fn of(op: &Operation<'_>, locals: &'a Locals) -> Self {
        let private = &op.private;
        let ident = &op.func.sig.ident;
        let args = fn_args(op, locals);
        let names = input_args(op, locals);
        let values = args_from_input(op, locals);
        Self {
            ctx: op.reads_context().then_some(&locals.ctx),
            input: (&locals.input, object_type(op)),
            // One pattern: every value is read before any name is bound (a parameter may
            // be named like the input itself).
            unpack: if names.is_empty() {
                TokenStream::new()
            } else {
                quote!(let (#(#names,)*) = (#(#values,)*);)
            },
            call: quote!(#ident(#(#args),*)),
            marker: Shape::of(&op.output.value).marker(private),
            states: op
                .states()
                .next()
                .is_some()
                .then(|| state_reads(op, locals)),
            convert: error_converter(op),
        }
    }

    /// `fn __opkit_run(input, ctx) -> impl #returns + use<> { #body }`: the one fn both the
    /// registry's handler and the typed call run the fn through. A query's or mutation's
    /// takes a `ContextArg` (the registry's context moved in, or a typed caller's lent) and
    /// makes it owned only when the fn reads it; a subscription's takes the context owned.
    fn function(&self, op: &Operation<'_>, returns: TokenStream, body: TokenStream) -> TokenStream {
        let private = &op.private;
        let Self {
            ctx,
            input: (input, input_ty),
            unpack,
            ..
        } = self;
        let (ctx_ty, owned) = if op.output.stream {
            (quote!(#private::OperationContext), None)
        } else {
            let owned = ctx.map(|ctx| quote!(let #ctx = #ctx.into_owned();));
            (quote!(#private::ContextArg<'_>), owned)
        };
        let ctx_param = ctx.map_or_else(|| quote!(_), |ctx| quote!(#ctx));
        // An input object with no fields is not read.
        let input_param = if unpack.is_empty() {
            quote!(_)
        } else {
            quote!(#input)
        };
        quote! {
            fn __opkit_run(#input_param: #input_ty, #ctx_param: #ctx_ty)
                -> impl #returns + use<>
            {
                #unpack
                #owned
                #body
            }
        }
    }
}

/// `__opkit_run` of a query or mutation: a future of the result.
fn unary_run(op: &Operation<'_>, run: &RunParts<'_>) -> TokenStream {
    let private = &op.private;
    let RunParts {
        call,
        marker,
        states,
        convert,
        ..
    } = run;
    let value_span = op.output.value.span();
    let at = respan(private, value_span);
    let produce = quote_spanned!(value_span=> #at::produce::<#marker, _, _, _>);
    let body = if let Some((state_vars, state_reads)) = states {
        quote! {
            let __opkit_states = #state_reads;
            async move {
                let #state_vars = __opkit_states?;
                #produce(#call.await, #convert)
            }
        }
    } else if borrows_ctx(op) {
        quote!(async move { #produce(#call.await, #convert) })
    } else {
        // Nothing to keep alive beside the fn's future: it is mapped (calling an `async fn`
        // runs none of its body).
        let produce = quote_spanned!(value_span=> #at::produce_future::<#marker, _, _, _>);
        quote!(#produce(#call, #convert))
    };
    let ident = &op.func.sig.ident;
    run.function(op, quote!(#private::RunFuture<#ident>), body)
}

/// `__opkit_run` of a subscription: a stream of results.
fn stream_run(op: &Operation<'_>, run: &RunParts<'_>) -> TokenStream {
    let private = &op.private;
    let RunParts {
        call,
        marker,
        states,
        convert,
        ..
    } = run;
    let items = if borrows_ctx(op) {
        let sink = Ident::new("__sink", Span::mixed_site());
        let made = if op.output.is_async {
            quote!(#call.await)
        } else {
            quote!(#call)
        };
        quote!(#private::forward_stream(move |#sink| async move {
            #private::forward(#made, #sink).await
        }))
    } else if op.output.is_async {
        quote!(#private::flatten_stream(async move { #call.await }))
    } else {
        call.clone()
    };
    let value_span = op.output.value.span();
    let at = respan(private, value_span);
    let produce = quote_spanned!(value_span=> #at::produce_stream::<#marker, _, _, _>);
    let body = if let Some((state_vars, state_reads)) = states {
        quote! {
            match #state_reads {
                #private::Ok(#state_vars) => #private::futures::StreamExt::left_stream(#produce(#items, #convert)),
                #private::Err(error) => #private::futures::StreamExt::right_stream(#private::failed_stream(error)),
            }
        }
    } else {
        quote!(#produce(#items, #convert))
    };
    let ident = &op.func.sig.ident;
    run.function(op, quote!(#private::RunStream<#ident>), body)
}

/// `true` when the fn takes the context by reference: its future borrows the context, which
/// the future that runs it must then own.
fn borrows_ctx(op: &Operation<'_>) -> bool {
    op.params
        .iter()
        .any(|param| matches!(param, Param::Context { by_ref: true, .. }))
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
    if crate::shape::error_is_anyhow(value) {
        // Written `anyhow::Error`: converted with opkit's `anyhow` feature; without it the
        // one error names the feature (not impls the orphan rule forbids).
        return match Shape::of(value) {
            // The type as written, so the error spans all of `anyhow::Error`.
            Shape::Fallible {
                error: Some(ty), ..
            } => quote_spanned!(span=> |#error| #at::anyhow_error::<#ty>(#error)),
            _ => quote_spanned!(span=> |#error| #at::anyhow_error(#error)),
        };
    }
    quote_spanned! {span=>
        |#error| #at::ErrorProbe(&#error).opkit_error_kind().into_call_error(#error)
    }
}

/// The type-erased JSON handler the registry runs, with the `Send` check's explanation.
pub(super) fn json_handler(op: &Operation<'_>) -> TokenStream {
    let private = &op.private;
    let decode = match op.whole_input() {
        Some(inner) => {
            let at = respan(private, inner.span());
            quote_spanned!(inner.span()=> #at::decode::<#inner>)
        }
        None => {
            let handle = &op.func.sig.ident;
            quote!(#private::decode_args::<#handle>)
        }
    };
    let data = data_type(op);
    let at = respan(private, data_span(op));
    let encode = quote_spanned!(data_span(op)=> #at::encode::<#data>);
    let span = send_span(op);
    let (build, checked) = if op.output.stream {
        (
            quote_spanned!(span=> streaming),
            quote_spanned!(span=> stream::<Self>),
        )
    } else {
        (
            quote_spanned!(span=> unary),
            quote_spanned!(span=> future::<Self>),
        )
    };
    let from_type = Shape::of(&op.output.value).is_data();
    let reads_context = op.reads_context();
    let verdict = Ident::new("__verdict", Span::mixed_site());
    let send_cause = send_cause(op);
    quote! {
        let #verdict = #private::Runner::<Self, _>::new(__opkit_run)
        .#build(#private::Codec {
            decode: #decode,
            encode: #encode,
            from_type: #from_type,
            reads_context: #reads_context,
        });
        let #verdict = #verdict.#checked();
        // After the verdict: its error (ours, with the fix) comes first, this one's second.
        #send_cause
        #verdict
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

/// A statement in the handler that never runs, calling the user's fn only to require `Send`
/// of what it makes: when the handler finds it is not `Send` (one error, of ours), the
/// compiler explains this bound with the value and the `.await` involved. A statement rather
/// than a fn of its own: one item less for the compiler to check per operation.
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
    quote! {
        #[allow(unreachable_code, clippy::diverging_sub_expression)]
        if false {
            #check
        }
    }
}
