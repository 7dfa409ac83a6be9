//! TLS for the WebSocket transport, with rustls: [`ServerTls`] for the hub (its certificate
//! and key, and a CA whose client certificates it requires, for mutual TLS), [`ClientTls`]
//! for a spoke (the CA it trusts instead of the system's roots, and its own certificate).
//!
//! A spoke given TLS settings refuses a `ws://` URL before it connects, so its token never
//! crosses in clear by mistake; a hub given a certificate speaks only TLS, so a plaintext
//! spoke gets no WebSocket (and no answer to its token).

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::{ClientConfig, RootCertStore, ServerConfig};
use std::fmt;
use std::sync::Arc;

/// TLS settings that could not be used, naming the part.
#[derive(Debug, thiserror::Error)]
#[error("websocket TLS: {what}: {reason}")]
pub struct TlsError {
    what: &'static str,
    reason: String,
}

fn error(what: &'static str) -> impl FnOnce(String) -> TlsError {
    move |reason| TlsError { what, reason }
}

/// The crypto of every TLS configuration here (named, so that another provider enabled in the
/// same build changes nothing).
fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::aws_lc_rs::default_provider())
}

fn certificates(what: &'static str, pem: &[u8]) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let certificates = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| error(what)(e.to_string()))?;
    if certificates.is_empty() {
        return Err(error(what)("no certificate in the PEM text".to_owned()));
    }
    Ok(certificates)
}

fn private_key(pem: &[u8]) -> Result<PrivateKeyDer<'static>, TlsError> {
    PrivateKeyDer::from_pem_slice(pem).map_err(|e| error("the private key")(e.to_string()))
}

fn roots(what: &'static str, pem: &[u8]) -> Result<RootCertStore, TlsError> {
    let mut roots = RootCertStore::empty();
    for certificate in certificates(what, pem)? {
        roots
            .add(certificate)
            .map_err(|e| error(what)(e.to_string()))?;
    }
    Ok(roots)
}

/// The hub's TLS: its certificate chain and key, and optionally the CA whose client
/// certificates it requires (mutual TLS). Give it to
/// [`HubOptions::with_tls`](super::HubOptions::with_tls).
#[derive(Clone)]
pub struct ServerTls {
    pub(super) config: Arc<ServerConfig>,
}

impl fmt::Debug for ServerTls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ServerTls")
    }
}

impl ServerTls {
    /// Serves `cert_chain_pem` (the hub's certificate first) with its private key `key_pem`;
    /// with `client_ca_pem`, a spoke must present a certificate that CA signed.
    pub fn from_pem(
        cert_chain_pem: &[u8],
        key_pem: &[u8],
        client_ca_pem: Option<&[u8]>,
    ) -> Result<Self, TlsError> {
        let chain = certificates("the hub's certificate chain", cert_chain_pem)?;
        let key = private_key(key_pem)?;
        let builder = ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| error("the protocol versions")(e.to_string()))?;
        let builder = match client_ca_pem {
            Some(pem) => {
                let roots = Arc::new(roots("the client CA", pem)?);
                let verifier =
                    rustls::server::WebPkiClientVerifier::builder_with_provider(roots, provider())
                        .build()
                        .map_err(|e| error("the client CA")(e.to_string()))?;
                builder.with_client_cert_verifier(verifier)
            }
            None => builder.with_no_client_auth(),
        };
        let config = builder
            .with_single_cert(chain, key)
            .map_err(|e| error("the hub's certificate and key")(e.to_string()))?;
        Ok(Self {
            config: Arc::new(config),
        })
    }
}

/// A spoke's TLS for `wss://` URLs: the CA it trusts (the system's roots unless given) and
/// optionally its own certificate and key (for a hub that requires them). Give it to
/// [`SpokeOptions::with_tls`](super::SpokeOptions::with_tls).
#[derive(Clone)]
pub struct ClientTls {
    pub(super) config: Arc<ClientConfig>,
}

impl fmt::Debug for ClientTls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ClientTls")
    }
}

impl ClientTls {
    /// Trusts `ca_pem` (the system's roots when `None`) and presents `client` (certificate
    /// chain and private key, PEM) when given.
    pub fn from_pem(
        ca_pem: Option<&[u8]>,
        client: Option<(&[u8], &[u8])>,
    ) -> Result<Self, TlsError> {
        let roots = match ca_pem {
            Some(pem) => roots("the CA", pem)?,
            None => system_roots()?,
        };
        let builder = ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| error("the protocol versions")(e.to_string()))?
            .with_root_certificates(roots);
        let config = match client {
            Some((chain, key)) => builder
                .with_client_auth_cert(
                    certificates("the spoke's certificate chain", chain)?,
                    private_key(key)?,
                )
                .map_err(|e| error("the spoke's certificate and key")(e.to_string()))?,
            None => builder.with_no_client_auth(),
        };
        Ok(Self {
            config: Arc::new(config),
        })
    }

    /// The system's roots, no client certificate: what a `wss://` URL uses without settings.
    pub fn system() -> Result<Self, TlsError> {
        Self::from_pem(None, None)
    }
}

/// How a spoke connects to a hub URL of `scheme` with `tls`: rustls for `wss` (the system's
/// roots without settings); plain for `ws` without settings; an error naming the refusal for
/// TLS settings with a plaintext URL (the token would cross in clear).
pub(super) fn connector(
    scheme: Option<&str>,
    tls: Option<&ClientTls>,
) -> Result<tokio_tungstenite::Connector, String> {
    use tokio_tungstenite::Connector;
    match (scheme, tls) {
        (Some("wss"), Some(tls)) => Ok(Connector::Rustls(tls.config.clone())),
        (Some("wss"), None) => ClientTls::system()
            .map(|tls| Connector::Rustls(tls.config))
            .map_err(|error| error.to_string()),
        (_, Some(_)) => Err(
            "the spoke has TLS settings but the hub URL is not wss://: refusing to send the token in clear"
                .to_owned(),
        ),
        (_, None) => Ok(Connector::Plain),
    }
}

fn system_roots() -> Result<RootCertStore, TlsError> {
    let found = rustls_native_certs::load_native_certs();
    let mut roots = RootCertStore::empty();
    let (added, _ignored) = roots.add_parsable_certificates(found.certs);
    if added == 0 {
        return Err(error("the system's roots")(format!(
            "none could be loaded ({} errors)",
            found.errors.len()
        )));
    }
    Ok(roots)
}
