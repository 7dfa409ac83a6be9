//! The rules of the configuration as opkit values: the [`AccessRule`] a rule gives, and
//! the import access of one source ([`ImportRules`]) — what every imported operation gets,
//! [`AccessRule::internal`] unless a rule says otherwise.

use crate::config::{AccessKind, Config, Rule};
use opkit::AccessRule;

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

/// The access rules of one source's import.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ImportRules {
    /// The rule of the whole namespace, when one is given.
    pub all: Option<AccessRule>,
    /// Rules of single operations, by name without the namespace.
    pub by_name: Vec<(String, AccessRule)>,
}

impl ImportRules {
    /// The rules of `config` that concern the source `namespace`; a later rule for the same
    /// target wins.
    pub fn of(config: &Config, namespace: &str) -> Self {
        let mut rules = Self::default();
        for rule in &config.rules {
            let Some(access) = access_rule(rule) else {
                continue;
            };
            if rule.namespace.as_deref() == Some(namespace) {
                rules.all = Some(access);
            } else if let Some(name) = rule
                .operation
                .as_deref()
                .and_then(|id| id.strip_prefix(namespace))
                .and_then(|rest| rest.strip_prefix('.'))
            {
                rules.by_name.push((name.to_owned(), access));
            }
        }
        rules
    }
}
