//! Security: matching the options' credentials to the document's security schemes.
//!
//! `security` is a list of alternatives (OR), each a set of schemes (AND); the operation's
//! list replaces the root's, and `security: []` turns it off. The first non-empty
//! alternative whose schemes are all satisfied by the credentials is applied; an empty
//! alternative `{}` (anonymous access) counts only when none is; when nothing is satisfied
//! the request goes out without credentials (the server's 401 then says what is missing).
//! `mutualTLS` is satisfied only by the client given in the options (its TLS identity) and
//! adds nothing to the request.

use super::document::join_pointer;
use super::options::{Credential, OpenApiAuth};
use super::refs::Resolver;
use base64::Engine;
use serde_json::Value;

/// One thing a credential adds to a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum AuthAction {
    Header(String, String),
    Query(String, String),
    Cookie(String, String),
}

/// The actions for an operation (`security` is the operation's own list, if any).
pub(crate) fn resolve(
    resolver: Resolver<'_>,
    security: Option<&Value>,
    auth: &OpenApiAuth,
) -> Vec<AuthAction> {
    let requirements = security.or_else(|| resolver.root.get("security"));
    let Some(Value::Array(alternatives)) = requirements else {
        return Vec::new();
    };
    for alternative in alternatives {
        let Some(schemes) = alternative.as_object() else {
            continue;
        };
        if schemes.is_empty() {
            continue;
        }
        let actions: Option<Vec<Vec<AuthAction>>> = schemes
            .keys()
            .map(|name| scheme_actions(resolver, name, auth))
            .collect();
        if let Some(actions) = actions {
            return actions.into_iter().flatten().collect();
        }
    }
    Vec::new()
}

/// What the credential for scheme `name` adds; `None` when it cannot be satisfied.
fn scheme_actions(
    resolver: Resolver<'_>,
    name: &str,
    auth: &OpenApiAuth,
) -> Option<Vec<AuthAction>> {
    let pointer = join_pointer("/components/securitySchemes", name);
    let raw = resolver.root.pointer(&pointer)?;
    let (scheme, _, _) = resolver.deref(raw, &pointer).ok()?;
    let kind = scheme.get("type")?.as_str()?;
    let explicit = auth.schemes.get(name);
    match kind {
        "apiKey" => {
            let key = match explicit {
                Some(Credential::ApiKey(key) | Credential::Bearer(key)) => key.clone(),
                Some(Credential::Basic { .. }) => return None,
                None => auth.api_key.clone()?,
            };
            let param = scheme.get("name")?.as_str()?.to_owned();
            Some(vec![match scheme.get("in")?.as_str()? {
                "header" => AuthAction::Header(param, key),
                "query" => AuthAction::Query(param, key),
                "cookie" => AuthAction::Cookie(param, key),
                _ => return None,
            }])
        }
        "http" => {
            let http_scheme = scheme.get("scheme")?.as_str()?.to_ascii_lowercase();
            match (http_scheme.as_str(), explicit) {
                ("basic", Some(Credential::Basic { username, password })) => {
                    Some(vec![basic(username, password)])
                }
                ("basic", None) => {
                    let (username, password) = auth.basic.as_ref()?;
                    Some(vec![basic(username, password)])
                }
                ("bearer", Some(Credential::Bearer(token) | Credential::ApiKey(token))) => {
                    Some(vec![bearer(token)])
                }
                ("bearer", None) => Some(vec![bearer(auth.bearer.as_ref()?)]),
                _ => None,
            }
        }
        "oauth2" | "openIdConnect" => match explicit {
            Some(Credential::Bearer(token) | Credential::ApiKey(token)) => {
                Some(vec![bearer(token)])
            }
            Some(Credential::Basic { .. }) => None,
            None => Some(vec![bearer(auth.bearer.as_ref()?)]),
        },
        _ => None,
    }
}

fn bearer(token: &str) -> AuthAction {
    AuthAction::Header("Authorization".into(), format!("Bearer {token}"))
}

fn basic(username: &str, password: &str) -> AuthAction {
    let encoded =
        base64::engine::general_purpose::STANDARD.encode(format!("{username}:{password}"));
    AuthAction::Header("Authorization".into(), format!("Basic {encoded}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::openapi::document::SpecVersion;
    use serde_json::json;

    fn doc() -> Value {
        json!({
            "security": [{"key": []}],
            "components": {"securitySchemes": {
                "key": {"type": "apiKey", "name": "X-API-Key", "in": "header"},
                "qkey": {"type": "apiKey", "name": "api_key", "in": "query"},
                "ckey": {"type": "apiKey", "name": "session", "in": "cookie"},
                "token": {"type": "http", "scheme": "Bearer"},
                "login": {"type": "http", "scheme": "basic"},
                "oauth": {"type": "oauth2", "flows": {}},
                "shared": {"$ref": "#/components/securitySchemes/token"}
            }}
        })
    }

    fn run(security: Option<Value>, auth: &OpenApiAuth) -> Vec<AuthAction> {
        let root = doc();
        let resolver = Resolver {
            root: &root,
            version: SpecVersion::V3_1,
        };
        resolve(resolver, security.as_ref(), auth)
    }

    #[test]
    fn schemes_map_to_headers_query_and_cookies() {
        let auth = OpenApiAuth::new().api_key("k").bearer("t").basic("u", "p");
        assert_eq!(
            run(None, &auth),
            [AuthAction::Header("X-API-Key".into(), "k".into())]
        );
        assert_eq!(
            run(Some(json!([{"qkey": []}])), &auth),
            [AuthAction::Query("api_key".into(), "k".into())]
        );
        assert_eq!(
            run(Some(json!([{"ckey": []}])), &auth),
            [AuthAction::Cookie("session".into(), "k".into())]
        );
        assert_eq!(
            run(Some(json!([{"token": []}])), &auth),
            [AuthAction::Header(
                "Authorization".into(),
                "Bearer t".into()
            )]
        );
        assert_eq!(
            run(Some(json!([{"oauth": ["read"]}])), &auth),
            [AuthAction::Header(
                "Authorization".into(),
                "Bearer t".into()
            )]
        );
        assert_eq!(
            run(Some(json!([{"shared": []}])), &auth),
            [AuthAction::Header(
                "Authorization".into(),
                "Bearer t".into()
            )]
        );
        assert_eq!(
            run(Some(json!([{"login": []}])), &auth),
            [AuthAction::Header(
                "Authorization".into(),
                "Basic dTpw".into()
            )]
        );
    }

    #[test]
    fn alternatives_are_or_and_entries_are_and() {
        let only_key = OpenApiAuth::new().api_key("k");
        // (token AND key) is not satisfied, key alone is.
        assert_eq!(
            run(
                Some(json!([{"token": [], "key": []}, {"qkey": []}])),
                &only_key
            ),
            [AuthAction::Query("api_key".into(), "k".into())]
        );
        let both = OpenApiAuth::new().api_key("k").bearer("t");
        assert_eq!(run(Some(json!([{"token": [], "key": []}])), &both).len(), 2);
        // `{}` makes anonymous access fine, but a satisfied alternative is preferred.
        assert_eq!(run(Some(json!([{}, {"key": []}])), &only_key).len(), 1);
        assert!(run(Some(json!([{}, {"token": []}])), &only_key).is_empty());
        // `security: []` turns the root requirement off.
        assert!(run(Some(json!([])), &only_key).is_empty());
        // Nothing satisfied: no credentials.
        assert!(run(None, &OpenApiAuth::new()).is_empty());
    }

    #[test]
    fn credentials_by_scheme_name_win() {
        let auth = OpenApiAuth::new()
            .api_key("generic")
            .scheme("key", Credential::ApiKey("specific".into()))
            .scheme(
                "login",
                Credential::Basic {
                    username: "a".into(),
                    password: "b".into(),
                },
            );
        assert_eq!(
            run(None, &auth),
            [AuthAction::Header("X-API-Key".into(), "specific".into())]
        );
        assert_eq!(
            run(Some(json!([{"login": []}])), &auth),
            [AuthAction::Header(
                "Authorization".into(),
                "Basic YTpi".into()
            )]
        );
        assert_eq!(
            run(Some(json!([{"qkey": []}])), &auth),
            [AuthAction::Query("api_key".into(), "generic".into())]
        );
    }
}
