//! `State<T>` parameters in every position, destructured or not, in queries and
//! subscriptions, beside the context and `Input<T>`; `errors(..)` declared.
use opkit::prelude::*;
use std::sync::Arc;

#[derive(Clone)]
struct Db;

struct Config {
    prefix: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct NewNote {
    title: String,
}

#[operation(namespace = "notes", errors(not_found, conflict))]
async fn get(id: i64, State(_db): State<Db>, config: State<Arc<Config>>) -> Result<String, CallError> {
    Ok(format!("{}{id}", config.prefix))
}

#[operation(namespace = "notes", mutation)]
async fn create(ctx: &OperationContext, State(_db): State<Db>, Input(note): Input<NewNote>) -> String {
    format!("{} by {:?}", note.title, ctx.identity().map(|i| &i.id))
}

#[operation(namespace = "notes", subscription)]
fn feed(State(_db): State<Db>, ctx: &OperationContext, count: u32) -> impl Stream<Item = u32> + Send + 'static {
    let _ = ctx.request_id();
    futures::stream::iter(0..count)
}

fn main() {
    let registry = OperationRegistry::new()
        .with_state(Db)
        .with_state(Arc::new(Config { prefix: "n".into() }));
    registry.register_operation(get).unwrap();
    registry.register_operation(create).unwrap();
    registry.register_operation(feed).unwrap();
    registry.check_states().unwrap();
    assert_eq!(get::spec().states.len(), 2);
    assert_eq!(get::spec().errors, [ErrorKind::NotFound, ErrorKind::Conflict]);
    assert_eq!(create::spec().input_schema["required"], serde_json::json!(["title"]));
}
