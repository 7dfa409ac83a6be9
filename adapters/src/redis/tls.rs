//! [`RedisTls`]: what a `rediss://` connection trusts and presents.

use redis::{ClientTlsConfig, TlsCertificates};
use std::fmt;

/// TLS settings for `rediss://` URLs, on one server or a cluster (see
/// [`RedisOptions::with_tls`](super::RedisOptions::with_tls)): the certificate authority to
/// trust instead of the system's roots, and a client certificate for mutual TLS (a server
/// started with `--tls-auth-clients yes` refuses clients without one).
///
/// Without `RedisTls`, a `rediss://` URL trusts the system's roots and presents no client
/// certificate.
///
/// ```
/// use opkit_adapters::redis::{RedisOptions, RedisTls};
/// # let (ca, cert, key) = (b"", b"", b"");
/// let options = RedisOptions::default().with_tls(
///     RedisTls::new()
///         .with_ca_pem(ca.to_vec())
///         .with_client_cert_pem(cert.to_vec(), key.to_vec()),
/// );
/// ```
#[derive(Clone, Default)]
pub struct RedisTls {
    ca_pem: Option<Vec<u8>>,
    client: Option<(Vec<u8>, Vec<u8>)>,
}

impl fmt::Debug for RedisTls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisTls")
            .field("custom_ca", &self.ca_pem.is_some())
            .field("client_certificate", &self.client.is_some())
            .finish()
    }
}

impl RedisTls {
    /// The system's roots, no client certificate.
    pub fn new() -> Self {
        Self::default()
    }

    /// Trusts the certificate authority (or authorities) in `pem` instead of the system's
    /// roots.
    #[must_use]
    pub fn with_ca_pem(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.ca_pem = Some(pem.into());
        self
    }

    /// Presents this certificate (chain) and its private key, both PEM: mutual TLS.
    #[must_use]
    pub fn with_client_cert_pem(
        mut self,
        cert_pem: impl Into<Vec<u8>>,
        key_pem: impl Into<Vec<u8>>,
    ) -> Self {
        self.client = Some((cert_pem.into(), key_pem.into()));
        self
    }

    /// The `redis` crate's form.
    pub(super) fn certificates(&self) -> TlsCertificates {
        TlsCertificates {
            client_tls: self
                .client
                .as_ref()
                .map(|(client_cert, client_key)| ClientTlsConfig {
                    client_cert: client_cert.clone(),
                    client_key: client_key.clone(),
                }),
            root_cert: self.ca_pem.clone(),
        }
    }
}
