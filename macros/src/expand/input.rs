//! The input side of the expansion: the input fields (the input object is opkit's
//! `Args<handle>`), and the arguments and state reads that turn an input (or a JSON object)
//! into the fn's arguments.

use super::{Locals, doc_option, respan};
use crate::model::{Operation, Param};
use proc_macro2::{Ident, Span, TokenStream};
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

/// The input fields: one `typed_field` per parameter (at its type: the one place its traits
/// are required) and the handle's `ArgsShape`, which makes `Args<handle>` the input object;
/// nothing for `Input<T>`, whose input type is `T`.
pub(super) fn input_type(op: &Operation<'_>) -> TokenStream {
    if op.whole_input().is_some() {
        return TokenStream::new();
    }
    let private = &op.private;
    let handle = &op.func.sig.ident;
    let fields: Vec<_> = op.fields().collect();
    let schema_name = format!("{}Input", pascal_case(&op.name));
    // One `const` for all the fields (one item, whatever their number), a flat tuple.
    let all = Ident::new("__OPKIT_FIELDS", Span::mixed_site());
    let mut types = Vec::new();
    let mut typed_fields = Vec::new();
    for (_, name, ty, docs) in &fields {
        let description = doc_option(private, docs);
        let at = respan(private, ty.span());
        types.push(quote!(#private::TypedField<#ty>));
        typed_fields.push(quote_spanned!(ty.span()=> #at::typed_field::<#ty>(#name, #description)));
    }
    let each: Vec<TokenStream> = (0..fields.len())
        .map(|i| {
            let i = syn::Index::from(i);
            quote!(#all.#i)
        })
        .collect();
    let values = cons(fields.iter().map(|(_, _, ty, _)| ty.to_token_stream()));
    let readers = cons(each.iter().map(|field| quote!(#field.reader())));
    quote! {
        const #all: (#(#types,)*) = (#(#typed_fields,)*);
        impl #private::ArgsShape for #handle {
            type Values = #values;
            const LAYOUT: #private::ArgsLayout<#values> = #private::ArgsLayout {
                name: #schema_name,
                fields: &[#(#each.erase()),*],
                read: #readers,
            };
        }
    }
}

/// `items` as a cons list: `(a, (b, ()))`.
pub(super) fn cons(items: impl Iterator<Item = TokenStream>) -> TokenStream {
    let items: Vec<TokenStream> = items.collect();
    items
        .into_iter()
        .rev()
        .fold(quote!(()), |rest, item| quote!((#item, #rest)))
}

/// Where field `index` sits in a cons list of values: `.1` once per field before it, then `.0`.
fn cons_path(index: usize) -> TokenStream {
    let rest = (0..index).map(|_| quote!(.1));
    quote!(#(#rest)*.0)
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

/// The parameters of the typed `input` and `call` / `subscribe`: the fn's, without the context.
pub(super) fn input_params(op: &Operation<'_>, locals: &Locals) -> Vec<TokenStream> {
    let input = &locals.input;
    op.params
        .iter()
        .filter_map(|param| match param {
            Param::Field { ident, ty, .. } => {
                let local = local(ident);
                Some(quote!(#local: #ty))
            }
            Param::Whole { ty, .. } => Some(quote!(#input: #ty)),
            Param::Context { .. } | Param::State { .. } => None,
        })
        .collect()
}

/// The arguments passing `input_params` on.
pub(super) fn input_args(op: &Operation<'_>, locals: &Locals) -> Vec<TokenStream> {
    let input = &locals.input;
    op.params
        .iter()
        .filter_map(|param| match param {
            Param::Field { ident, .. } => Some(local(ident).into_token_stream()),
            Param::Whole { .. } => Some(quote!(#input)),
            Param::Context { .. } | Param::State { .. } => None,
        })
        .collect()
}

/// A parameter of the generated fns as a local: the user's name, at the user's token, but
/// resolved at the macro's definition site (`Span::mixed_site`), so that it never shadows
/// what the user's code names — a parameter named like its own fn (`fn shelf(shelf: Shelf)`)
/// still lets the generated code call the fn.
pub(super) fn local(ident: &Ident) -> Ident {
    let mut local = ident.clone();
    local.set_span(ident.span().resolved_at(Span::mixed_site()));
    local
}

/// The fn's arguments read from the input object, which `__opkit_run` starts from.
pub(super) fn args_from_input(op: &Operation<'_>, locals: &Locals) -> Vec<TokenStream> {
    let private = &op.private;
    let input = &locals.input;
    let mut index = 0;
    op.params
        .iter()
        .filter_map(|param| match param {
            Param::Field { .. } => {
                let path = cons_path(index);
                index += 1;
                Some(quote!(#input.values #path))
            }
            Param::Whole { ty, .. } => {
                let at = respan(private, ty.span());
                Some(quote_spanned!(ty.span()=> #at::wrap_input::<#ty>(#input)))
            }
            Param::Context { .. } | Param::State { .. } => None,
        })
        .collect()
}

/// The arguments of the user's fn inside `__opkit_run`.
pub(super) fn fn_args(op: &Operation<'_>, locals: &Locals) -> Vec<TokenStream> {
    let Locals { input, ctx, .. } = locals;
    let mut states = state_vars(op).into_iter();
    op.params
        .iter()
        .map(|param| match param {
            Param::Context { by_ref: true, .. } => quote!(&#ctx),
            Param::Context { by_ref: false, .. } => quote!(#ctx),
            Param::Field { ident, .. } => local(ident).into_token_stream(),
            Param::Whole { .. } => quote!(#input),
            Param::State { .. } => {
                let var = states.next();
                quote!(#var)
            }
        })
        .collect()
}

/// The macro's locals holding the fn's `State<T>` arguments, one per state parameter.
pub(super) fn state_vars(op: &Operation<'_>) -> Vec<Ident> {
    op.states()
        .enumerate()
        .map(|(index, _)| format_ident!("__opkit_state_{}", index, span = Span::mixed_site()))
        .collect()
}

/// `(__opkit_state_0, ..)` and the expression reading them from the context: the
/// `Result` of a tuple of the fn's `State<T>` arguments (`Ok(())` when it takes none).
pub(super) fn state_reads(op: &Operation<'_>, locals: &Locals) -> (TokenStream, TokenStream) {
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
