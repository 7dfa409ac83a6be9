//! Generated code names everything by absolute paths.
#![no_implicit_prelude]

mod ops {
    #[::opkit::operation(namespace = "bare")]
    pub async fn add(a: i64, b: i64) -> i64 {
        a + b
    }

    #[::opkit::operation(namespace = "bare", subscription)]
    pub fn count(to: u32) -> impl ::futures::Stream<Item = ::std::result::Result<u32, ::opkit::CallError>> + ::std::marker::Send + 'static {
        ::futures::stream::iter(::std::iter::Iterator::map(0..to, ::std::result::Result::Ok))
    }

    #[::opkit::operation(namespace = "bare", mutation)]
    pub async fn whole(
        ctx: &::opkit::OperationContext,
        input: ::opkit::Input<::std::vec::Vec<::std::string::String>>,
    ) -> ::opkit::ResponseEnvelope<usize> {
        ::opkit::envelope::local_envelope(input.0.len(), ctx.request_id())
    }
}

fn main() {
    let _ = ops::add::ID;
    let _ = ops::count::ID;
    let _ = ops::whole::ID;
}
