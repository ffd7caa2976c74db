//! Accepting the issued node client certificate, and when to rotate it.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use der::asn1::ObjectIdentifier;
use der::{Decode as _, Encode as _};
use rustls_pki_types::{CertificateDer, UnixTime};
use x509_cert::Certificate;
use x509_cert::ext::pkix::{ExtendedKeyUsage, KeyUsage as X509KeyUsage, KeyUsages};
use zeroize::Zeroizing;

use crate::error::Error;
use crate::key::NodeKey;
use crate::node_name::{NODES_GROUP, NodeName};
use crate::pem;

/// The largest `status.certificate` accepted, in bytes.
pub const MAX_CERTIFICATE_PEM_BYTES: usize = 64 * 1024;
/// The most certificates `status.certificate` may hold (the node's, then intermediates).
pub const MAX_CHAIN_CERTIFICATES: usize = 4;
/// The largest CA bundle accepted, in bytes.
pub const MAX_CA_BUNDLE_BYTES: usize = 1024 * 1024;
/// The most certificates a CA bundle may hold.
pub const MAX_CA_CERTIFICATES: usize = 64;

const OID_KEY_USAGE: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.5.29.15");
const OID_EXT_KEY_USAGE: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.5.29.37");
const OID_CLIENT_AUTH: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.6.1.5.5.7.3.2");

/// A node client certificate that passed [`accept_certificate`].
#[derive(Clone, PartialEq, Eq)]
pub struct IssuedCertificate {
    chain_der: Vec<Vec<u8>>,
    node: NodeName,
    not_before: SystemTime,
    not_after: SystemTime,
}

/// Checks the certificate the signer issued (`status.certificate`) before the node uses it:
///
/// 1. one to [`MAX_CHAIN_CERTIFICATES`] `CERTIFICATE` PEM blocks without headers, as
///    Kubernetes validates `status.certificate`: text before, between and after the blocks is
///    skipped (RFC 7468's explanatory text, as Go's `pem.Decode` and so client-go's
///    certificate store skip it), a block of another type is refused; the first is the
///    node's, the others may be intermediates;
/// 2. its public key is `key`'s;
/// 3. its subject is exactly `O=system:nodes, CN=system:node:<node>`;
/// 4. it allows `digital signature` and `client auth`;
/// 5. `now` is within its validity;
/// 6. it chains to a certificate of `ca_pem` (the cluster CA from discovery), checked by
///    rustls-webpki for client authentication at `now`, as the API server will check it.
///
/// # Errors
///
/// [`Error::TooLarge`], [`Error::Pem`], [`Error::InvalidCertificate`], [`Error::WrongKey`],
/// [`Error::WrongSubject`], [`Error::WrongUsages`], [`Error::NotYetValid`],
/// [`Error::Expired`], [`Error::Untrusted`], [`Error::NoCryptoBackend`].
pub fn accept_certificate(
    certificate_pem: &[u8],
    ca_pem: &[u8],
    key: &NodeKey,
    node: &NodeName,
    now: SystemTime,
) -> Result<IssuedCertificate, Error> {
    // Cheapest first: sizes, the chain's PEM and the leaf's DER, then the CA bundle; the
    // signatures last.
    if ca_pem.len() > MAX_CA_BUNDLE_BYTES {
        return Err(Error::TooLarge {
            what: "CA bundle",
            len: ca_pem.len(),
            max: MAX_CA_BUNDLE_BYTES,
        });
    }
    let chain = issued_certificates(certificate_pem)?;
    let Some(leaf_der) = chain.first() else {
        return Err(Error::InvalidCertificate {
            reason: "no certificate",
        });
    };
    let leaf = Certificate::from_der(leaf_der).map_err(|_| Error::InvalidCertificate {
        reason: "not a DER X.509 certificate",
    })?;
    let cas = certificates(
        ca_pem,
        "CA bundle",
        MAX_CA_BUNDLE_BYTES,
        MAX_CA_CERTIFICATES,
    )?;
    let tbs = &leaf.tbs_certificate;

    let spki = tbs
        .subject_public_key_info
        .to_der()
        .map_err(|_| Error::InvalidCertificate {
            reason: "couldn't encode the public key",
        })?;
    if spki != key.public_key_der() {
        return Err(Error::WrongKey);
    }

    let (cn, orgs) = crate::request::subject_fields(&tbs.subject, crate::name::NonString::Refuse)
        .map_err(|_| Error::InvalidCertificate {
        reason: "a subject attribute is not a string",
    })?;
    if cn.as_deref() != Some(node.user_name().as_str()) || orgs != [NODES_GROUP] {
        return Err(Error::WrongSubject);
    }

    let mut digital_signature = false;
    let mut client_auth = false;
    for ext in tbs.extensions.iter().flatten() {
        if ext.extn_id == OID_KEY_USAGE {
            let ku = X509KeyUsage::from_der(ext.extn_value.as_bytes()).map_err(|_| {
                Error::InvalidCertificate {
                    reason: "malformed key usage",
                }
            })?;
            digital_signature = ku.0.contains(KeyUsages::DigitalSignature);
        } else if ext.extn_id == OID_EXT_KEY_USAGE {
            let eku = ExtendedKeyUsage::from_der(ext.extn_value.as_bytes()).map_err(|_| {
                Error::InvalidCertificate {
                    reason: "malformed extended key usage",
                }
            })?;
            client_auth = eku.0.contains(&OID_CLIENT_AUTH);
        }
    }
    if !digital_signature || !client_auth {
        return Err(Error::WrongUsages);
    }

    let not_before = tbs.validity.not_before.to_system_time();
    let not_after = tbs.validity.not_after.to_system_time();
    if now < not_before {
        return Err(Error::NotYetValid);
    }
    if now > not_after {
        return Err(Error::Expired);
    }

    verify_chain(&chain, &cas, now)?;
    Ok(IssuedCertificate {
        chain_der: chain,
        node: node.clone(),
        not_before,
        not_after,
    })
}

impl IssuedCertificate {
    /// The node this certificate authenticates.
    pub fn node(&self) -> &NodeName {
        &self.node
    }

    /// `notBefore`.
    pub fn not_before(&self) -> SystemTime {
        self.not_before
    }

    /// `notAfter`.
    pub fn not_after(&self) -> SystemTime {
        self.not_after
    }

    /// The node's certificate, DER.
    pub fn leaf_der(&self) -> &[u8] {
        self.chain_der.first().map_or(&[], Vec::as_slice)
    }

    /// The certificates as `CERTIFICATE` PEM blocks, the node's first.
    pub fn to_pem(&self) -> String {
        self.chain_der
            .iter()
            .map(|d| pem::encode("CERTIFICATE", d))
            .collect()
    }

    /// What the kubelet keeps in `kubelet-client-current.pem`: the certificates, then the
    /// key (`EC PRIVATE KEY`). Write it with mode 0600.
    ///
    /// # Errors
    ///
    /// Those of [`NodeKey::to_pem`].
    pub fn to_kubelet_pem(&self, key: &NodeKey) -> Result<Zeroizing<String>, Error> {
        let certs = self.to_pem();
        let key_pem = key.to_pem()?;
        let mut out = Zeroizing::new(String::with_capacity(
            certs.len().saturating_add(key_pem.len()),
        ));
        out.push_str(&certs);
        out.push_str(&key_pem);
        Ok(out)
    }

    /// When the kubelet would rotate this certificate: `notBefore` plus 70 % to 90 % of its
    /// lifetime, `jitter` (a uniform draw from `[0, 1)`, supplied by the caller) choosing
    /// where. Values outside `[0, 1)` (and NaN) are clamped.
    pub fn rotation_deadline(&self, jitter: f64) -> SystemTime {
        rotation_deadline(self.not_before, self.not_after, jitter)
    }

    /// Whether the certificate should be replaced at `now`: its rotation deadline (for
    /// `jitter`) has passed.
    pub fn needs_rotation(&self, now: SystemTime, jitter: f64) -> bool {
        now >= self.rotation_deadline(jitter)
    }
}

impl std::fmt::Debug for IssuedCertificate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IssuedCertificate")
            .field("node", &self.node)
            .field("not_before", &crate::time::rfc3339(self.not_before))
            .field("not_after", &crate::time::rfc3339(self.not_after))
            .field("chain_len", &self.chain_der.len())
            .finish()
    }
}

/// The kubelet's rotation deadline for a certificate valid from `not_before` to `not_after`:
/// `not_before + lifetime × (0.7 + 0.2 × jitter)`, `jitter` in `[0, 1)` (clamped; NaN is 0);
/// `not_after` when it precedes `not_before`. The same as [`rotation::rotation_deadline`](crate::rotation::rotation_deadline).
#[must_use]
pub fn rotation_deadline(not_before: SystemTime, not_after: SystemTime, jitter: f64) -> SystemTime {
    crate::rotation::rotation_deadline(not_before, not_after, jitter)
}

/// The DER certificates of `status.certificate` (at most [`MAX_CERTIFICATE_PEM_BYTES`]), as
/// kube-apiserver validates it: one or more `CERTIFICATE` PEM blocks without headers, text
/// around them skipped (Go's `pem.Decode`), at most [`MAX_CHAIN_CERTIFICATES`].
pub(crate) fn issued_certificates(input: &[u8]) -> Result<Vec<Vec<u8>>, Error> {
    const WHAT: &str = "issued certificate";
    if input.len() > MAX_CERTIFICATE_PEM_BYTES {
        return Err(Error::TooLarge {
            what: WHAT,
            len: input.len(),
            max: MAX_CERTIFICATE_PEM_BYTES,
        });
    }
    let pem = |reason| Error::Pem { what: WHAT, reason };
    let blocks = pem::go_blocks(input, MAX_CHAIN_CERTIFICATES.saturating_add(1));
    if blocks.is_empty() {
        return Err(pem("must contain at least one CERTIFICATE PEM block"));
    }
    if blocks.len() > MAX_CHAIN_CERTIFICATES {
        return Err(pem("too many PEM blocks"));
    }
    blocks
        .into_iter()
        .map(|b| {
            if b.label != "CERTIFICATE" {
                Err(pem("only CERTIFICATE PEM blocks are allowed"))
            } else if b.headers {
                Err(pem("no PEM block headers are permitted"))
            } else {
                Ok(b.der)
            }
        })
        .collect()
}

fn certificates(
    input: &[u8],
    what: &'static str,
    max_bytes: usize,
    max_certs: usize,
) -> Result<Vec<Vec<u8>>, Error> {
    if input.len() > max_bytes {
        return Err(Error::TooLarge {
            what,
            len: input.len(),
            max: max_bytes,
        });
    }
    let blocks = pem::blocks(input, what, max_certs)?;
    if blocks.is_empty() {
        return Err(Error::Pem {
            what,
            reason: "must contain at least one CERTIFICATE PEM block",
        });
    }
    blocks
        .into_iter()
        .map(|b| {
            if b.label == "CERTIFICATE" {
                Ok(b.der)
            } else {
                Err(Error::Pem {
                    what,
                    reason: "only CERTIFICATE PEM blocks are allowed",
                })
            }
        })
        .collect()
}

/// The DER certificates of a CA bundle: one or more `CERTIFICATE` PEM blocks (at most
/// [`MAX_CA_CERTIFICATES`], [`MAX_CA_BUNDLE_BYTES`] in all), as a client CA file is read.
///
/// # Errors
///
/// [`Error::TooLarge`]; [`Error::Pem`] when the bundle holds no certificate, too many, or a
/// block of another type.
pub fn ca_certificates(ca_pem: &[u8]) -> Result<Vec<Vec<u8>>, Error> {
    certificates(
        ca_pem,
        "CA bundle",
        MAX_CA_BUNDLE_BYTES,
        MAX_CA_CERTIFICATES,
    )
}

/// Verifies a TLS client's certificate chain (`chain`: the client's certificate, then any
/// intermediates, DER, at most [`MAX_CHAIN_CERTIFICATES`]) against the DER CA certificates
/// `cas` (from [`ca_certificates`]) for client authentication at `now`, as the API server
/// verifies client certificates: rustls-webpki's path building with the client-auth extended
/// key usage, and a trust anchor outside its validity refused (as Go's verifier refuses it).
///
/// # Errors
///
/// [`Error::InvalidCertificate`] when there is no certificate, too many, or one rustls-webpki
/// cannot read, or no CA certificate is usable; [`Error::Untrusted`] when no valid path to a
/// CA exists at `now` for client authentication; [`Error::NoCryptoBackend`].
pub fn verify_client_chain<C: AsRef<[u8]>>(
    chain: &[C],
    cas: &[Vec<u8>],
    now: SystemTime,
) -> Result<(), Error> {
    if chain.len() > MAX_CHAIN_CERTIFICATES {
        return Err(Error::InvalidCertificate {
            reason: "too many certificates in the chain",
        });
    }
    verify_chain(chain, cas, now)
}

fn verify_chain<C: AsRef<[u8]>>(
    chain: &[C],
    cas: &[Vec<u8>],
    now: SystemTime,
) -> Result<(), Error> {
    let algs = crate::backend::algorithms();
    if algs.is_empty() {
        return Err(Error::NoCryptoBackend);
    }
    let (Some(leaf), intermediates) = (chain.first(), chain.get(1..).unwrap_or_default()) else {
        return Err(Error::InvalidCertificate {
            reason: "no certificate",
        });
    };
    let leaf = CertificateDer::from(leaf.as_ref());
    let end_entity =
        webpki::EndEntityCert::try_from(&leaf).map_err(|_| Error::InvalidCertificate {
            reason: "not a certificate rustls-webpki accepts",
        })?;
    let ca_ders: Vec<CertificateDer<'_>> = cas
        .iter()
        .map(|c| CertificateDer::from(c.as_slice()))
        .collect();
    let anchors: Vec<(usize, rustls_pki_types::TrustAnchor<'_>)> = ca_ders
        .iter()
        .enumerate()
        .filter_map(|(i, c)| webpki::anchor_from_trusted_cert(c).ok().map(|a| (i, a)))
        .collect();
    if anchors.is_empty() {
        return Err(Error::InvalidCertificate {
            reason: "no usable CA certificate in the bundle",
        });
    }
    let trust: Vec<rustls_pki_types::TrustAnchor<'_>> =
        anchors.iter().map(|(_, a)| a.clone()).collect();
    let intermediates: Vec<CertificateDer<'_>> = intermediates
        .iter()
        .map(|c| CertificateDer::from(c.as_ref()))
        .collect();
    let secs = now.duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO);
    let path = end_entity
        .verify_for_usage(
            algs,
            &trust,
            &intermediates,
            UnixTime::since_unix_epoch(secs),
            webpki::KeyUsage::client_auth(),
            None,
            None,
        )
        .map_err(|_| Error::Untrusted)?;
    // rustls-webpki treats a trust anchor as a name and a key (RFC 5280); Go's verifier, which
    // the API server uses, also refuses an anchor outside its validity. Do the same.
    let anchor_der = anchors
        .iter()
        .find(|(_, a)| a == path.anchor())
        .and_then(|(i, _)| cas.get(*i))
        .ok_or(Error::Untrusted)?;
    let anchor = Certificate::from_der(anchor_der).map_err(|_| Error::Untrusted)?;
    let validity = &anchor.tbs_certificate.validity;
    if now < validity.not_before.to_system_time() || now > validity.not_after.to_system_time() {
        return Err(Error::Untrusted);
    }
    Ok(())
}
