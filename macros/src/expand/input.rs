//! The input side of the expansion: the typed input struct, and the arguments and state
//! reads that turn an input (or a JSON object) into the fn's arguments.

use super::{Locals, doc_option, respan};
use crate::model::{Operation, Param};
use proc_macro2::{Ident, Span, TokenStream};
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::Type;
use syn::spanned::Spanned;

/// The input type: a struct with one field per parameter and its serde and schema impls;
/// nothing for `Input<T>`, whose input type is `T`.
pub(super) fn input_type(op: &Operation<'_>, locals: &Locals) -> TokenStream {
    if op.whole_input().is_some() {
        return TokenStream::new();
    }
    let private = &op.private;
    let vis = &op.func.vis;
    let Locals {
        input: input_var,
        fields: fields_var,
        deserializer,
        ..
    } = locals;
    let fields: Vec<_> = op.fields().collect();
    let Columns {
        idents,
        names,
        types,
    } = columns(op);
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
    let serialize = serialize_impl(op, locals, &schema_name);
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
                #private::deserialize_input(#deserializer, __OpkitInput::__opkit_from_json)
            }
        }

        #serialize

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

/// The input fields' idents, JSON names and types, in order.
struct Columns<'a> {
    idents: Vec<&'a Ident>,
    names: Vec<&'a str>,
    types: Vec<&'a Type>,
}

fn columns<'a>(op: &'a Operation<'_>) -> Columns<'a> {
    let fields: Vec<_> = op.fields().collect();
    Columns {
        idents: fields.iter().map(|(ident, ..)| *ident).collect(),
        names: fields.iter().map(|(_, name, ..)| *name).collect(),
        types: fields.iter().map(|(_, _, ty, _)| *ty).collect(),
    }
}

/// The input object's `Serialize`: up to 16 fields (the tuples opkit's `FieldValues` covers),
/// one generic call writes them (`serialize_fields`); larger inputs are written out field by
/// field.
fn serialize_impl(op: &Operation<'_>, locals: &Locals, schema_name: &str) -> TokenStream {
    let private = &op.private;
    let Locals {
        state, serializer, ..
    } = locals;
    let Columns {
        idents,
        names,
        types,
    } = columns(op);
    let count = idents.len();
    let body = if (1..=16).contains(&count) {
        quote!(#private::serialize_fields(#serializer, #schema_name, __OPKIT_FIELDS, (#(&self.#idents,)*)))
    } else {
        quote! {
            #[allow(unused_mut)]
            let mut #state = #private::serde::Serializer::serialize_struct(#serializer, #schema_name, #count)?;
            #(#private::serde::ser::SerializeStruct::serialize_field(&mut #state, #names, &self.#idents)?;)*
            #private::serde::ser::SerializeStruct::end(#state)
        }
    };
    quote! {
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
                #body
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

/// The parameters of `__opkit_run` and of the typed calls: the fn's, without the context.
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

/// The arguments of `__opkit_run` from a decoded input.
pub(super) fn args_from_input(op: &Operation<'_>, locals: &Locals) -> Vec<TokenStream> {
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
