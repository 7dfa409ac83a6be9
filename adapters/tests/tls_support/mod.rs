//! The `*_tls` tests' certificates, made at test time with `rcgen`: a certificate authority,
//! a server certificate for `localhost` and `127.0.0.1` and a client certificate it signed,
//! and a second, unrelated authority (what a client that trusts the wrong CA has). Written as
//! PEM files into a directory of their own (the test kit's `TempDir`), removed when dropped.
#![allow(dead_code, missing_docs)]

use opkit_testkit::dir::TempDir;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    SanType,
};
use std::path::{Path, PathBuf};

/// PEM texts, and the files they were written to.
pub struct Pki {
    pub ca_pem: String,
    pub server_cert_pem: String,
    pub server_key_pem: String,
    pub client_cert_pem: String,
    pub client_key_pem: String,
    /// An authority that signed none of these.
    pub other_ca_pem: String,
    dir: TempDir,
}

impl Pki {
    /// Makes the certificates and writes them into a fresh directory under the system's
    /// temporary directory.
    pub fn new() -> Self {
        let ca_key = KeyPair::generate().unwrap();
        let ca_params = authority("opkit test CA");
        let ca_cert = ca_params.self_signed(&ca_key).unwrap();
        let issuer = Issuer::new(ca_params, ca_key);

        let mut server = CertificateParams::new(vec!["localhost".to_owned()]).unwrap();
        server
            .subject_alt_names
            .push(SanType::IpAddress([127, 0, 0, 1].into()));
        server
            .distinguished_name
            .push(DnType::CommonName, "localhost");
        // Client auth too: cluster nodes present it to each other on their TLS bus.
        server.extended_key_usages = vec![
            ExtendedKeyUsagePurpose::ServerAuth,
            ExtendedKeyUsagePurpose::ClientAuth,
        ];
        let server_key = KeyPair::generate().unwrap();
        let server_cert = server.signed_by(&server_key, &issuer).unwrap();

        let mut client = CertificateParams::new(Vec::<String>::new()).unwrap();
        client
            .distinguished_name
            .push(DnType::CommonName, "opkit test client");
        client.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        let client_key = KeyPair::generate().unwrap();
        let client_cert = client.signed_by(&client_key, &issuer).unwrap();

        let other_key = KeyPair::generate().unwrap();
        let other_ca = authority("another CA").self_signed(&other_key).unwrap();

        let dir = TempDir::new("pki");
        let pki = Self {
            ca_pem: ca_cert.pem(),
            server_cert_pem: server_cert.pem(),
            server_key_pem: server_key.serialize_pem(),
            client_cert_pem: client_cert.pem(),
            client_key_pem: client_key.serialize_pem(),
            other_ca_pem: other_ca.pem(),
            dir,
        };
        for (name, text) in [
            ("ca.pem", &pki.ca_pem),
            ("server.pem", &pki.server_cert_pem),
            ("server.key", &pki.server_key_pem),
        ] {
            std::fs::write(pki.dir.join(name), text).unwrap();
        }
        pki
    }

    /// The path of `ca.pem`, `server.pem` or `server.key`.
    pub fn file(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

fn authority(name: &str) -> CertificateParams {
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, name);
    params
}
