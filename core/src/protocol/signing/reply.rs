//! The tokens of the events that answer or end a request: a handler signs each reply
//! (`call.responded`, `call.completed`, `call.error`) and a caller signs its `call.aborted`,
//! so that a bus writer can neither answer a call in the handler's place nor cancel it in the
//! caller's.
//!
//! A reply token binds the request id, the event (`ev`), a digest of what the event carries
//! (its JSON object without `type`, `requestId` and `signature`: the output envelope, the
//! error's fields, nothing for `call.completed`; [`reply_body`]) and, for the items of a
//! subscription, their index (`n`, from 0): a genuine item published again or out of turn is
//! not the next one. An abort token binds the request id and the operation. Both are JWS
//! with their own `typ` (`opkit-reply+jwt`, `opkit-abort+jwt`), so no token passes for
//! another kind, and live at most [`EVENT_LIFETIME_SECS`].

use super::IdentityKeys;
use super::digest;
use super::keys::Verifier;
use super::request::{LEEWAY_SECS, now_secs};
use jsonwebtoken::{Header, Validation};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::HashMap;

/// How long an event token lives: a reply or an abort is read as it arrives.
pub const EVENT_LIFETIME_SECS: u64 = 300;
const REPLY_TYP: &str = "opkit-reply+jwt";
const ABORT_TYP: &str = "opkit-abort+jwt";

/// Which event a reply token is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReplyKind {
    /// `call.responded`: an output (the only one of a call, or one item of a subscription).
    Responded,
    /// `call.completed`: a subscription ended.
    Completed,
    /// `call.error`: the request failed.
    Error,
}

/// What a reply token binds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct ReplyClaims {
    rid: String,
    ev: ReplyKind,
    /// The digest of what the event carries (absent for `call.completed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    dig: Option<String>,
    /// The index of a subscription's item.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    n: Option<u64>,
    iat: u64,
    exp: u64,
}

/// What an abort token binds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct AbortClaims {
    rid: String,
    op: String,
    iat: u64,
    exp: u64,
}

/// What a reply token's digest covers of an event whose wire JSON object is `event`: every
/// field but `type`, `requestId` and `signature`.
pub fn reply_body(event: &Map<String, Value>) -> Value {
    Value::Object(
        event
            .iter()
            .filter(|(key, _)| !matches!(key.as_str(), "type" | "requestId" | "signature"))
            .map(|(key, value)| (key.clone(), value.clone()))
            .collect(),
    )
}

/// One reply, as its token describes it: the request, the event, what it carries and its
/// index among a subscription's items.
#[derive(Debug, Clone, Copy)]
pub struct Reply<'a> {
    /// The request answered.
    pub request_id: &'a str,
    /// The event.
    pub kind: ReplyKind,
    /// What the event carries: its wire JSON object without `type`, `requestId` and
    /// `signature` ([`reply_body`]).
    pub body: &'a Value,
    /// The index of a subscription's item (`None` for a call's one output and the other
    /// events).
    pub index: Option<u64>,
}

impl Reply<'_> {
    fn claims(&self) -> ReplyClaims {
        ReplyClaims {
            rid: self.request_id.to_owned(),
            ev: self.kind,
            dig: Some(digest::of(self.body)),
            n: self.index,
            iat: 0,
            exp: 0,
        }
    }
}

fn sign<C: Serialize>(
    signer: &super::keys::Signer,
    typ: &str,
    claims: &C,
) -> Result<String, String> {
    let mut header = Header::new(signer.algorithm);
    header.kid = Some(signer.kid.clone());
    header.typ = Some(typ.to_owned());
    jsonwebtoken::encode(&header, claims, &signer.key).map_err(|error| error.to_string())
}

/// The claims of `token` if it is a `typ` token one of `verifiers` verifies; why not
/// otherwise.
fn verify<C: for<'de> Deserialize<'de>>(
    verifiers: &HashMap<String, Verifier>,
    typ: &str,
    token: &str,
) -> Result<C, String> {
    let header = jsonwebtoken::decode_header(token).map_err(|error| error.to_string())?;
    if header.typ.as_deref() != Some(typ) {
        return Err(format!(
            "its token is not an {typ} (`typ` {:?})",
            header.typ.unwrap_or_default()
        ));
    }
    let kid = header.kid.unwrap_or_default();
    let verifier = verifiers
        .get(&kid)
        .ok_or_else(|| format!("it is signed with an unknown key `{kid}`"))?;
    let mut validation = Validation::new(verifier.algorithm);
    validation.leeway = LEEWAY_SECS;
    validation.validate_aud = false;
    validation.set_required_spec_claims(&["exp"]);
    jsonwebtoken::decode::<C>(token, &verifier.key, &validation)
        .map(|data| data.claims)
        .map_err(|error| format!("its signature does not verify ({error})"))
}

impl IdentityKeys {
    /// Whether these keys sign replies (a handler's).
    pub fn signs_replies(&self) -> bool {
        self.reply_signer.is_some()
    }

    /// Whether these keys verify replies: a caller holding them takes only replies a
    /// handler signed.
    pub fn verifies_replies(&self) -> bool {
        !self.reply_verifiers.is_empty()
    }

    /// The token of `reply`; `None` when these keys sign no replies.
    pub fn sign_reply(&self, reply: &Reply<'_>) -> Result<Option<String>, String> {
        let Some(signer) = &self.reply_signer else {
            return Ok(None);
        };
        let now = now_secs();
        let mut claims = reply.claims();
        claims.iat = now;
        claims.exp = now + EVENT_LIFETIME_SECS;
        sign(signer, REPLY_TYP, &claims).map(Some)
    }

    /// Whether `token` signs `reply` (by a key these keys verify replies with); why not
    /// otherwise.
    pub fn verify_reply(&self, reply: &Reply<'_>, token: Option<&str>) -> Result<(), String> {
        let token = token.ok_or("it is not signed")?;
        let mut signed: ReplyClaims = verify(&self.reply_verifiers, REPLY_TYP, token)?;
        signed.iat = 0;
        signed.exp = 0;
        if signed != reply.claims() {
            return Err("its signature was made for another reply".to_owned());
        }
        Ok(())
    }

    /// The token of the caller's `call.aborted` for `request_id` to `operation_id`; `None`
    /// when these keys cannot sign.
    pub fn sign_abort(
        &self,
        request_id: &str,
        operation_id: &str,
    ) -> Result<Option<String>, String> {
        let Some(signer) = &self.signer else {
            return Ok(None);
        };
        let now = now_secs();
        let claims = AbortClaims {
            rid: request_id.to_owned(),
            op: operation_id.to_owned(),
            iat: now,
            exp: now + EVENT_LIFETIME_SECS,
        };
        sign(signer, ABORT_TYP, &claims).map(Some)
    }

    /// Whether `token` signs the abort of `request_id` to `operation_id` with a key these
    /// keys verify requests with (the caller's), and which key.
    pub(crate) fn verify_abort(
        &self,
        request_id: &str,
        operation_id: &str,
        token: &str,
    ) -> Result<(), String> {
        let signed: AbortClaims = verify(&self.verifiers, ABORT_TYP, token)?;
        if signed.rid != request_id || signed.op != operation_id {
            return Err("its signature was made for another request".to_owned());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn handler() -> IdentityKeys {
        IdentityKeys::new().with_signing_secret("k", b"a secret of 32 bytes or more....")
    }

    #[test]
    fn a_reply_verifies_only_as_signed() {
        let keys = handler();
        let output = json!({"output": {"data": 1, "meta": {"source": "local"}}});
        let reply = Reply {
            request_id: "c:1",
            kind: ReplyKind::Responded,
            body: &output,
            index: None,
        };
        let token = keys.sign_reply(&reply).unwrap().unwrap();
        assert_eq!(keys.verify_reply(&reply, Some(&token)), Ok(()));
        let other = json!({"output": {"data": 2, "meta": {"source": "local"}}});
        for forged in [
            Reply {
                body: &other,
                ..reply
            },
            Reply {
                request_id: "c:2",
                ..reply
            },
            Reply {
                index: Some(0),
                ..reply
            },
            Reply {
                kind: ReplyKind::Error,
                ..reply
            },
        ] {
            assert!(
                keys.verify_reply(&forged, Some(&token)).is_err(),
                "{forged:?}"
            );
        }
        assert!(keys.verify_reply(&reply, None).is_err());
        // A request or abort token is not a reply token.
        let abort = keys.sign_abort("c:1", "a.b").unwrap().unwrap();
        assert!(keys.verify_reply(&reply, Some(&abort)).is_err());
        assert_eq!(keys.verify_abort("c:1", "a.b", &abort), Ok(()));
        assert!(keys.verify_abort("c:2", "a.b", &abort).is_err());
        assert!(keys.verify_abort("c:1", "a.b", &token).is_err());
    }
}
