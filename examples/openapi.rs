//! Imports an OpenAPI document and prints its operations and one call's envelope.
//!
//! ```sh
//! cargo run -p opkit-adapters --features openapi --example openapi -- \
//!     <document file or URL> [base URL] [operation name] [input JSON]
//! ```
//!
//! Without an operation name it calls the first QUERY that needs no input. Credentials come
//! from the environment: `OPENAPI_BEARER`, `OPENAPI_API_KEY`, `OPENAPI_BASIC` (`user:pass`).
//! For example, against the FastAPI app of the tests
//! (`python3 -m uvicorn app:app --host 127.0.0.1 --port 8000` in `adapters/peers/openapi`):
//!
//! ```sh
//! cargo run -p opkit-adapters --features openapi --example openapi -- \
//!     http://127.0.0.1:8000/openapi.json "" get_item '{"item_id": 1, "q": "x"}'
//! ```

use opkit::prelude::*;
use opkit_adapters::openapi::{OpenApiAuth, OpenApiImporter, OpenApiOptions};
use serde_json::{Value, json};
use std::time::Duration;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let Some(document) = args.next() else {
        eprintln!("usage: openapi <document file or URL> [base URL] [operation name] [input JSON]");
        std::process::exit(2);
    };
    let base_url = args.next().filter(|base| !base.is_empty());
    let operation = args.next();
    let input: Value = match args.next() {
        Some(text) => serde_json::from_str(&text)?,
        None => json!({}),
    };

    let mut auth = OpenApiAuth::new();
    if let Ok(token) = std::env::var("OPENAPI_BEARER") {
        auth = auth.bearer(token);
    }
    if let Ok(key) = std::env::var("OPENAPI_API_KEY") {
        auth = auth.api_key(key);
    }
    if let Ok(pair) = std::env::var("OPENAPI_BASIC")
        && let Some((user, password)) = pair.split_once(':')
    {
        auth = auth.basic(user, password);
    }
    let mut options = OpenApiOptions::new("api")
        .auth(auth)
        .timeout(Duration::from_secs(30));
    if let Some(base_url) = base_url {
        options = options.base_url(base_url);
    }
    let importer = OpenApiImporter::new(options);
    let import = if document.starts_with("http://") || document.starts_with("https://") {
        importer.import_url(&document).await?
    } else {
        importer.import_file(&document)?
    };

    println!(
        "{} (OpenAPI {}): {} operations, {} skipped",
        import.title.as_deref().unwrap_or("untitled"),
        import.version.as_str(),
        import.operations.len(),
        import.skipped.len()
    );
    for op in &import.operations {
        let http = &op.spec.extensions["openapi"];
        println!(
            "  {:<40} {:<12} {} {}",
            op.spec.id(),
            op.spec.kind.as_str(),
            http["method"].as_str().unwrap_or(""),
            http["path"].as_str().unwrap_or("")
        );
    }
    for skipped in &import.skipped {
        println!("  skipped: {skipped}");
    }

    let registry = OperationRegistry::new();
    let chosen = operation.map(|name| format!("api.{name}")).or_else(|| {
        import
            .operations
            .iter()
            .find(|op| {
                op.spec.kind == OperationKind::Query
                    && op.spec.input_schema.get("required").is_none()
            })
            .map(|op| op.spec.id())
    });
    import.register_into(&registry)?;
    let Some(id) = chosen else {
        println!("no operation to call");
        return Ok(());
    };
    println!("\ncalling {id} with {input}");
    let ctx = OperationContext::default().with_timeout(Duration::from_secs(30));
    let kind = registry.spec(&id).map(|spec| spec.kind);
    if kind == Some(OperationKind::Subscription) {
        let mut events = registry.subscribe(&id, input, &ctx).await?;
        let mut shown = 0;
        while let Some(item) = events.next().await {
            println!("{}", serde_json::to_string_pretty(&item?)?);
            shown += 1;
            if shown == 5 {
                break; // dropping the stream closes the connection
            }
        }
    } else {
        match registry.execute(&id, input, &ctx).await {
            Ok(envelope) => println!("{}", serde_json::to_string_pretty(&envelope)?),
            Err(error) => println!("{}", serde_json::to_string_pretty(&error)?),
        }
    }
    Ok(())
}
