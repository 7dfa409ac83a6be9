use opkit::prelude::*;

#[operation(namespace = "notes", errors(NotFound))]
async fn get(id: i64) -> Result<i64, CallError> {
    Err(CallError::not_found(format!("no note {id}")))
}

fn main() {}
