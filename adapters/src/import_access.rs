//! [`ImportAccess`]: who may call the operations an import registers.

use opkit::AccessRule;
use serde_json::Value;
use std::collections::BTreeMap;

/// Who may call the operations of one import.
///
/// An import calls the remote with the application's own credentials (its API key, its OAuth
/// client, the privileges of a child process), so an imported operation served on the
/// application's edges lets its callers act with that authority: a confused deputy, unless
/// the application decides who may. So an imported operation gets, in order:
///
/// 1. the rule given for it by name ([`ImportAccess::operation`]);
/// 2. the remote's own opkit access rule, when the remote is an opkit server that restricts
///    it (`x-opkit-access` in its OpenAPI document, `_meta["opkit/access"]` on its MCP tool):
///    what its authors required of callers still holds in front of it;
/// 3. the rule for the whole import ([`ImportAccess::all`]);
/// 4. otherwise [`AccessRule::internal`]: trusted in-process code calls it, every edge
///    refuses it with `ACCESS_DENIED` saying how to give it a rule.
///
/// ```
/// use opkit::AccessRule;
/// use opkit_adapters::ImportAccess;
/// let access = ImportAccess::new()
///     .all(AccessRule::scopes(["github:read"]))
///     .operation("delete_repo", AccessRule::roles(["admin"]));
/// assert_eq!(access.rule_for("list_repos", None), AccessRule::scopes(["github:read"]));
/// assert_eq!(access.rule_for("delete_repo", None), AccessRule::roles(["admin"]));
/// assert!(ImportAccess::new().rule_for("anything", None).is_internal());
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ImportAccess {
    all: Option<AccessRule>,
    by_name: BTreeMap<String, AccessRule>,
}

impl ImportAccess {
    /// Nothing given: imported operations are internal unless the remote restricts them.
    pub fn new() -> Self {
        Self::default()
    }

    /// The rule of every operation of the import that has none of its own (by name, or from
    /// the remote). [`AccessRule::public`] serves them to anyone.
    #[must_use]
    pub fn all(mut self, rule: AccessRule) -> Self {
        self.all = Some(rule);
        self
    }

    /// The rule of the operation named `name` in the registry (without its namespace: the
    /// tool's or `operationId`'s sanitized name), whatever the remote says.
    #[must_use]
    pub fn operation(mut self, name: impl Into<String>, rule: AccessRule) -> Self {
        self.by_name.insert(name.into(), rule);
        self
    }

    /// The names given rules of their own.
    pub fn named(&self) -> impl Iterator<Item = &str> {
        self.by_name.keys().map(String::as_str)
    }

    /// The rule of the operation `name`, whose remote declared `remote` (its opkit access
    /// rule as JSON, when it has one).
    pub fn rule_for(&self, name: &str, remote: Option<&Value>) -> AccessRule {
        if let Some(rule) = self.by_name.get(name) {
            return rule.clone();
        }
        let declared = remote
            .and_then(|rule| serde_json::from_value::<AccessRule>(rule.clone()).ok())
            .filter(|rule| !rule.is_public());
        if let Some(rule) = declared {
            return rule;
        }
        self.all.clone().unwrap_or_else(AccessRule::internal)
    }
}

#[cfg(test)]
mod tests {
    use super::ImportAccess;
    use opkit::AccessRule;
    use serde_json::json;

    #[test]
    fn by_name_then_the_remote_then_the_import_then_internal() {
        let access = ImportAccess::new()
            .all(AccessRule::public())
            .operation("purge", AccessRule::roles(["ops"]));
        let remote = json!({"scopes": ["notes:admin"]});
        assert_eq!(
            access.rule_for("purge", Some(&remote)),
            AccessRule::roles(["ops"])
        );
        assert_eq!(
            access.rule_for("delete", Some(&remote)),
            AccessRule::scopes(["notes:admin"])
        );
        assert_eq!(
            access.rule_for("list", Some(&json!({}))),
            AccessRule::public()
        );
        assert_eq!(
            access.rule_for("list", Some(&json!("garbage"))),
            AccessRule::public()
        );
        assert!(ImportAccess::new().rule_for("list", None).is_internal());
        assert_eq!(
            ImportAccess::new().rule_for("delete", Some(&remote)),
            AccessRule::scopes(["notes:admin"])
        );
    }
}
