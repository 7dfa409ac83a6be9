//! Identities a replica can verify: the caller signs the identity it states on
//! `call.requested`, and a [`CallHandler`](super::CallHandler) that requires it refuses a
//! request whose identity is unsigned, forged, expired or signed for another request.
//!
//! The signature is a JWS (compact JWT, RFC 7515/7519) in the request's `identityToken`
//! field, made with the `jsonwebtoken` crate. Its header names the key (`kid`); its claims bind
//! the identity to one request: `idn` (the identity, exactly as on the request), `rid` (the
//! request id), `op` (the operation), `iat`, and `exp` (the request's deadline plus a second,
//! at most five minutes away). A verifier checks the key by id, the algorithm the key was
//! given with (never `none`, never another), the expiry (5 s leeway), and that `idn`, `rid`
//! and `op` are the request's own. A token copied onto another request therefore fails; the
//! same request published again within its deadline is a duplicate the handler drops while
//! the first one runs.
//!
//! Keys: Ed25519 key pairs (the replicas hold only public keys, so a compromised replica
//! cannot sign) or HMAC shared secrets (every holder can sign). Several verifying keys may be
//! held at once, by id, for rotation: sign with the new key once every replica knows it,
//! then drop the old one.
//!
//! Optional and additive on the wire: a peer without keys neither sends nor reads the field.
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! use opkit::prelude::*;
//! use opkit::protocol::{CallHandler, IdentityKeys, MemoryPubSub, PendingOptions, PendingRequestMap};
//! use std::sync::Arc;
//!
//! let keys = IdentityKeys::new().with_signing_secret("2026-11", b"a secret of 32 bytes or more....");
//! let registry = OperationRegistry::new();
//! registry.register(
//!     OperationSpec::new("admin", "purge", OperationKind::Mutation)
//!         .access(AccessRule::roles(["admin"])),
//!     Handler::unary(|_input, _ctx| async move { Ok(serde_json::json!("purged")) }),
//! ).unwrap();
//! let bus = Arc::new(MemoryPubSub::new());
//! let _replica = CallHandler::new(registry, bus.clone())
//!     .with_identity_keys(keys.clone())
//!     .spawn()
//!     .await
//!     .unwrap();
//! let admin = OperationContext::default().with_identity(Identity::new("ann").with_roles(["admin"]));
//!
//! // A caller that signs passes; one that only states the identity is refused.
//! let signing = PendingRequestMap::connect_with(bus.clone(), PendingOptions::default().with_identity_keys(keys))
//!     .await
//!     .unwrap();
//! assert_eq!(signing.call("admin.purge", serde_json::json!({}), &admin).await.unwrap().data, "purged");
//! let stating = PendingRequestMap::connect(bus).await.unwrap();
//! let refused = stating.call("admin.purge", serde_json::json!({}), &admin).await.unwrap_err();
//! assert_eq!(refused.code, ErrorCode::AccessDenied);
//! # });
//! ```

use super::wire::CallRequested;
use crate::access::Identity;
use crate::error::{CallError, ErrorCode};
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

/// The longest a signature lives, whatever the request's deadline.
const MAX_LIFETIME_SECS: u64 = 300;
/// The clock skew a verifier allows on `exp`.
const LEEWAY_SECS: u64 = 5;

/// The claims of an identity token.
#[derive(Serialize, Deserialize)]
struct Claims {
    idn: Identity,
    rid: String,
    op: String,
    iat: u64,
    exp: u64,
}

/// A key that signs, with the id verifiers know it by.
struct Signer {
    kid: String,
    key: EncodingKey,
    algorithm: Algorithm,
}

/// A key that verifies, and the one algorithm it is used with.
#[derive(Clone)]
struct Verifier {
    key: DecodingKey,
    algorithm: Algorithm,
}

/// The keys a caller signs identities with and a [`CallHandler`](super::CallHandler) verifies
/// them with (see the [module docs](self)). Cheap to clone.
#[derive(Clone, Default)]
pub struct IdentityKeys {
    signer: Option<Arc<Signer>>,
    verifiers: Arc<HashMap<String, Verifier>>,
}

impl fmt::Debug for IdentityKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut kids: Vec<&String> = self.verifiers.keys().collect();
        kids.sort();
        f.debug_struct("IdentityKeys")
            .field(
                "signs_with",
                &self.signer.as_ref().map(|signer| &signer.kid),
            )
            .field("verifies", &kids)
            .finish()
    }
}

/// A key that could not be read.
#[derive(Debug, thiserror::Error)]
#[error("the identity key `{kid}` cannot be read: {reason}")]
pub struct IdentityKeyError {
    kid: String,
    reason: String,
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_secs())
}

impl IdentityKeys {
    /// No keys.
    pub fn new() -> Self {
        Self::default()
    }

    fn with_verifier(mut self, kid: &str, key: DecodingKey, algorithm: Algorithm) -> Self {
        Arc::make_mut(&mut self.verifiers).insert(kid.to_owned(), Verifier { key, algorithm });
        self
    }

    /// Signs with the HMAC (HS256) `secret` under `kid`, and verifies with it. Every holder of
    /// the secret can sign: prefer Ed25519 when replicas should only verify.
    #[must_use]
    pub fn with_signing_secret(mut self, kid: &str, secret: &[u8]) -> Self {
        self.signer = Some(Arc::new(Signer {
            kid: kid.to_owned(),
            key: EncodingKey::from_secret(secret),
            algorithm: Algorithm::HS256,
        }));
        self.with_verifier(kid, DecodingKey::from_secret(secret), Algorithm::HS256)
    }

    /// Verifies tokens signed with the HMAC (HS256) `secret` under `kid` (another key kept
    /// during a rotation, say).
    #[must_use]
    pub fn with_verifying_secret(self, kid: &str, secret: &[u8]) -> Self {
        self.with_verifier(kid, DecodingKey::from_secret(secret), Algorithm::HS256)
    }

    /// Signs with an Ed25519 private key (PKCS#8 PEM) under `kid`, and verifies with its
    /// public key (SPKI PEM).
    pub fn with_signing_ed25519_pem(
        mut self,
        kid: &str,
        private_pem: &[u8],
        public_pem: &[u8],
    ) -> Result<Self, IdentityKeyError> {
        let error = |error: jsonwebtoken::errors::Error| IdentityKeyError {
            kid: kid.to_owned(),
            reason: error.to_string(),
        };
        self.signer = Some(Arc::new(Signer {
            kid: kid.to_owned(),
            key: EncodingKey::from_ed_pem(private_pem).map_err(error)?,
            algorithm: Algorithm::EdDSA,
        }));
        self.with_verifying_ed25519_pem(kid, public_pem)
    }

    /// Verifies tokens signed by the Ed25519 key whose public key (SPKI PEM) is `public_pem`,
    /// under `kid`: what a replica holds.
    pub fn with_verifying_ed25519_pem(
        self,
        kid: &str,
        public_pem: &[u8],
    ) -> Result<Self, IdentityKeyError> {
        let key = DecodingKey::from_ed_pem(public_pem).map_err(|error| IdentityKeyError {
            kid: kid.to_owned(),
            reason: error.to_string(),
        })?;
        Ok(self.with_verifier(kid, key, Algorithm::EdDSA))
    }

    /// Whether these keys can sign.
    pub fn can_sign(&self) -> bool {
        self.signer.is_some()
    }

    /// The token for `identity` on the request `request_id` to `operation_id` with the
    /// deadline `deadline_millis` (since the Unix epoch); `None` without a signing key.
    pub(crate) fn sign(
        &self,
        identity: &Identity,
        request_id: &str,
        operation_id: &str,
        deadline_millis: Option<u64>,
    ) -> Result<Option<String>, CallError> {
        let Some(signer) = &self.signer else {
            return Ok(None);
        };
        let now = now_secs();
        let latest = now + MAX_LIFETIME_SECS;
        let exp = deadline_millis.map_or(latest, |millis| (millis / 1000 + 1).min(latest));
        let claims = Claims {
            idn: identity.clone(),
            rid: request_id.to_owned(),
            op: operation_id.to_owned(),
            iat: now,
            exp,
        };
        let mut header = Header::new(signer.algorithm);
        header.kid = Some(signer.kid.clone());
        jsonwebtoken::encode(&header, &claims, &signer.key)
            .map(Some)
            .map_err(|error| CallError::execution(format!("could not sign the identity: {error}")))
    }

    /// The token for `request`'s identity (for its id, operation and deadline), for an edge
    /// that publishes `call.requested` itself: set it as the request's `identity_token`.
    /// `None` when the request has no identity or these keys cannot sign.
    pub fn sign_request(&self, request: &CallRequested) -> Result<Option<String>, CallError> {
        match &request.identity {
            Some(identity) => self.sign(
                identity,
                &request.request_id,
                &request.operation_id,
                request.deadline,
            ),
            None => Ok(None),
        }
    }

    /// Checks the identity of `request` (a request without one passes: it is anonymous);
    /// `ACCESS_DENIED` naming what is wrong otherwise.
    pub(crate) fn verify(&self, request: &CallRequested) -> Result<(), CallError> {
        let Some(identity) = &request.identity else {
            return Ok(());
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
        let kid = header.kid.unwrap_or_default();
        let Some(verifier) = self.verifiers.get(&kid) else {
            return Err(denied(format!("is signed with an unknown key `{kid}`")));
        };
        let mut validation = Validation::new(verifier.algorithm);
        validation.leeway = LEEWAY_SECS;
        validation.validate_aud = false;
        validation.set_required_spec_claims(&["exp"]);
        let claims = jsonwebtoken::decode::<Claims>(token, &verifier.key, &validation)
            .map_err(|error| denied(format!("has a signature that does not verify ({error})")))?
            .claims;
        if claims.rid != request.request_id || claims.op != request.operation_id {
            return Err(denied(format!(
                "is signed for another request (`{}` to `{}`)",
                claims.rid, claims.op
            )));
        }
        if claims.idn != *identity {
            return Err(denied(
                "differs from the identity that was signed".to_owned(),
            ));
        }
        Ok(())
    }
}
