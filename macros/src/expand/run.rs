//! Running the fn: the `run` function the handler and the typed call share, the error
//! converter, the JSON handler, and the `Send` checks' spans and causes.

use super::*;

/// `__opkit_run`: calls the user's fn and splits its result, the one place the return type's
/// shape is checked; the JSON handler and the typed call both go through it.
pub(super) fn run_fn(op: &Operation<'_>, locals: &Locals) -> TokenStream {
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
        } else if borrows_ctx(op) {
            quote!(async move { #produce(#ident(#(#args),*).await, #convert) })
        } else {
            // Nothing to keep alive beside the fn's future: map it rather than await it in an
            // `async` block, whose state would hold the arguments twice (as captured, and
            // inside the fn's future). Calling an `async fn` runs none of its body.
            let returned = Ident::new("__opkit_returned", Span::mixed_site());
            quote! {
                #private::futures::FutureExt::map(
                    #ident(#(#args),*),
                    move |#returned| #produce(#returned, #convert),
                )
            }
        };
        return quote! {
            fn __opkit_run(#ctx: #private::OperationContext, #(#params),*)
                -> impl #private::Future<Output = #item> + use<>
            {
                #body
            }
        };
    }
    let items = if borrows_ctx(op) {
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
pub(super) fn error_converter(op: &Operation<'_>) -> TokenStream {
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
        |#error| {
            #[allow(unused_imports)]
            use #at::{AnyhowErrorKind as _, IntoCallErrorKind as _, OtherErrorKind as _, StdErrorKind as _};
            (&&&&#at::ErrorProbe(&#error)).opkit_error_kind().into_call_error(#error)
        }
    }
}

/// The type-erased JSON handler the registry runs.
pub(super) fn json_handler(op: &Operation<'_>, locals: &Locals) -> TokenStream {
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
pub(super) fn send_span(op: &Operation<'_>) -> Span {
    match &op.func.sig.output {
        syn::ReturnType::Type(_, ty) if op.output.stream => ty.span(),
        _ => op.func.sig.ident.span(),
    }
}

/// A fn that is never called, calling the user's fn only to require `Send` of what it makes:
/// when the handler finds it is not `Send` (one error, of ours), the compiler explains this
/// bound with the value and the `.await` involved.
pub(super) fn send_cause(op: &Operation<'_>) -> TokenStream {
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
