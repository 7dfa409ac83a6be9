//! [`MapOnce`]: `FutureExt::map` for the futures every operation makes, with less code per
//! instance (a struct polled in place, not a state enum replaced on completion), as an
//! operation's JSON handler and its `run` fn each instantiate one.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

pin_project_lite::pin_project! {
    /// `future`, then `f` on its output.
    pub struct MapOnce<Fut, F> {
        #[pin]
        future: Fut,
        f: Option<F>,
    }
}

/// `future`, then `f` on its output. The bounds give a closure `f` its parameter's type where
/// it is written (the error conversions of generated code resolve their methods on it).
pub fn map_once<Fut, F, T>(future: Fut, f: F) -> MapOnce<Fut, F>
where
    Fut: Future,
    F: FnOnce(Fut::Output) -> T,
{
    MapOnce { future, f: Some(f) }
}

impl<Fut, F, T> Future for MapOnce<Fut, F>
where
    Fut: Future,
    F: FnOnce(Fut::Output) -> T,
{
    type Output = T;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        let this = self.project();
        let output = ready!(this.future.poll(cx));
        match this.f.take() {
            Some(f) => Poll::Ready(f(output)),
            None => polled_after_completion(),
        }
    }
}

#[cold]
fn polled_after_completion() -> ! {
    panic!("`MapOnce` polled after completion")
}
