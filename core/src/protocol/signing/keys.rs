//! [`IdentityKeys`]: the keys a caller signs with and a handler verifies with, by key id;
//! and the keys a handler signs its replies with and a caller verifies them with.

use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey};
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

/// A key that signs, with the id verifiers know it by.
pub(super) struct Signer {
    pub(super) kid: String,
    pub(super) key: EncodingKey,
    pub(super) algorithm: Algorithm,
}

/// A key that verifies, and the one algorithm it is used with.
#[derive(Clone)]
pub(super) struct Verifier {
    pub(super) key: DecodingKey,
    pub(super) algorithm: Algorithm,
}

/// The keys a caller signs identities with and a [`CallHandler`](crate::protocol::CallHandler)
/// verifies them with, and the keys a handler signs its replies with and a caller verifies
/// them with (see the [module docs](super)). Cheap to clone.
///
/// An HMAC secret ([`with_signing_secret`](Self::with_signing_secret)) serves every use:
/// whoever holds it signs requests, replies and aborts. Ed25519 keys have one use each: a
/// caller's key signs its requests and aborts (replicas hold its public key,
/// [`with_verifying_ed25519_pem`](Self::with_verifying_ed25519_pem)); a replica's reply key
/// ([`with_reply_signing_ed25519_pem`](Self::with_reply_signing_ed25519_pem)) signs its
/// replies (callers hold its public key,
/// [`with_reply_verifying_ed25519_pem`](Self::with_reply_verifying_ed25519_pem)), so a
/// replica cannot sign requests and a caller cannot sign replies.
#[derive(Clone, Default)]
pub struct IdentityKeys {
    pub(super) signer: Option<Arc<Signer>>,
    pub(super) verifiers: Arc<HashMap<String, Verifier>>,
    pub(super) reply_signer: Option<Arc<Signer>>,
    pub(super) reply_verifiers: Arc<HashMap<String, Verifier>>,
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
            .field(
                "signs_replies_with",
                &self.reply_signer.as_ref().map(|signer| &signer.kid),
            )
            .field("verifies_replies", &{
                let mut kids: Vec<&String> = self.reply_verifiers.keys().collect();
                kids.sort();
                kids
            })
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

impl IdentityKeys {
    /// No keys.
    pub fn new() -> Self {
        Self::default()
    }

    fn with_verifier(mut self, kid: &str, key: DecodingKey, algorithm: Algorithm) -> Self {
        Arc::make_mut(&mut self.verifiers).insert(kid.to_owned(), Verifier { key, algorithm });
        self
    }

    fn with_reply_verifier(mut self, kid: &str, key: DecodingKey, algorithm: Algorithm) -> Self {
        Arc::make_mut(&mut self.reply_verifiers)
            .insert(kid.to_owned(), Verifier { key, algorithm });
        self
    }

    /// Signs with the HMAC (HS256) `secret` under `kid`, and verifies with it: requests and
    /// aborts, and replies. Every holder of the secret can sign all of them: prefer Ed25519
    /// when replicas should only verify.
    #[must_use]
    pub fn with_signing_secret(mut self, kid: &str, secret: &[u8]) -> Self {
        let signer = Arc::new(Signer {
            kid: kid.to_owned(),
            key: EncodingKey::from_secret(secret),
            algorithm: Algorithm::HS256,
        });
        self.signer = Some(signer.clone());
        self.reply_signer = Some(signer);
        self.with_verifying_secret(kid, secret)
    }

    /// Verifies tokens signed with the HMAC (HS256) `secret` under `kid` (another key kept
    /// during a rotation, say): requests, aborts and replies.
    #[must_use]
    pub fn with_verifying_secret(self, kid: &str, secret: &[u8]) -> Self {
        self.with_verifier(kid, DecodingKey::from_secret(secret), Algorithm::HS256)
            .with_reply_verifier(kid, DecodingKey::from_secret(secret), Algorithm::HS256)
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

    /// Signs a handler's replies with an Ed25519 private key (PKCS#8 PEM) under `kid`, and
    /// verifies replies with its public key (SPKI PEM): a replica's reply key.
    pub fn with_reply_signing_ed25519_pem(
        mut self,
        kid: &str,
        private_pem: &[u8],
        public_pem: &[u8],
    ) -> Result<Self, IdentityKeyError> {
        let key = EncodingKey::from_ed_pem(private_pem).map_err(|error| IdentityKeyError {
            kid: kid.to_owned(),
            reason: error.to_string(),
        })?;
        self.reply_signer = Some(Arc::new(Signer {
            kid: kid.to_owned(),
            key,
            algorithm: Algorithm::EdDSA,
        }));
        self.with_reply_verifying_ed25519_pem(kid, public_pem)
    }

    /// Verifies replies signed by the Ed25519 key whose public key (SPKI PEM) is
    /// `public_pem`, under `kid`: what a caller holds of a replica's reply key. A caller with
    /// any reply key takes only signed replies.
    pub fn with_reply_verifying_ed25519_pem(
        self,
        kid: &str,
        public_pem: &[u8],
    ) -> Result<Self, IdentityKeyError> {
        let key = DecodingKey::from_ed_pem(public_pem).map_err(|error| IdentityKeyError {
            kid: kid.to_owned(),
            reason: error.to_string(),
        })?;
        Ok(self.with_reply_verifier(kid, key, Algorithm::EdDSA))
    }

    /// Whether these keys can sign.
    pub fn can_sign(&self) -> bool {
        self.signer.is_some()
    }

    /// Whether these keys can verify anything.
    pub fn can_verify(&self) -> bool {
        !self.verifiers.is_empty()
    }
}
