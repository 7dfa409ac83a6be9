//! The error collector: every problem found in an `#[operation]` is reported, all at once.

use proc_macro2::TokenStream;
use quote::ToTokens;
use std::cell::RefCell;
use std::fmt::Display;
use syn::punctuated::Punctuated;
use syn::{Meta, Token};

/// Collects errors while the macro parses and checks its input, like serde's `Ctxt`.
///
/// It must be drained with [`Errors::finish`]; dropping it unchecked panics, so no error is
/// ever lost.
pub(crate) struct Errors {
    errors: RefCell<Option<Vec<syn::Error>>>,
}

impl Errors {
    pub(crate) fn new() -> Self {
        Self {
            errors: RefCell::new(Some(Vec::new())),
        }
    }

    /// Records an error spanning `tokens` (from their first to their last token).
    pub(crate) fn spanned<T: ToTokens, M: Display>(&self, tokens: T, message: M) {
        self.push(syn::Error::new_spanned(tokens.into_token_stream(), message));
    }

    /// Records an error at `span`.
    pub(crate) fn at<M: Display>(&self, span: proc_macro2::Span, message: M) {
        self.push(syn::Error::new(span, message));
    }

    /// The entries of a list attribute (`name(a = 1, b)`), or `None` with the error
    /// recorded: `not_a_list` spanning `meta` when it is not a list, syn's own when its
    /// entries do not parse.
    pub(crate) fn list_entries<M: Display>(
        &self,
        meta: &Meta,
        not_a_list: M,
    ) -> Option<Punctuated<Meta, Token![,]>> {
        let Meta::List(list) = meta else {
            self.spanned(meta, not_a_list);
            return None;
        };
        list.parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated)
            .map_err(|error| self.push(error))
            .ok()
    }

    /// Records a syn error (all its messages).
    pub(crate) fn push(&self, error: syn::Error) {
        self.errors
            .borrow_mut()
            .as_mut()
            .expect("Errors used after finish")
            .push(error);
    }

    /// How many errors were recorded so far.
    pub(crate) fn count(&self) -> usize {
        self.errors.borrow().as_ref().map_or(0, Vec::len)
    }

    /// Ends collection: `Ok` when nothing was recorded, else one `compile_error!` per error.
    pub(crate) fn finish(self) -> Result<(), TokenStream> {
        let errors = self
            .errors
            .borrow_mut()
            .take()
            .expect("Errors::finish called twice");
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors.iter().map(syn::Error::to_compile_error).collect())
        }
    }
}

impl Drop for Errors {
    fn drop(&mut self) {
        if !std::thread::panicking() && self.errors.borrow().is_some() {
            panic!("opkit-macros: Errors dropped without finish()");
        }
    }
}
