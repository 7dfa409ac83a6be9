//! [`IdentityKeys`]: the keys a caller signs with and a handler verifies with, by key id.

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
/// verifies them with (see the [module docs](super)). Cheap to clone.
#[derive(Clone, Default)]
pub struct IdentityKeys {
    pub(super) signer: Option<Arc<Signer>>,
    pub(super) verifiers: Arc<HashMap<String, Verifier>>,
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

    /// Whether these keys can verify anything.
    pub fn can_verify(&self) -> bool {
        !self.verifiers.is_empty()
    }
}
