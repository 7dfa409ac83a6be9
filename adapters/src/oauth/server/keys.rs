//! The issuer's signing keys (its JWKS): fetched on first use, kept for a while, fetched again
//! when a token names a key the cached set lacks — at most once per refresh interval, so a
//! stream of tokens with made-up `kid`s cannot make the server hammer the issuer.

use crate::oauth::discovery::{Discovery, discover};
use crate::oauth::error::{FetchError, TokenError};
use crate::oauth::fetch::Fetcher;
use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, KeyAlgorithm, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey};
use parking_lot::RwLock;
use serde_json::Value;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The most keys read from one key set (real sets hold two or three).
const MAX_KEYS: usize = 64;

/// One usable signing key.
struct Key {
    kid: Option<String>,
    /// The key's own `alg`, when it declares one.
    alg: Option<Algorithm>,
    /// The curve of an EC key.
    curve: Option<EllipticCurve>,
    decoding: DecodingKey,
}

impl Key {
    fn from_jwk(jwk: &Jwk) -> Option<Self> {
        if matches!(
            jwk.common.public_key_use,
            Some(PublicKeyUse::Encryption | PublicKeyUse::Other(_))
        ) {
            return None;
        }
        let alg = match jwk.common.key_algorithm {
            None => None,
            Some(KeyAlgorithm::UNKNOWN_ALGORITHM) => return None,
            Some(declared) => Some(Algorithm::try_from(declared).ok()?),
        };
        let curve = match &jwk.algorithm {
            AlgorithmParameters::EllipticCurve(params) => Some(params.curve.clone()),
            AlgorithmParameters::RSA(_) | AlgorithmParameters::OctetKeyPair(_) => None,
            // Symmetric keys have no place in a public key set: never used.
            _ => return None,
        };
        Some(Self {
            kid: jwk.common.key_id.clone(),
            alg,
            curve,
            decoding: DecodingKey::from_jwk(jwk).ok()?,
        })
    }

    /// Whether this key can verify a signature made with `alg`.
    fn fits(&self, alg: Algorithm) -> bool {
        if self.alg.is_some_and(|own| own != alg) {
            return false;
        }
        if !alg.family().algorithms().contains(&alg) || self.decoding.family() != alg.family() {
            return false;
        }
        match (&self.curve, alg) {
            (Some(curve), Algorithm::ES256) => *curve == EllipticCurve::P256,
            (Some(curve), Algorithm::ES384) => *curve == EllipticCurve::P384,
            _ => true,
        }
    }
}

/// The keys of one fetched key set.
#[derive(Default)]
struct Keys(Vec<Key>);

impl Keys {
    fn parse(url: &str, document: &Value) -> Result<Self, FetchError> {
        let Some(list) = document.get("keys").and_then(Value::as_array) else {
            return Err(FetchError::InvalidDocument {
                url: url.to_owned(),
                reason: "no `keys` array".to_owned(),
            });
        };
        let keys = list
            .iter()
            .take(MAX_KEYS)
            .filter_map(|entry| {
                let key = serde_json::from_value::<Jwk>(entry.clone())
                    .ok()
                    .and_then(|jwk| Key::from_jwk(&jwk));
                if key.is_none() {
                    tracing::debug!(url, kid = ?entry.get("kid"), "oauth: skipped a key that cannot verify signatures");
                }
                key
            })
            .collect();
        Ok(Self(keys))
    }

    /// The key for a token's `kid` and `alg`: `Ok(None)` when no key has that `kid`.
    fn find(&self, kid: Option<&str>, alg: Algorithm) -> Result<Option<DecodingKey>, TokenError> {
        match kid {
            Some(kid) => {
                let Some(key) = self.0.iter().find(|key| key.kid.as_deref() == Some(kid)) else {
                    return Ok(None);
                };
                if key.fits(alg) {
                    Ok(Some(key.decoding.clone()))
                } else {
                    Err(TokenError::KeyMismatch {
                        kid: kid.to_owned(),
                        alg: format!("{alg:?}"),
                    })
                }
            }
            None => {
                let mut fitting = self.0.iter().filter(|key| key.fits(alg));
                match (fitting.next(), fitting.next()) {
                    (Some(key), None) => Ok(Some(key.decoding.clone())),
                    (Some(_), Some(_)) => Err(TokenError::NoKeyId),
                    (None, _) => Ok(None),
                }
            }
        }
    }
}

/// Where the key set is.
#[derive(Debug, Clone)]
pub(crate) enum KeySource {
    /// A `jwks_uri` given in the configuration.
    Uri(String),
    /// The `jwks_uri` of the issuer's discovery document.
    Discover {
        issuer: String,
        discovery: Discovery,
    },
}

/// How often keys are fetched.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RefreshPolicy {
    /// Cached keys older than this are fetched again before use.
    pub(crate) max_age: Duration,
    /// Two fetches are at least this far apart (an unknown `kid` waits for the next window).
    pub(crate) min_interval: Duration,
}

struct FetchState {
    /// The key set's URL, once known.
    jwks_uri: Option<String>,
    /// When the last fetch was tried.
    last_attempt: Option<Instant>,
}

/// The cached key set of one issuer.
pub(crate) struct KeyCache {
    source: KeySource,
    fetcher: Fetcher,
    policy: RefreshPolicy,
    /// The current keys and when they were fetched (read without waiting for a fetch).
    current: RwLock<Option<(Arc<Keys>, Instant)>>,
    /// Held while fetching: one fetch at a time.
    fetching: tokio::sync::Mutex<FetchState>,
}

impl KeyCache {
    pub(crate) fn new(source: KeySource, fetcher: Fetcher, policy: RefreshPolicy) -> Self {
        let jwks_uri = match &source {
            KeySource::Uri(uri) => Some(uri.clone()),
            KeySource::Discover { .. } => None,
        };
        Self {
            source,
            fetcher,
            policy,
            current: RwLock::new(None),
            fetching: tokio::sync::Mutex::new(FetchState {
                jwks_uri,
                last_attempt: None,
            }),
        }
    }

    /// The key that verifies a token with `kid` and `alg`.
    pub(crate) async fn key(
        &self,
        kid: Option<&str>,
        alg: Algorithm,
    ) -> Result<DecodingKey, TokenError> {
        let snapshot = self.current.read().clone();
        if let Some((keys, fetched_at)) = &snapshot
            && fetched_at.elapsed() < self.policy.max_age
            && let Some(key) = keys.find(kid, alg)?
        {
            return Ok(key);
        }
        // Unknown kid, stale or no keys: fetch (unless rate-limited), then look again.
        let fetched = self.refresh(snapshot.as_ref().map(|(_, at)| *at)).await;
        let current = self.current.read().clone();
        let Some((keys, _)) = current else {
            return Err(TokenError::KeysUnavailable(fetched.err().unwrap_or(
                FetchError::RateLimited {
                    min_interval_ms: millis(self.policy.min_interval),
                },
            )));
        };
        if let Err(error) = &fetched {
            tracing::warn!(%error, "oauth: the issuer's key set could not be refreshed; using the cached keys");
        }
        keys.find(kid, alg)?
            .ok_or_else(|| TokenError::UnknownKey(kid.unwrap_or_default().to_owned()))
    }

    /// Fetches the key set unless another task did since `seen` (the fetch time the caller
    /// saw) or the last attempt is more recent than the minimum interval.
    async fn refresh(&self, seen: Option<Instant>) -> Result<(), FetchError> {
        let mut state = self.fetching.lock().await;
        let now_current = self.current.read().as_ref().map(|(_, at)| *at);
        if now_current != seen {
            return Ok(()); // another task fetched meanwhile
        }
        if let Some(last) = state.last_attempt
            && last.elapsed() < self.policy.min_interval
        {
            return Err(FetchError::RateLimited {
                min_interval_ms: millis(self.policy.min_interval),
            });
        }
        state.last_attempt = Some(Instant::now());
        let uri = match (&state.jwks_uri, &self.source) {
            (Some(uri), _) | (None, KeySource::Uri(uri)) => uri.clone(),
            (None, KeySource::Discover { issuer, discovery }) => {
                let metadata = discover(&self.fetcher, issuer, *discovery).await?;
                let uri = metadata
                    .jwks_uri
                    .ok_or_else(|| FetchError::MissingEndpoint {
                        issuer: issuer.clone(),
                        field: "jwks_uri",
                    })?;
                state.jwks_uri = Some(uri.clone());
                uri
            }
        };
        let document = self
            .fetcher
            .get_json(&uri)
            .await?
            .ok_or_else(|| FetchError::Status {
                url: uri.clone(),
                status: 404,
            })?;
        let keys = Keys::parse(&uri, &document)?;
        tracing::debug!(url = %uri, keys = keys.0.len(), "oauth: fetched the issuer's key set");
        *self.current.write() = Some((Arc::new(keys), Instant::now()));
        Ok(())
    }
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}
