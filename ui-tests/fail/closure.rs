use opkit::prelude::*;

fn main() {
    #[operation(namespace = "math")]
    let add = async |a: i64, b: i64| a + b;
    let _ = add;
}
