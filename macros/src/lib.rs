//! The `#[operation]` attribute of opkit. Use it through `opkit::operation`; its documentation
//! lives there, with examples.
//!
//! Stages: `args` parses the attribute, `signature` checks the fn and builds the
//! `model` (reading names through `shape`), `expand` generates code; `errors` collects
//! every problem so all are reported at once.

mod args;
mod errors;
mod expand;
mod model;
mod shape;
mod signature;
#[cfg(test)]
mod tests;

use proc_macro::TokenStream;
use quote::quote;

/// Turns an `async fn` or a stream function into an opkit operation.
///
/// See `opkit::operation` for the arguments, the accepted signatures and examples.
#[proc_macro_attribute]
pub fn operation(args: TokenStream, item: TokenStream) -> TokenStream {
    operation_impl(args.into(), item.into()).into()
}

fn operation_impl(
    args: proc_macro2::TokenStream,
    item: proc_macro2::TokenStream,
) -> proc_macro2::TokenStream {
    let func: syn::ItemFn = match syn::parse2(item.clone()) {
        Ok(func) => func,
        Err(_) => {
            let error = syn::Error::new(
                proc_macro2::Span::call_site(),
                "`#[operation]` goes on an `async fn` (a query or mutation) or on a fn returning `impl Stream<Item = T>` (a subscription)",
            )
            .to_compile_error();
            return quote!(#error #item);
        }
    };
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
