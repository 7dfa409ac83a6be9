//! The token of one `call.requested`: what it binds, how a caller makes it and how a handler
//! checks it.

use super::IdentityKeys;
use super::digest;
use crate::access::Identity;
use crate::error::{CallError, ErrorCode};
use crate::protocol::wire::CallRequested;
use jsonwebtoken::{Header, Validation};
use serde::{Deserialize, Serialize};
use std::time::{SystemTime, UNIX_EPOCH};

/// The longest a signature lives, whatever the request's deadline.
pub(crate) const MAX_LIFETIME_SECS: u64 = 300;
/// The clock skew a verifier allows on `exp`.
pub(crate) const LEEWAY_SECS: u64 = 5;
/// The JOSE `typ` of a request token: a token made for anything else is never one.
const REQUEST_TYP: &str = "opkit-call+jwt";

/// The claims of a request token: everything a handler acts on.
#[derive(Serialize, Deserialize, PartialEq, Debug)]
struct Claims {
    /// The identity, exactly as on the request.
    idn: Identity,
    /// The request id.
    rid: String,
    /// The operation.
    op: String,
    /// The digest of the input's canonical form.
    inp: String,
    /// The deadline (Unix milliseconds); absent when the request has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    dl: Option<u64>,
    /// The parent request id; absent when the request has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    par: Option<String>,
    /// Whether the caller subscribes.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    subs: bool,
    iat: u64,
    exp: u64,
}

impl Claims {
    /// The claims `request` would be signed with, but for the times.
    fn of(request: &CallRequested, identity: &Identity) -> Self {
        Self {
            idn: identity.clone(),
            rid: request.request_id.clone(),
            op: request.operation_id.clone(),
            inp: digest::of(&request.input),
            dl: request.deadline,
            par: request.parent_request_id.clone(),
            subs: request.subscription,
            iat: 0,
            exp: 0,
        }
    }

    /// The first field of `self` (signed) that differs from `request`'s, by name.
    fn mismatch(&self, request: &Self) -> Option<&'static str> {
        if self.rid != request.rid {
            Some("request id")
        } else if self.op != request.op {
            Some("operation")
        } else if self.idn != request.idn {
            Some("identity")
        } else if self.inp != request.inp {
            Some("input")
        } else if self.dl != request.dl {
            Some("deadline")
        } else if self.par != request.par {
            Some("parent request")
        } else if self.subs != request.subs {
            Some("subscription flag")
        } else {
            None
        }
    }
}

pub(crate) fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_secs())
}

/// A request whose signature verified.
#[derive(Debug)]
pub(crate) struct Verified {
    /// When the signature stops verifying (Unix seconds, the leeway included): until then
    /// its request id must not be taken again.
    pub(crate) forget_at: u64,
}

impl IdentityKeys {
    /// The token for `request`'s identity, binding the whole request (see the
    /// [module docs](super)), for an edge that publishes `call.requested` itself: set it as
    /// the request's `identity_token` once every other field has its final value (a field
    /// changed afterwards fails verification). `None` when the request has no identity or
    /// these keys cannot sign.
    pub fn sign_request(&self, request: &CallRequested) -> Result<Option<String>, CallError> {
        let (Some(signer), Some(identity)) = (&self.signer, &request.identity) else {
            return Ok(None);
        };
        let now = now_secs();
        let latest = now + MAX_LIFETIME_SECS;
        let mut claims = Claims::of(request, identity);
        claims.iat = now;
        claims.exp = request
            .deadline
            .map_or(latest, |millis| (millis / 1000 + 1).min(latest));
        let mut header = Header::new(signer.algorithm);
        header.kid = Some(signer.kid.clone());
        header.typ = Some(REQUEST_TYP.to_owned());
        jsonwebtoken::encode(&header, &claims, &signer.key)
            .map(Some)
            .map_err(|error| CallError::execution(format!("could not sign the identity: {error}")))
    }

    /// Checks the identity of `request`: `Ok(None)` for a request without one (anonymous),
    /// `Ok(Some(..))` when its token verifies and binds this very request, `ACCESS_DENIED`
    /// naming what is wrong otherwise.
    pub(crate) fn verify(&self, request: &CallRequested) -> Result<Option<Verified>, CallError> {
        let Some(identity) = &request.identity else {
            return Ok(None);
        };
        let denied = |why: String| {
            CallError::new(
                ErrorCode::AccessDenied,
                format!(
                    "the identity `{}` of request `{}` {why}: this handler requires identities signed by a key it knows",
                    identity.id, request.request_id
                ),
            )
        };
        let Some(token) = &request.identity_token else {
            return Err(denied("is not signed".to_owned()));
        };
        let header = jsonwebtoken::decode_header(token)
            .map_err(|error| denied(format!("has an unreadable signature ({error})")))?;
        if header.typ.as_deref() != Some(REQUEST_TYP) {
            return Err(denied(format!(
                "carries a token that is not a request signature (`typ` {:?}, expected {REQUEST_TYP:?})",
                header.typ.unwrap_or_default()
            )));
        }
        let kid = header.kid.unwrap_or_default();
        let Some(verifier) = self.verifiers.get(&kid) else {
            return Err(denied(format!("is signed with an unknown key `{kid}`")));
        };
        let mut validation = Validation::new(verifier.algorithm);
        validation.leeway = LEEWAY_SECS;
        validation.validate_aud = false;
        validation.set_required_spec_claims(&["exp"]);
        let signed = jsonwebtoken::decode::<Claims>(token, &verifier.key, &validation)
            .map_err(|error| denied(format!("has a signature that does not verify ({error})")))?
            .claims;
        if let Some(field) = signed.mismatch(&Claims::of(request, identity)) {
            return Err(denied(format!(
                "is signed for another request (its {field} differs from the signed one)"
            )));
        }
        Ok(Some(Verified {
            forget_at: signed.exp + LEEWAY_SECS,
        }))
    }
}
