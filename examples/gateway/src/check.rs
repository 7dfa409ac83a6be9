//! Checks a parsed [`Config`] as a whole: sources with one location and distinct
//! namespaces, rules that name a source, access rules that do not contradict themselves,
//! non-zero rate limits, one way to sign in.

use crate::config::{AccessKind, Config, Rule};
use crate::error::ConfigError;
use std::collections::BTreeSet;

/// Every check, in the order a reader of the file would fix them.
pub fn check(config: &Config) -> Result<(), ConfigError> {
    if config.sources.is_empty() {
        return Err(ConfigError::NoSources);
    }
    let mut namespaces = BTreeSet::new();
    for source in &config.sources {
        if !is_identifier(&source.namespace) {
            return Err(ConfigError::BadNamespace {
                namespace: source.namespace.clone(),
            });
        }
        if !namespaces.insert(source.namespace.as_str()) {
            return Err(ConfigError::DuplicateNamespace {
                namespace: source.namespace.clone(),
            });
        }
        source.location()?;
    }
    for (index, rule) in config.rules.iter().enumerate() {
        check_rule(index + 1, rule, &namespaces)?;
    }
    let sign_in = &config.sign_in;
    if sign_in.api_keys.is_some() == sign_in.oidc.is_some() {
        return Err(ConfigError::SignIn);
    }
    Ok(())
}

fn check_rule(index: usize, rule: &Rule, namespaces: &BTreeSet<&str>) -> Result<(), ConfigError> {
    let (name, namespace) = match (&rule.namespace, &rule.operation) {
        (Some(namespace), None) => (namespace.as_str(), namespace.as_str()),
        (None, Some(operation)) => (
            operation.as_str(),
            operation
                .split_once('.')
                .map_or("", |(namespace, _)| namespace),
        ),
        _ => return Err(ConfigError::RuleTarget { index }),
    };
    if !namespaces.contains(namespace) {
        return Err(ConfigError::UnknownNamespace {
            index,
            name: name.to_owned(),
            namespace: namespace.to_owned(),
            known: namespaces.iter().copied().collect::<Vec<_>>().join(", "),
        });
    }
    if let Some(access) = rule.access
        && !(rule.scopes.is_empty() && rule.roles.is_empty())
    {
        return Err(ConfigError::ConflictingAccess {
            index,
            name: name.to_owned(),
            access: match access {
                AccessKind::Public => "public",
                AccessKind::Internal => "internal",
            }
            .to_owned(),
        });
    }
    if rule
        .rate_limit
        .is_some_and(|limit| limit.calls == 0 || limit.seconds == 0)
    {
        return Err(ConfigError::ZeroRateLimit {
            index,
            name: name.to_owned(),
        });
    }
    Ok(())
}

fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|first| first.is_ascii_alphabetic() || first == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}
