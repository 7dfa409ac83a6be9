//! Errors that are `std::error::Error + Send + Sync + 'static` (`std::io::Error`, a thiserror
//! enum without `From` for `CallError`) and `anyhow::Error` become `EXECUTION_ERROR`s with
//! their message and source chain; an error with its own `From` for `CallError` keeps it.
use opkit::prelude::*;

#[derive(Debug, thiserror::Error)]
enum ConfigError {
    #[error("cannot read the config")]
    Read(#[source] std::io::Error),
    #[error("the config is empty")]
    Empty,
}

#[derive(Debug, thiserror::Error)]
#[error("quota exceeded")]
struct Quota;

impl From<Quota> for CallError {
    fn from(_: Quota) -> Self {
        CallError::access_denied("no quota left")
    }
}

fn missing() -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::NotFound, "no such file")
}

#[operation(namespace = "errors")]
async fn io(fail: bool) -> Result<u32, std::io::Error> {
    if fail { Err(missing()) } else { Ok(1) }
}

#[operation(namespace = "errors")]
async fn io_alias(fail: bool) -> std::io::Result<u32> {
    if fail { Err(missing()) } else { Ok(1) }
}

#[operation(namespace = "errors")]
async fn config(empty: bool) -> Result<String, ConfigError> {
    Err(if empty { ConfigError::Empty } else { ConfigError::Read(missing()) })
}

#[operation(namespace = "errors")]
async fn quota() -> Result<(), Quota> {
    Err(Quota)
}

#[operation(namespace = "errors")]
async fn with_anyhow() -> anyhow::Result<u32> {
    use anyhow::Context as _;
    Err(missing()).context("loading settings")
}

#[operation(namespace = "errors", subscription)]
fn lines(count: u32) -> impl Stream<Item = Result<u32, ConfigError>> + Send + 'static {
    futures::stream::iter((0..count).map(|n| if n == 0 { Ok(n) } else { Err(ConfigError::Empty) }))
}

fn main() {
    let ctx = OperationContext::default();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let registry = OperationRegistry::from_inventory();
        let run = |id: &'static str, input: serde_json::Value| {
            let registry = registry.clone();
            let ctx = ctx.clone();
            async move { registry.execute(id, input, &ctx).await.unwrap_err() }
        };

        let error = run("errors.io", serde_json::json!({"fail": true})).await;
        assert_eq!(error.code, ErrorCode::ExecutionError);
        assert_eq!(error.message, "no such file");
        assert_eq!(error.details, None);
        let error = run("errors.io_alias", serde_json::json!({"fail": true})).await;
        assert_eq!(error.message, "no such file");

        let error = run("errors.config", serde_json::json!({"empty": false})).await;
        assert_eq!(error.code, ErrorCode::ExecutionError);
        assert_eq!(error.message, "cannot read the config: no such file");
        assert_eq!(
            error.details,
            Some(serde_json::json!({"chain": ["cannot read the config", "no such file"]}))
        );

        let error = run("errors.quota", serde_json::json!({})).await;
        assert_eq!(error.code, ErrorCode::AccessDenied);
        assert_eq!(error.message, "no quota left");

        let error = run("errors.with_anyhow", serde_json::json!({})).await;
        assert_eq!(error.code, ErrorCode::ExecutionError);
        assert_eq!(error.message, "loading settings: no such file");
        assert_eq!(
            error.details,
            Some(serde_json::json!({"chain": ["loading settings", "no such file"]}))
        );

        let items: Vec<_> = lines::subscribe(&ctx, 2).collect().await;
        assert_eq!(items[0].as_ref().unwrap().data, 0);
        assert_eq!(items[1].as_ref().unwrap_err().message, "the config is empty");
    });
}
