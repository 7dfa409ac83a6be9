//! The `#[operation]` attribute of opkit. Use it through `opkit::operation`.
use proc_macro::TokenStream;

/// Turns an `async fn` or a stream function into an opkit operation.
#[proc_macro_attribute]
pub fn operation(_args: TokenStream, item: TokenStream) -> TokenStream {
    item
}
