//! Refreshing the sources: an OpenAPI document imported again and its operations replaced,
//! an MCP server's lists fetched again. A call in flight keeps the operation it started
//! with (the registry hands each call its own reference), and a changed operation is replaced
//! in one step (`OperationRegistry::replace_lazy`), so a call arriving meanwhile finds the
//! old one or the new one: a refresh drops none.

use crate::error::GatewayError;
use crate::sources::{Connected, import};
use opkit::OperationRegistry;
use std::collections::BTreeSet;

/// What one refresh of one source changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Changes {
    /// Operations that were not there before.
    pub added: usize,
    /// Operations that are gone.
    pub removed: usize,
    /// Operations replaced by their new definition.
    pub replaced: usize,
    /// Operations whose definition is the same (left as they were).
    pub unchanged: usize,
}

/// Refreshes every source; a source that fails (its server is gone) is reported and the
/// others are refreshed all the same.
pub async fn refresh_all(
    sources: &[Connected],
    registry: &OperationRegistry,
) -> Vec<(String, Result<Changes, GatewayError>)> {
    let mut outcomes = Vec::with_capacity(sources.len());
    for source in sources {
        let outcome = refresh(source, registry).await;
        outcomes.push((source.namespace().to_owned(), outcome));
    }
    outcomes
}

/// Refreshes one source.
pub async fn refresh(
    source: &Connected,
    registry: &OperationRegistry,
) -> Result<Changes, GatewayError> {
    let namespace = source.namespace().to_owned();
    match source {
        Connected::Mcp { connection, .. } => {
            let report = connection
                .refresh()
                .await
                .map_err(|source| GatewayError::Mcp { namespace, source })?;
            Ok(Changes {
                added: report.added.len(),
                removed: report.removed.len(),
                replaced: report.changed.len(),
                unchanged: 0,
            })
        }
        Connected::OpenApi {
            importer, document, ..
        } => {
            let imported = import(importer, document, &namespace).await?;
            replace(registry, &namespace, imported.into_pairs())
                .map_err(|source| GatewayError::Registry { namespace, source })
        }
    }
}

/// Puts `pairs` in place of the operations of `namespace`: each new or changed one
/// registered (after its old definition is removed), each unchanged one left as it was,
/// each one no longer imported removed.
fn replace(
    registry: &OperationRegistry,
    namespace: &str,
    pairs: Vec<(opkit::OperationSpec, opkit::Handler)>,
) -> Result<Changes, opkit::RegistryError> {
    let prefix = format!("{namespace}.");
    let before: BTreeSet<String> = registry
        .specs()
        .iter()
        .map(|spec| spec.id())
        .filter(|id| id.starts_with(&prefix))
        .collect();
    let mut changes = Changes::default();
    let mut kept = BTreeSet::new();
    for (spec, handler) in pairs {
        let id = spec.id();
        if registry.spec(&id).is_some_and(|old| *old == spec) {
            changes.unchanged += 1;
            kept.insert(id);
            continue;
        }
        // In one step: a call arriving now finds the old operation or the new one.
        if registry.replace_lazy(spec, handler)? {
            changes.replaced += 1;
        } else {
            changes.added += 1;
        }
        kept.insert(id);
    }
    for gone in before.difference(&kept) {
        registry.unregister(gone);
        changes.removed += 1;
    }
    Ok(changes)
}
