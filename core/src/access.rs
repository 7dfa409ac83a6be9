//! `Identity` and `AccessRule`: who is calling, and who may call.

use crate::error::CallError;
use serde::{Deserialize, Serialize};

/// The caller: an id plus the scopes and roles granted to it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Identity {
    /// Who the caller is (a user id, a service name).
    pub id: String,
    /// Granted scopes, e.g. `users:write`.
    #[serde(default)]
    pub scopes: Vec<String>,
    /// Granted roles, e.g. `admin`.
    #[serde(default)]
    pub roles: Vec<String>,
}

impl Identity {
    /// An identity with no scopes and no roles.
    pub fn new(id: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            ..Self::default()
        }
    }

    /// Adds scopes.
    #[must_use]
    pub fn with_scopes<S: Into<String>>(mut self, scopes: impl IntoIterator<Item = S>) -> Self {
        self.scopes.extend(scopes.into_iter().map(Into::into));
        self
    }

    /// Adds roles.
    #[must_use]
    pub fn with_roles<S: Into<String>>(mut self, roles: impl IntoIterator<Item = S>) -> Self {
        self.roles.extend(roles.into_iter().map(Into::into));
        self
    }
}

/// Who may call an operation through the call protocol (and the HTTP/MCP servers).
///
/// An empty rule is public. Otherwise the caller needs an identity that holds **every** listed
/// scope and, when roles are listed, **at least one** of the listed roles. An
/// [`internal`](Self::internal) rule admits no caller from outside at all: only the trusted
/// in-process paths ([`OperationRegistry::execute`](crate::OperationRegistry::execute), an
/// env, a typed call) run it. Imported operations get it unless the application gives them a
/// rule.
///
/// ```
/// use opkit::{AccessRule, Identity};
/// let rule = AccessRule::scopes(["users:write"]).with_roles(["admin", "editor"]);
/// let editor = Identity::new("ann").with_scopes(["users:write"]).with_roles(["editor"]);
/// assert!(rule.check(Some(&editor)).is_ok());
/// assert!(rule.check(Some(&Identity::new("bob"))).is_err());
/// assert!(rule.check(None).is_err());
/// assert!(AccessRule::public().check(None).is_ok());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AccessRule {
    /// Scopes the caller must all hold.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<String>,
    /// Roles of which the caller must hold one (when any are listed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub roles: Vec<String>,
    /// No caller from outside may call (see [`internal`](Self::internal)); the scopes and
    /// roles then do not matter.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub internal: bool,
}

impl AccessRule {
    /// Anyone may call.
    pub fn public() -> Self {
        Self::default()
    }

    /// The caller must hold every one of `scopes`.
    pub fn scopes<S: Into<String>>(scopes: impl IntoIterator<Item = S>) -> Self {
        Self {
            scopes: scopes.into_iter().map(Into::into).collect(),
            ..Self::default()
        }
    }

    /// No caller from outside may call: every edge (HTTP, MCP, the call protocol, a server of
    /// yours through the front door) refuses with `ACCESS_DENIED`; trusted in-process code
    /// still calls it. What an imported operation is until the application says who may call
    /// it.
    ///
    /// ```
    /// use opkit::{AccessRule, Identity};
    /// let admin = Identity::new("ann").with_roles(["admin"]);
    /// assert!(AccessRule::internal().check(Some(&admin)).is_err());
    /// assert!(!AccessRule::internal().is_public());
    /// ```
    pub fn internal() -> Self {
        Self {
            internal: true,
            ..Self::default()
        }
    }

    /// The caller must hold one of `roles`.
    pub fn roles<S: Into<String>>(roles: impl IntoIterator<Item = S>) -> Self {
        Self::public().with_roles(roles)
    }

    /// Adds roles (the caller must hold one of them).
    #[must_use]
    pub fn with_roles<S: Into<String>>(mut self, roles: impl IntoIterator<Item = S>) -> Self {
        self.roles.extend(roles.into_iter().map(Into::into));
        self
    }

    /// `true` when anyone may call.
    pub fn is_public(&self) -> bool {
        self.scopes.is_empty() && self.roles.is_empty() && !self.internal
    }

    /// `true` when no caller from outside may call (see [`internal`](Self::internal)).
    pub fn is_internal(&self) -> bool {
        self.internal
    }

    /// Checks `identity` against the rule; `ACCESS_DENIED` says what is missing.
    pub fn check(&self, identity: Option<&Identity>) -> Result<(), CallError> {
        if self.is_public() {
            return Ok(());
        }
        if self.internal {
            return Err(CallError::access_denied(
                "this operation is internal: no caller from outside may call it (an imported operation is internal until the application gives it an access rule)",
            ));
        }
        let Some(identity) = identity else {
            return Err(CallError::access_denied(
                "this operation requires an authenticated identity",
            ));
        };
        let missing: Vec<&str> = self
            .scopes
            .iter()
            .filter(|scope| !identity.scopes.contains(scope))
            .map(String::as_str)
            .collect();
        if !missing.is_empty() {
            return Err(CallError::access_denied(format!(
                "identity `{}` lacks scope(s): {}",
                identity.id,
                missing.join(", ")
            )));
        }
        if !self.roles.is_empty() && !self.roles.iter().any(|role| identity.roles.contains(role)) {
            return Err(CallError::access_denied(format!(
                "identity `{}` holds none of the roles: {}",
                identity.id,
                self.roles.join(", ")
            )));
        }
        Ok(())
    }
}
