//! A parameter named like its own fn: the generated code still calls the fn.

use opkit::prelude::*;
use opkit_tests as _;

#[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
/// A shelf of books.
pub struct Shelf {
    /// How many books it holds.
    pub books: u32,
}

/// Counts the books on a shelf.
#[operation(namespace = "library")]
pub async fn shelf(shelf: Shelf) -> u32 {
    shelf.books
}

/// Two fields, one named like the fn.
#[operation(namespace = "library")]
pub async fn books(books: u32, shelf: u32) -> u32 {
    books * shelf
}

#[tokio::test]
async fn a_parameter_named_like_its_fn_compiles_and_runs() {
    let ctx = OperationContext::default();
    assert_eq!(shelf::call(&ctx, Shelf { books: 3 }).await.unwrap().data, 3);
    assert_eq!(books::call(&ctx, 2, 5).await.unwrap().data, 10);
    let registry = OperationRegistry::new();
    registry.register_typed::<shelf>().unwrap();
    let envelope = registry
        .execute(
            "library.shelf",
            serde_json::json!({"shelf": {"books": 4}}),
            &ctx,
        )
        .await
        .unwrap();
    assert_eq!(envelope.data, 4);
}
