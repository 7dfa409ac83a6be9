//! DPoP (RFC 9449): proof that the client holding an access token is the one it was issued
//! to. A [`DpopKey`] is a P-256 key made for one sign-in; each request to the token endpoint
//! and to the resource carries a fresh proof (a JWT it signs, naming the method, the URL and,
//! at the resource, the token's hash), and the server may ask for its nonce to be in the
//! next proof ([`Nonces`]).

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use parking_lot::Mutex;
use serde_json::{Value, json};
use std::collections::HashMap;

/// The proof's `typ`.
const PROOF_TYPE: &str = "dpop+jwt";

/// The `error` of a server that wants its nonce in the proof (RFC 9449 §8, §9).
pub(crate) const USE_NONCE: &str = "use_dpop_nonce";

/// The response header carrying a server's nonce.
pub(crate) const NONCE_HEADER: &str = "dpop-nonce";

/// The request header carrying a proof.
pub(crate) const PROOF_HEADER: &str = "dpop";

/// A DPoP key: ES256, its public half sent in each proof's header.
pub(crate) struct DpopKey {
    pair: EcdsaKeyPair,
    jwk: Value,
    random: SystemRandom,
}

impl std::fmt::Debug for DpopKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DpopKey")
            .field("jwk", &self.jwk)
            .finish_non_exhaustive()
    }
}

impl DpopKey {
    /// A new key.
    pub(crate) fn generate() -> Result<Self, String> {
        let pair = EcdsaKeyPair::generate(&ECDSA_P256_SHA256_FIXED_SIGNING)
            .map_err(|_| "a DPoP key could not be made".to_owned())?;
        // The public key is the uncompressed point: 0x04, then x and y (32 bytes each).
        let point = pair.public_key().as_ref();
        if point.len() != 65 || point[0] != 4 {
            return Err(
                "the DPoP key's public point is not an uncompressed P-256 point".to_owned(),
            );
        }
        let jwk = json!({
            "kty": "EC",
            "crv": "P-256",
            "x": URL_SAFE_NO_PAD.encode(&point[1..33]),
            "y": URL_SAFE_NO_PAD.encode(&point[33..65]),
        });
        Ok(Self {
            pair,
            jwk,
            random: SystemRandom::new(),
        })
    }

    /// A proof for `method` on `url` (its query and fragment left out, RFC 9449 §4.2), with
    /// the hash of `access_token` at a resource and the server's `nonce` when it gave one.
    pub(crate) fn proof(
        &self,
        method: &str,
        url: &str,
        access_token: Option<&str>,
        nonce: Option<&str>,
    ) -> Result<String, String> {
        let header = json!({"typ": PROOF_TYPE, "alg": "ES256", "jwk": self.jwk});
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| since.as_secs());
        let jti = super::credentials::rand_jti()
            .ok_or_else(|| "the operating system gave no randomness for a DPoP proof".to_owned())?;
        let mut claims = json!({
            "jti": format!("{jti:032x}"),
            "htm": method,
            "htu": target_uri(url),
            "iat": now,
        });
        if let Some(token) = access_token {
            let hash = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, token.as_bytes());
            claims["ath"] = json!(URL_SAFE_NO_PAD.encode(hash.as_ref()));
        }
        if let Some(nonce) = nonce {
            claims["nonce"] = json!(nonce);
        }
        let signing_input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let signature = self
            .pair
            .sign(&self.random, signing_input.as_bytes())
            .map_err(|_| "the DPoP proof could not be signed".to_owned())?;
        Ok(format!(
            "{signing_input}.{}",
            URL_SAFE_NO_PAD.encode(signature.as_ref())
        ))
    }
}

/// `url` without its query and fragment.
fn target_uri(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut parsed) => {
            parsed.set_query(None);
            parsed.set_fragment(None);
            parsed.to_string()
        }
        Err(_) => url.to_owned(),
    }
}

/// The nonces servers gave, by origin (scheme, host and port): the next proof to that server
/// carries its latest one.
#[derive(Debug, Default)]
pub(crate) struct Nonces(Mutex<HashMap<String, String>>);

impl Nonces {
    /// The nonce `url`'s server gave last.
    pub(crate) fn for_url(&self, url: &str) -> Option<String> {
        self.0.lock().get(&origin(url)).cloned()
    }

    /// Keeps the nonce `url`'s server gave.
    pub(crate) fn remember(&self, url: &str, nonce: &str) {
        self.0.lock().insert(origin(url), nonce.to_owned());
    }
}

fn origin(url: &str) -> String {
    url::Url::parse(url).map_or_else(
        |_| url.to_owned(),
        |parsed| parsed.origin().ascii_serialization(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(token: &str, index: usize) -> Value {
        let segment = token.split('.').nth(index).unwrap();
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(segment).unwrap()).unwrap()
    }

    #[test]
    fn a_proof_names_the_request_and_verifies_with_its_key() {
        let key = DpopKey::generate().unwrap();
        let proof = key
            .proof(
                "POST",
                "https://mcp.example/mcp?x=1#f",
                Some("token"),
                Some("n-1"),
            )
            .unwrap();
        let header = part(&proof, 0);
        assert_eq!(header["typ"], "dpop+jwt");
        assert_eq!(header["jwk"]["crv"], "P-256");
        assert!(header["jwk"].get("d").is_none(), "no private part");
        let claims = part(&proof, 1);
        assert_eq!(claims["htm"], "POST");
        assert_eq!(claims["htu"], "https://mcp.example/mcp");
        assert_eq!(claims["nonce"], "n-1");
        assert_eq!(claims["ath"], "PEaenWxYddN6Q_NT1PiOYfz4EsZu7jRXRlpAsNpBU-A");
        let again = key
            .proof("POST", "https://mcp.example/mcp", None, None)
            .unwrap();
        assert_ne!(
            part(&again, 1)["jti"],
            claims["jti"],
            "a fresh jti each time"
        );
        // The signature checks out against the public key in the header.
        let point = [
            &[4u8][..],
            &URL_SAFE_NO_PAD
                .decode(header["jwk"]["x"].as_str().unwrap())
                .unwrap(),
            &URL_SAFE_NO_PAD
                .decode(header["jwk"]["y"].as_str().unwrap())
                .unwrap(),
        ]
        .concat();
        let (input, signature) = proof.rsplit_once('.').unwrap();
        aws_lc_rs::signature::UnparsedPublicKey::new(
            &aws_lc_rs::signature::ECDSA_P256_SHA256_FIXED,
            point,
        )
        .verify(
            input.as_bytes(),
            &URL_SAFE_NO_PAD.decode(signature).unwrap(),
        )
        .expect("the proof verifies");
    }

    #[test]
    fn nonces_are_kept_per_origin() {
        let nonces = Nonces::default();
        nonces.remember("http://127.0.0.1:4000/token", "a");
        assert_eq!(
            nonces.for_url("http://127.0.0.1:4000/other").as_deref(),
            Some("a")
        );
        assert_eq!(nonces.for_url("http://127.0.0.1:4001/token"), None);
    }
}
