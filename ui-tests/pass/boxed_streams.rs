//! Subscriptions may return `BoxStream<'static, T>` and `Pin<Box<dyn Stream<Item = T> + Send>>`,
//! from a plain `fn` or an `async fn`, with or without the context.
use futures::stream::{self, BoxStream};
use opkit::prelude::*;
use std::pin::Pin;

#[operation(namespace = "boxed", subscription)]
fn boxed(count: u32) -> BoxStream<'static, u32> {
    Box::pin(stream::iter(0..count))
}

#[operation(namespace = "boxed", subscription)]
async fn boxed_later(ctx: &OperationContext, count: u32) -> futures::stream::BoxStream<'static, Result<u32, CallError>> {
    let _ = ctx.request_id();
    Box::pin(stream::iter((0..count).map(Ok)))
}

#[operation(namespace = "boxed", subscription)]
fn pinned(count: u32) -> Pin<Box<dyn Stream<Item = u32> + Send>> {
    Box::pin(stream::iter(0..count))
}

#[operation(namespace = "boxed", subscription)]
fn pinned_static(ctx: &OperationContext, count: u32) -> std::pin::Pin<Box<dyn futures::Stream<Item = String> + Send + 'static>> {
    let id = ctx.request_id().to_string();
    Box::pin(stream::iter((0..count).map(move |n| format!("{id}:{n}"))))
}

fn assert_types<O: TypedOperation<Output = T>, T>() {}

fn main() {
    assert_types::<boxed, u32>();
    assert_types::<boxed_later, u32>();
    assert_types::<pinned, u32>();
    assert_types::<pinned_static, String>();
    assert_eq!(<boxed as TypedOperation>::KIND, OperationKind::Subscription);
    let ctx = OperationContext::default();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let items: Vec<u32> = boxed::subscribe(&ctx, 3).map(|item| item.unwrap().data).collect().await;
        assert_eq!(items, [0, 1, 2]);
        let items: Vec<u32> = boxed_later::subscribe(&ctx, 2).map(|item| item.unwrap().data).collect().await;
        assert_eq!(items, [0, 1]);
        let items: Vec<u32> = pinned::subscribe(&ctx, 2).map(|item| item.unwrap().data).collect().await;
        assert_eq!(items, [0, 1]);
        let items: Vec<_> = pinned_static::subscribe(&ctx, 1).collect().await;
        assert_eq!(items.len(), 1);
    });
}
