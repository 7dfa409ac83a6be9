use opkit::prelude::*;

// Every problem is reported at once: the unknown key, the missing namespace, the generic
// parameter and the borrowed parameter.
#[operation(mutaton)]
async fn rename<T>(id: &str, name: String) -> String {
    format!("{id}: {name}")
}

fn main() {}
