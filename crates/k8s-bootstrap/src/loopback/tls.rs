//! The double's self-made CA and serving certificate (rcgen), and its rustls configuration.

use std::sync::Arc;

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
    KeyUsagePurpose,
};
use rustls::ServerConfig;
use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};

use super::Error;

/// The CA (PEM) and the server's TLS configuration.
pub(crate) struct Pki {
    pub(crate) ca_pem: String,
    pub(crate) config: Arc<ServerConfig>,
}

/// A fresh CA and a serving certificate for `127.0.0.1` and `localhost` it signed.
pub(crate) fn generate() -> Result<Pki, Error> {
    let ca_key = new_key()?;
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).map_err(Error::Certificate)?;
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "loopback API server CA (a test double)");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca = ca_params.self_signed(&ca_key).map_err(Error::Certificate)?;

    let key = new_key()?;
    let mut params = CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()])
        .map_err(Error::Certificate)?;
    params
        .distinguished_name
        .push(DnType::CommonName, "kube-apiserver (loopback test double)");
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let cert = params
        .signed_by(&key, &ca, &ca_key)
        .map_err(Error::Certificate)?;

    let provider = crate::tls::provider().ok_or(Error::NoCryptoProvider)?;
    let mut config = ServerConfig::builder_with_provider(Arc::new(provider))
        .with_safe_default_protocol_versions()
        .map_err(Error::TlsConfig)?
        .with_no_client_auth()
        .with_single_cert(
            vec![cert.der().clone()],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
        )
        .map_err(Error::TlsConfig)?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Pki {
        ca_pem: ca.pem(),
        config: Arc::new(config),
    })
}

/// A fresh key pair (rcgen's default algorithm, ECDSA P-256), when a crypto feature is on.
fn new_key() -> Result<KeyPair, Error> {
    #[cfg(any(feature = "ring", feature = "aws-lc-rs"))]
    {
        KeyPair::generate().map_err(Error::Certificate)
    }
    #[cfg(not(any(feature = "ring", feature = "aws-lc-rs")))]
    {
        Err(Error::NoCryptoProvider)
    }
}
