//! From a token's claims to the caller's [`Identity`]: the subject is the id, `scope` (a
//! space-separated string, RFC 8693/9068) or `scp` (a list or a string, as Entra and Okta
//! send it) the scopes, and a configurable claim the roles. A client acting as itself (a
//! token with `client_id` but no subject) is `client:<client_id>`, so a client registered
//! as `bob` is never the user `bob`.

use crate::oauth::error::TokenError;
use opkit::Identity;
use serde_json::{Map, Value};

/// Which claims make the [`Identity`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimsMapping {
    /// The claim holding the caller's id (default `sub`; a token without `sub` but with
    /// `client_id`, as some servers issue for the client-credentials grant, is that client:
    /// see [`client_prefix`](Self::client_prefix)).
    pub id: String,
    /// The claim holding the roles, as a dotted path into nested objects (`roles`, Keycloak's
    /// `realm_access.roles`); `None` for no roles (the default).
    pub roles: Option<String>,
    /// What the id of a client acting as itself (a token without `sub` but with
    /// `client_id`) starts with (default `client:`), so that client ids and user subjects,
    /// which the authorization server hands out independently, never name the same
    /// identity. `None` refuses such tokens (`sub` missing); `Some("")` takes the client id
    /// as it is (only when the provider guarantees the two never collide).
    pub client_prefix: Option<String>,
}

/// The default [`ClaimsMapping::client_prefix`].
pub const DEFAULT_CLIENT_PREFIX: &str = "client:";

impl Default for ClaimsMapping {
    fn default() -> Self {
        Self {
            id: "sub".to_owned(),
            roles: None,
            client_prefix: Some(DEFAULT_CLIENT_PREFIX.to_owned()),
        }
    }
}

impl ClaimsMapping {
    /// The identity the claims stand for.
    pub fn identity(&self, claims: &Map<String, Value>) -> Result<Identity, TokenError> {
        // A client-credentials token's subject is the client: RFC 9068 names it `client_id`
        // too, and some servers send only that; it goes by its own namespace.
        let (id_claim, prefix) = match (claims.get(&self.id), &self.client_prefix) {
            (Some(id), _) => (Some(id), ""),
            (None, Some(prefix)) if self.id == "sub" => (claims.get("client_id"), prefix.as_str()),
            (None, _) => (None, ""),
        };
        let id = match id_claim {
            Some(Value::String(id)) if !id.is_empty() => format!("{prefix}{id}"),
            Some(_) => {
                return Err(TokenError::InvalidClaim {
                    claim: self.id.clone(),
                    reason: "not a non-empty string".to_owned(),
                });
            }
            None => return Err(TokenError::MissingClaim(self.id.clone())),
        };
        let mut scopes = Vec::new();
        for claim in ["scope", "scp"] {
            if let Some(value) = claims.get(claim) {
                scopes.extend(strings(claim, value)?);
            }
        }
        dedup(&mut scopes);
        let mut roles = match &self.roles {
            Some(path) => match lookup(claims, path) {
                Some(value) => strings(path, value)?,
                None => Vec::new(),
            },
            None => Vec::new(),
        };
        dedup(&mut roles);
        Ok(Identity::new(id).with_scopes(scopes).with_roles(roles))
    }
}

/// The value at a dotted path (`realm_access.roles`); a claim whose own name has a dot is
/// found first.
fn lookup<'a>(claims: &'a Map<String, Value>, path: &str) -> Option<&'a Value> {
    if let Some(value) = claims.get(path) {
        return Some(value);
    }
    let mut parts = path.split('.');
    let mut value = claims.get(parts.next()?)?;
    for part in parts {
        value = value.as_object()?.get(part)?;
    }
    Some(value)
}

/// A space-separated string or a list of strings.
fn strings(claim: &str, value: &Value) -> Result<Vec<String>, TokenError> {
    let invalid = || TokenError::InvalidClaim {
        claim: claim.to_owned(),
        reason: "not a string or a list of strings".to_owned(),
    };
    match value {
        Value::String(text) => Ok(text.split_whitespace().map(str::to_owned).collect()),
        Value::Array(items) => items
            .iter()
            .map(|item| item.as_str().map(str::to_owned).ok_or_else(invalid))
            .collect(),
        _ => Err(invalid()),
    }
}

fn dedup(items: &mut Vec<String>) {
    let mut seen = std::collections::HashSet::new();
    items.retain(|item| seen.insert(item.clone()));
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn claims(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn scope_scp_and_nested_roles_make_the_identity() {
        let mapping = ClaimsMapping {
            roles: Some("realm_access.roles".to_owned()),
            ..ClaimsMapping::default()
        };
        let identity = mapping
            .identity(&claims(json!({
                "sub": "ann",
                "scope": "notes:read notes:write",
                "scp": ["notes:read", "admin"],
                "realm_access": {"roles": ["editor"]}
            })))
            .unwrap();
        assert_eq!(identity.id, "ann");
        assert_eq!(identity.scopes, ["notes:read", "notes:write", "admin"]);
        assert_eq!(identity.roles, ["editor"]);
    }

    #[test]
    fn a_client_acting_as_itself_is_not_the_user_of_the_same_name() {
        let client = claims(json!({"client_id": "bob", "scope": "notes:write"}));
        assert_eq!(
            ClaimsMapping::default().identity(&client).unwrap().id,
            "client:bob"
        );
        let user = claims(json!({"sub": "bob", "client_id": "notes-web"}));
        assert_eq!(ClaimsMapping::default().identity(&user).unwrap().id, "bob");
        let refusing = ClaimsMapping {
            client_prefix: None,
            ..ClaimsMapping::default()
        };
        assert_eq!(
            refusing.identity(&client),
            Err(TokenError::MissingClaim("sub".to_owned()))
        );
        let plain = ClaimsMapping {
            client_prefix: Some(String::new()),
            ..ClaimsMapping::default()
        };
        assert_eq!(plain.identity(&client).unwrap().id, "bob");
    }

    #[test]
    fn a_missing_or_odd_subject_is_named() {
        let mapping = ClaimsMapping::default();
        assert_eq!(
            mapping.identity(&claims(json!({"scope": "x"}))),
            Err(TokenError::MissingClaim("sub".to_owned()))
        );
        assert!(matches!(
            mapping.identity(&claims(json!({"sub": "a", "scope": 7}))),
            Err(TokenError::InvalidClaim { .. })
        ));
    }
}
