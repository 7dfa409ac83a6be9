// An error written `anyhow::Error` while opkit's `anyhow` feature is off. This crate turns
// the feature on (for `pass/foreign_errors.rs`), so a local `anyhow` module stands in for the
// crate: its `Error`, like the real one without the feature, has no conversion into a
// `CallError`, and the macro reads the error by how it is written.
use opkit::prelude::*;

mod anyhow {
    #[derive(Debug)]
    pub struct Error;
}

#[operation(namespace = "files")]
async fn read(path: String) -> Result<String, anyhow::Error> {
    let _ = path;
    Err(anyhow::Error)
}

fn main() {}
