//! The double's serving certificate (rcgen, signed by its CA) and its rustls configuration, which
//! asks for a client certificate, as kube-apiserver does with `--client-ca-file`.

use std::sync::Arc;

use rcgen::{CertificateParams, DnType, ExtendedKeyUsagePurpose, KeyUsagePurpose};
use rustls::client::danger::HandshakeSignatureValid;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, UnixTime};
use rustls::server::WebPkiClientVerifier;
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{
    DigitallySignedStruct, DistinguishedName, RootCertStore, ServerConfig, SignatureScheme,
};

use super::Error;
use super::ca::{Ca, new_key};

/// The server's TLS configuration, and the verifier that judges a connection's client
/// certificate once the handshake is done.
pub(crate) struct Tls {
    pub(crate) config: Arc<ServerConfig>,
    pub(crate) client_verifier: Arc<dyn ClientCertVerifier>,
    /// The serving certificate and its key, as PEM.
    pub(crate) serving: ServingIdentity,
}

/// The serving certificate (PEM), its public key (SPKI PEM) and private key (PKCS #8 PEM, a
/// secret: zeroized on drop, never shown by `Debug`).
pub(crate) struct ServingIdentity {
    pub(crate) certificate_pem: String,
    pub(crate) public_key_pem: String,
    pub(crate) private_key_pem: zeroize::Zeroizing<String>,
}

/// A serving certificate for `127.0.0.1` and `localhost` that `ca` signed, and client
/// certificates requested but not required.
///
/// kube-apiserver asks with Go's `tls.RequestClientCert`: the handshake takes any certificate
/// whose owner proves possession of its key, and the x509 authenticator verifies the chain (to
/// the client CA, extended key usage clientAuth) per request, so an untrusted certificate is an
/// authentication error (401 unless a bearer token authenticates the request), not a failed
/// handshake. The double does the same: [`RequestClientCert`] accepts the certificate in the
/// handshake (still checking the handshake signature), and the accept loop verifies it with
/// rustls's `WebPkiClientVerifier` against `ca` before it names a user.
pub(crate) fn server_config(ca: &Ca) -> Result<Tls, Error> {
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
    let cert = ca.sign(params, &key)?;

    let provider = Arc::new(crate::crypto::provider().ok_or(Error::NoCryptoProvider)?);
    let mut roots = RootCertStore::empty();
    roots.add(ca.der().clone()).map_err(Error::TlsConfig)?;
    let client_verifier =
        WebPkiClientVerifier::builder_with_provider(Arc::new(roots), Arc::clone(&provider))
            .allow_unauthenticated()
            .build()
            .map_err(Error::ClientVerifier)?;
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(Error::TlsConfig)?
        .with_client_cert_verifier(Arc::new(RequestClientCert {
            verifier: Arc::clone(&client_verifier),
        }))
        .with_single_cert(
            vec![cert.der().clone()],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
        )
        .map_err(Error::TlsConfig)?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let serving = ServingIdentity {
        certificate_pem: cert.pem(),
        public_key_pem: key.public_key_pem(),
        private_key_pem: zeroize::Zeroizing::new(key.serialize_pem()),
    };
    Ok(Tls {
        config: Arc::new(config),
        client_verifier,
        serving,
    })
}

/// Go's `tls.RequestClientCert` as a rustls verifier: it asks for a certificate (naming the CA,
/// as Go names its client CAs), does not require one, and accepts the one it gets; the
/// handshake signature is still checked with `verifier`'s algorithms. Whether the certificate
/// is trusted is decided after the handshake, with `verifier` (see [`server_config`]); nothing
/// may take a certificate this accepted as authenticated before that.
#[derive(Debug)]
struct RequestClientCert {
    verifier: Arc<dyn ClientCertVerifier>,
}

impl ClientCertVerifier for RequestClientCert {
    fn offer_client_auth(&self) -> bool {
        true
    }

    fn client_auth_mandatory(&self) -> bool {
        false
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        self.verifier.root_hint_subjects()
    }

    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        Ok(ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.verifier.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.verifier.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.verifier.supported_verify_schemes()
    }
}
