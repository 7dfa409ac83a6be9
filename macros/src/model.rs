//! The operation model: what the attribute and the signature say, checked, ready to expand.

use crate::kind::Kind;
use proc_macro2::{Ident, TokenStream};
use syn::{Expr, ItemFn, LitStr, Type};

/// One `#[operation]` fn, parsed and checked.
pub(crate) struct Operation<'a> {
    /// The user's function.
    pub func: &'a ItemFn,
    /// The runtime's hidden module as the expansion names it: `__opkit_private`, which the
    /// expansion's block imports from [`runtime`](Self::runtime) once. One identifier instead
    /// of a path at each of the ~100 places an expansion names the runtime: every token an
    /// attribute macro returns crosses the compiler's proc-macro bridge and is parsed again,
    /// on every `cargo check`.
    pub private: TokenStream,
    /// The path of the runtime's hidden module, e.g. `::opkit::__private`.
    pub runtime: TokenStream,
    /// `namespace.name`.
    pub id: String,
    pub namespace: String,
    pub name: String,
    pub kind: Kind,
    /// The values of the fn's `#[doc]` attributes, in order.
    pub docs: Vec<&'a Expr>,
    pub scopes: Vec<LitStr>,
    pub roles: Vec<LitStr>,
    /// `errors(..)`: `ErrorKind` variant names.
    pub errors: Vec<Ident>,
    /// The edge groups (`mcp(..)`, `http(..)`, the application's), checked.
    pub edges: crate::edges::Edges,
    /// `layer = ".."`, each.
    pub layers: Vec<LitStr>,
    /// `timeout = ".."`, in milliseconds.
    pub timeout_ms: Option<u64>,
    /// The parameters, in order.
    pub params: Vec<Param<'a>>,
    /// The result type (or stream item type) and whether the fn streams.
    pub output: Output,
}

/// One parameter of the fn.
pub(crate) enum Param<'a> {
    /// `&OperationContext` (`by_ref`) or `OperationContext`: injected, not part of the input.
    Context { ty: &'a Type, by_ref: bool },
    /// `name: T`: one field of the generated input struct.
    Field {
        /// The binding, without `mut`.
        ident: Ident,
        /// The JSON name (the binding without `r#`).
        name: String,
        ty: &'a Type,
        /// The values of the parameter's doc comments.
        docs: Vec<&'a Expr>,
    },
    /// `State<T>` (`ty`), destructured or not: the application state `inner`, injected, not
    /// part of the input.
    State { ty: &'a Type, inner: &'a Type },
    /// `Input<T>` (`ty`), destructured or not: the whole input is `inner`.
    Whole { ty: &'a Type, inner: &'a Type },
}

/// What the fn produces.
pub(crate) struct Output {
    /// `true` for `-> impl Stream<Item = T>` (from a plain or an async fn).
    pub stream: bool,
    /// The return type, or the stream's item type; `()` when the fn declares no return type.
    pub value: Type,
    /// `true` for `async fn`.
    pub is_async: bool,
}

impl Operation<'_> {
    /// The whole-input parameter's inner type, if the fn takes one.
    pub(crate) fn whole_input(&self) -> Option<&Type> {
        self.params.iter().find_map(|param| match param {
            Param::Whole { inner, .. } => Some(*inner),
            _ => None,
        })
    }

    /// Whether the fn reads its context: takes it, or state read from it. One that does not
    /// gets no context at all (`__opkit_run` takes none, so a typed call copies none).
    pub(crate) fn reads_context(&self) -> bool {
        self.params
            .iter()
            .any(|param| matches!(param, Param::Context { .. } | Param::State { .. }))
    }

    /// The state parameters' inner types, in order.
    pub(crate) fn states(&self) -> impl Iterator<Item = &Type> {
        self.params.iter().filter_map(|param| match param {
            Param::State { inner, .. } => Some(*inner),
            _ => None,
        })
    }

    /// The input fields, in order.
    pub(crate) fn fields(&self) -> impl Iterator<Item = (&Ident, &str, &Type, &[&Expr])> {
        self.params.iter().filter_map(|param| match param {
            Param::Field {
                ident,
                name,
                ty,
                docs,
            } => Some((ident, name.as_str(), *ty, docs.as_slice())),
            _ => None,
        })
    }
}
