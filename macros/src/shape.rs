//! Reading types as written: context and `Input<T>` parameters, streams, and output shapes.
//!
//! What goes into the generated input type and how the output type is named must be decided
//! at expansion time, before types exist, so these decisions read the last path segment of a
//! type. Generated code then checks each decision with the type system (see `expand.rs`), so
//! a type that is named like one of opkit's but is something else is a clear compile error,
//! never a silent misreading.

use proc_macro2::TokenStream;
use quote::quote;
use syn::punctuated::Punctuated;
use syn::{GenericArgument, PathArguments, PathSegment, ReturnType, Token, Type, TypeParamBound};

/// `ty` without invisible groups and parentheses.
pub(crate) fn peel(mut ty: &Type) -> &Type {
    loop {
        match ty {
            Type::Group(group) => ty = &group.elem,
            Type::Paren(paren) => ty = &paren.elem,
            _ => return ty,
        }
    }
}

fn last_segment(ty: &Type) -> Option<&PathSegment> {
    match peel(ty) {
        Type::Path(path) if path.qself.is_none() => path.path.segments.last(),
        _ => None,
    }
}

/// The type arguments of a path segment, in order.
fn type_args(segment: &PathSegment) -> Vec<&Type> {
    match &segment.arguments {
        PathArguments::AngleBracketed(args) => args
            .args
            .iter()
            .filter_map(|arg| match arg {
                GenericArgument::Type(ty) => Some(ty),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// How a parameter's type reads as the context.
pub(crate) enum ContextParam<'a> {
    /// `&OperationContext`.
    Ref(&'a Type),
    /// `OperationContext`.
    Owned(&'a Type),
    /// `&mut OperationContext`: not supported.
    RefMut,
}

/// `Some` when the parameter's type is (a reference to) a type named `OperationContext`.
pub(crate) fn context_param(ty: &Type) -> Option<ContextParam<'_>> {
    let named = |ty: &Type| last_segment(ty).is_some_and(|s| s.ident == "OperationContext");
    match peel(ty) {
        Type::Reference(reference) if named(&reference.elem) => {
            Some(if reference.mutability.is_some() {
                ContextParam::RefMut
            } else {
                ContextParam::Ref(&reference.elem)
            })
        }
        other if named(other) => Some(ContextParam::Owned(other)),
        _ => None,
    }
}

/// `Some(T)` when the parameter's type is named `Input<T>` (one type argument).
pub(crate) fn input_param(ty: &Type) -> Option<&Type> {
    let segment = last_segment(ty)?;
    let args = type_args(segment);
    (segment.ident == "Input" && args.len() == 1).then(|| args[0])
}

/// `State<T>` (any path whose last segment is `State` with one type argument): the
/// application state `T`, injected.
pub(crate) fn state_param(ty: &Type) -> Option<&Type> {
    let segment = last_segment(ty)?;
    let args = type_args(segment);
    (segment.ident == "State" && args.len() == 1).then(|| args[0])
}

/// `true` when the path is `anyhow::<last>` (or `::anyhow::<last>`).
fn is_anyhow_path(ty: &Type, last: &str) -> bool {
    let Type::Path(path) = peel(ty) else {
        return false;
    };
    let segments: Vec<&PathSegment> = path.path.segments.iter().collect();
    path.qself.is_none()
        && segments.len() == 2
        && segments[0].ident == "anyhow"
        && segments[1].ident == last
}

/// `true` when the output's error is written `anyhow::Error`: `Result<T, anyhow::Error>` or
/// `anyhow::Result<T>`. Its conversion needs opkit's `anyhow` feature, and the error says so.
pub(crate) fn error_is_anyhow(value: &Type) -> bool {
    match Shape::of(value) {
        Shape::Fallible {
            error: Some(error), ..
        } => is_anyhow_path(error, "Error"),
        Shape::Fallible { error: None, .. } => is_anyhow_path(value, "Result"),
        _ => false,
    }
}

/// What a return type says about streaming.
pub(crate) enum Streaming<'a> {
    /// Not a stream.
    No,
    /// `impl Stream<Item = T> + ..`, a boxed stream of `T`.
    Items(&'a Type),
    /// `impl Stream` (or `dyn Stream`) without `Item = ..`.
    NoItem,
}

/// Reads `-> impl Stream<Item = T> + ..`, `-> BoxStream<'a, T>` (or `LocalBoxStream`) and
/// `-> Pin<Box<dyn Stream<Item = T> + ..>>`.
pub(crate) fn streaming(output: &ReturnType) -> Streaming<'_> {
    let ReturnType::Type(_, ty) = output else {
        return Streaming::No;
    };
    match peel(ty) {
        Type::ImplTrait(opaque) => stream_bounds(&opaque.bounds),
        other => boxed_stream(other).unwrap_or(Streaming::No),
    }
}

/// `BoxStream<'a, T>`, `LocalBoxStream<'a, T>` or `Pin<Box<dyn Stream<Item = T> + ..>>`.
fn boxed_stream(ty: &Type) -> Option<Streaming<'_>> {
    let segment = last_segment(ty)?;
    if segment.ident == "BoxStream" || segment.ident == "LocalBoxStream" {
        return Some(match type_args(segment).first() {
            Some(item) => Streaming::Items(item),
            None => Streaming::NoItem,
        });
    }
    if segment.ident != "Pin" {
        return None;
    }
    let pointer = last_segment(type_args(segment).first()?)?;
    if pointer.ident != "Box" {
        return None;
    }
    match peel(type_args(pointer).first()?) {
        Type::TraitObject(object) => Some(stream_bounds(&object.bounds)),
        _ => None,
    }
}

/// The `Stream<Item = T>` among the bounds of an `impl` or `dyn` type.
fn stream_bounds(bounds: &Punctuated<TypeParamBound, Token![+]>) -> Streaming<'_> {
    for bound in bounds {
        let TypeParamBound::Trait(bound) = bound else {
            continue;
        };
        let Some(segment) = bound.path.segments.last() else {
            continue;
        };
        if segment.ident != "Stream" {
            continue;
        }
        if let PathArguments::AngleBracketed(args) = &segment.arguments {
            for arg in &args.args {
                if let GenericArgument::AssocType(assoc) = arg
                    && assoc.ident == "Item"
                {
                    return Streaming::Items(&assoc.ty);
                }
            }
        }
        return Streaming::NoItem;
    }
    Streaming::No
}

/// `true` when `ty` contains an `impl Trait` anywhere.
pub(crate) fn contains_impl_trait(ty: &Type) -> bool {
    match ty {
        Type::ImplTrait(_) => true,
        Type::Group(group) => contains_impl_trait(&group.elem),
        Type::Paren(paren) => contains_impl_trait(&paren.elem),
        Type::Reference(reference) => contains_impl_trait(&reference.elem),
        Type::Ptr(pointer) => contains_impl_trait(&pointer.elem),
        Type::Slice(slice) => contains_impl_trait(&slice.elem),
        Type::Array(array) => contains_impl_trait(&array.elem),
        Type::Tuple(tuple) => tuple.elems.iter().any(contains_impl_trait),
        Type::Path(path) => path
            .path
            .segments
            .iter()
            .any(|segment| type_args(segment).into_iter().any(contains_impl_trait)),
        _ => false,
    }
}

/// How an output (or stream item) type is read.
pub(crate) enum Shape<'a> {
    /// Plain data `T`.
    Plain(&'a Type),
    /// `ResponseEnvelope<T>` (`data` is `None` for a bare `ResponseEnvelope`).
    Envelope { data: Option<&'a Type> },
    /// `Result<T, E>` (or an alias spelled `..Result<T>`), whose `Ok` has shape `ok`; `error`
    /// is `E` when it is written.
    Fallible {
        ok: Box<Shape<'a>>,
        error: Option<&'a Type>,
    },
}

impl<'a> Shape<'a> {
    /// Reads `ty`: a last path segment `Result<..>` is fallible, `ResponseEnvelope` an
    /// envelope, anything else plain data.
    pub(crate) fn of(ty: &'a Type) -> Self {
        if let Some(segment) = last_segment(ty) {
            let args = type_args(segment);
            if segment.ident == "Result" && !args.is_empty() {
                return Self::Fallible {
                    ok: Box::new(Self::of(args[0])),
                    error: args.get(1).copied(),
                };
            }
            if segment.ident == "ResponseEnvelope" {
                return Self::Envelope {
                    data: args.first().copied(),
                };
            }
        }
        Self::Plain(ty)
    }

    /// `true` for data (`T`, or `Result` of data), whose JSON the handler serializes from the
    /// output type itself; `false` for an envelope, which may carry data from elsewhere.
    pub(crate) fn is_data(&self) -> bool {
        match self {
            Self::Plain(_) => true,
            Self::Envelope { .. } => false,
            Self::Fallible { ok, .. } => ok.is_data(),
        }
    }

    /// The marker type naming this shape in `__private::OperationOutput<Shape>`.
    pub(crate) fn marker(&self, private: &TokenStream) -> TokenStream {
        match self {
            Self::Plain(_) => quote!(#private::Plain),
            Self::Envelope { .. } => quote!(#private::Envelope),
            Self::Fallible { ok, .. } => {
                let ok = ok.marker(private);
                quote!(#private::Fallible<#ok>)
            }
        }
    }

    /// The data type as written, when it is written (`None` for a bare `ResponseEnvelope`).
    pub(crate) fn data(&self) -> Option<&'a Type> {
        match self {
            Self::Plain(ty) => Some(ty),
            Self::Envelope { data } => *data,
            Self::Fallible { ok, .. } => ok.data(),
        }
    }

    /// The type read as plain data, if any (it is probed for hidden `Result`s).
    pub(crate) fn plain(&self) -> Option<&'a Type> {
        match self {
            Self::Plain(ty) => Some(ty),
            Self::Envelope { .. } => None,
            Self::Fallible { ok, .. } => ok.plain(),
        }
    }
}
