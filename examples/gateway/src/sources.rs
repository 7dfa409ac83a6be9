//! Connecting the sources: each OpenAPI document imported and each MCP server connected
//! with its credentials and its import access rules, and their operations registered in
//! the gateway's one registry.

use crate::access::import_access;
use crate::config::{Config, Location, Source};
use crate::error::GatewayError;
use opkit::OperationRegistry;
use opkit_adapters::ImportAccess;
use opkit_adapters::mcp::{McpConnection, McpOptions};
use opkit_adapters::openapi::{OpenApiAuth, OpenApiImport, OpenApiImporter, OpenApiOptions};

/// One connected source.
pub enum Connected {
    /// An OpenAPI document, imported again on a refresh.
    OpenApi {
        /// The namespace.
        namespace: String,
        /// The document's URL or file.
        document: String,
        /// The import's options (credentials and access rules included).
        importer: Box<OpenApiImporter>,
    },
    /// An MCP server, which refreshes itself on `list_changed` and on demand.
    Mcp {
        /// The namespace.
        namespace: String,
        /// The connection.
        connection: McpConnection,
    },
}

impl Connected {
    /// The source's namespace.
    pub fn namespace(&self) -> &str {
        match self {
            Connected::OpenApi { namespace, .. } | Connected::Mcp { namespace, .. } => namespace,
        }
    }
}

/// Connects every source of `config` and registers its operations into `registry`.
pub async fn connect_all(
    config: &Config,
    registry: &OperationRegistry,
) -> Result<Vec<Connected>, GatewayError> {
    let mut connected = Vec::with_capacity(config.sources.len());
    for source in &config.sources {
        let access = import_access(config, &source.namespace);
        let source = connect(source, access).await?;
        register(&source, registry).await?;
        connected.push(source);
    }
    Ok(connected)
}

async fn connect(source: &Source, access: ImportAccess) -> Result<Connected, GatewayError> {
    let namespace = source.namespace.clone();
    match source.location()? {
        Location::OpenApi(document) => Ok(Connected::OpenApi {
            importer: Box::new(OpenApiImporter::new(openapi_options(source, access)?)),
            document: document.to_owned(),
            namespace,
        }),
        Location::McpCommand(command) => {
            let options = mcp_options(source, access)?;
            let connection =
                McpConnection::connect_stdio(&command[0], &command[1..], &source.env, options)
                    .await
                    .map_err(|source| GatewayError::Mcp {
                        namespace: namespace.clone(),
                        source,
                    })?;
            Ok(Connected::Mcp {
                namespace,
                connection,
            })
        }
        Location::McpUrl(url) => {
            let options = mcp_options(source, access)?;
            let connection = McpConnection::connect_http(url, options)
                .await
                .map_err(|source| GatewayError::Mcp {
                    namespace: namespace.clone(),
                    source,
                })?;
            Ok(Connected::Mcp {
                namespace,
                connection,
            })
        }
    }
}

/// The source's bearer token and headers, their secrets resolved.
struct Credentials {
    bearer: Option<String>,
    headers: Vec<(String, String)>,
}

fn credentials(source: &Source) -> Result<Credentials, GatewayError> {
    let bearer = match &source.bearer {
        Some(bearer) => {
            let what = format!("the bearer token of source `{}`", source.namespace);
            Some(bearer.resolve(&what)?)
        }
        None => None,
    };
    let mut headers = Vec::with_capacity(source.headers.len());
    for (name, value) in &source.headers {
        let what = format!("header `{name}` of source `{}`", source.namespace);
        headers.push((name.clone(), value.resolve(&what)?));
    }
    Ok(Credentials { bearer, headers })
}

fn openapi_options(source: &Source, access: ImportAccess) -> Result<OpenApiOptions, GatewayError> {
    let mut options = OpenApiOptions::new(&source.namespace);
    if let Some(base_url) = &source.base_url {
        options = options.base_url(base_url);
    }
    let credentials = credentials(source)?;
    if let Some(bearer) = credentials.bearer {
        options = options.auth(OpenApiAuth::new().bearer(bearer));
    }
    for (name, value) in credentials.headers {
        options = options.header(name, value);
    }
    options.access = access;
    Ok(options)
}

fn mcp_options(source: &Source, access: ImportAccess) -> Result<McpOptions, GatewayError> {
    let mut options = McpOptions::new(&source.namespace).auto_refresh(true);
    let credentials = credentials(source)?;
    if let Some(bearer) = credentials.bearer {
        options = options.bearer_token(bearer);
    }
    for (name, value) in credentials.headers {
        options = options.header(name, value);
    }
    options.access = access;
    Ok(options)
}

/// Imports the OpenAPI document of source `namespace` from its URL or file.
pub async fn import(
    importer: &OpenApiImporter,
    document: &str,
    namespace: &str,
) -> Result<OpenApiImport, GatewayError> {
    let imported = if document.starts_with("http://") || document.starts_with("https://") {
        importer.import_url(document).await
    } else {
        importer.import_file(document)
    };
    imported.map_err(|source| GatewayError::OpenApi {
        namespace: namespace.to_owned(),
        source,
    })
}

async fn register(source: &Connected, registry: &OperationRegistry) -> Result<(), GatewayError> {
    let namespace = source.namespace().to_owned();
    match source {
        Connected::OpenApi {
            importer, document, ..
        } => {
            let imported = import(importer, document, &namespace).await?;
            for skipped in &imported.skipped {
                tracing::warn!(source = %namespace, "{skipped}");
            }
            imported
                .register_into(registry)
                .map_err(|source| GatewayError::Registry { namespace, source })?;
        }
        Connected::Mcp { connection, .. } => {
            connection
                .register_into(registry)
                .map_err(|source| GatewayError::Mcp { namespace, source })?;
        }
    }
    Ok(())
}
