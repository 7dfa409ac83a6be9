//! The rules of the configuration as opkit values: the [`AccessRule`] a rule gives, and
//! the [`ImportAccess`] of one source ([`import_access`]) — what every imported operation
//! gets, [`AccessRule::internal`] unless a rule says otherwise.

use crate::config::{AccessKind, Config, Rule};
use opkit::AccessRule;
use opkit_adapters::ImportAccess;

/// The access rule a configuration rule gives, if it gives one (a rule may set only a
/// rate limit).
pub fn access_rule(rule: &Rule) -> Option<AccessRule> {
    match rule.access {
        Some(AccessKind::Public) => Some(AccessRule::public()),
        Some(AccessKind::Internal) => Some(AccessRule::internal()),
        None if rule.scopes.is_empty() && rule.roles.is_empty() => None,
        None => Some(AccessRule::scopes(rule.scopes.clone()).with_roles(rule.roles.clone())),
    }
}

/// The import access of the source `namespace`: the rules of `config` that concern it (its
/// namespace's, and single operations' by name without the namespace); a later rule for the
/// same target wins.
pub fn import_access(config: &Config, namespace: &str) -> ImportAccess {
    let mut access = ImportAccess::new();
    for rule in &config.rules {
        let Some(given) = access_rule(rule) else {
            continue;
        };
        if rule.namespace.as_deref() == Some(namespace) {
            access = access.all(given);
        } else if let Some(name) = rule
            .operation
            .as_deref()
            .and_then(|id| id.strip_prefix(namespace))
            .and_then(|rest| rest.strip_prefix('.'))
        {
            access = access.operation(name, given);
        }
    }
    access
}
