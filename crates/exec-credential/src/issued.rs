//! A validated credential, as a client uses it.

use std::time::SystemTime;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use der::Decode as _;

use crate::credential::ExecCredentialStatus;
use crate::error::Error;
use crate::secret::{ClientKey, Token};

/// Identifies one credential generation of an [`ExecAuthenticator`](crate::ExecAuthenticator):
/// every successful plugin run gets a new id. Pass it back to
/// [`ExecAuthenticator::handle_unauthorized`](crate::ExecAuthenticator::handle_unauthorized).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CredentialId(pub(crate) u64);

impl CredentialId {
    /// The generation number (1 for the first credential).
    #[must_use]
    pub fn get(self) -> u64 {
        self.0
    }
}

/// A credential that passed client-go's output rules: a bearer token, a TLS client identity, or
/// both, and an optional expiry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Credential {
    id: CredentialId,
    token: Option<Token>,
    identity: Option<ClientIdentity>,
    expiration: Option<SystemTime>,
}

/// A TLS client certificate chain and private key returned by a plugin.
///
/// The chain parsed as PEM with an X.509 leaf, and the PEM private key (PKCS#8, PKCS#1 or SEC1;
/// RSA, ECDSA P-256/P-384 or Ed25519) matches the leaf's public key, as Go's
/// `tls.X509KeyPair` requires.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientIdentity {
    certificate_pem: String,
    key: ClientKey,
    not_before: Option<SystemTime>,
    not_after: Option<SystemTime>,
}

impl Credential {
    pub(crate) fn from_status(status: ExecCredentialStatus) -> Result<Credential, Error> {
        let (expiration, token, cert, key) = status.into_parts();
        // client-go's order: nothing at all, then only one half of the pair.
        if token.is_none() && cert.is_none() && key.is_none() {
            return Err(Error::NoCredential);
        }
        let identity = match (cert, key) {
            (None, None) => None,
            (Some(cert), Some(key)) => Some(ClientIdentity::parse(cert, key)?),
            _ => return Err(Error::PartialKeyPair),
        };
        // An expiry already past is kept: client-go uses such a credential for the request
        // that ran the plugin (the plugin's clock may disagree with ours) and runs the plugin
        // again on the next use. `is_expired(now)` tells the caller.
        Ok(Credential {
            id: CredentialId(0),
            token,
            identity,
            expiration,
        })
    }

    pub(crate) fn with_id(mut self, id: CredentialId) -> Credential {
        self.id = id;
        self
    }

    /// The generation this credential belongs to.
    #[must_use]
    pub fn id(&self) -> CredentialId {
        self.id
    }

    /// The bearer token, if the plugin returned one. Send it as `Authorization: Bearer <token>`.
    #[must_use]
    pub fn token(&self) -> Option<&Token> {
        self.token.as_ref()
    }

    /// The TLS client identity, if the plugin returned one.
    #[must_use]
    pub fn client_identity(&self) -> Option<&ClientIdentity> {
        self.identity.as_ref()
    }

    /// The expiry; `None` means the credential does not expire.
    #[must_use]
    pub fn expiration(&self) -> Option<SystemTime> {
        self.expiration
    }

    /// client-go's rule: expired when an expiry is set and `now` is strictly after it. There is
    /// no early-refresh margin; the credential is valid at its expiry instant.
    #[must_use]
    pub fn is_expired(&self, now: SystemTime) -> bool {
        match self.expiration {
            Some(exp) => now > exp,
            None => false,
        }
    }
}

impl ClientIdentity {
    fn parse(certificate_pem: String, key: ClientKey) -> Result<ClientIdentity, Error> {
        let certs =
            pem_blocks(certificate_pem.as_bytes()).map_err(|reason| Error::InvalidKeyPair {
                reason: format!("certificate: {reason}"),
            })?;
        let leaf = certs
            .iter()
            .find(|(label, _)| label == "CERTIFICATE")
            .ok_or_else(|| Error::InvalidKeyPair {
                reason: "failed to find \"CERTIFICATE\" PEM block in certificate input".to_owned(),
            })?;
        let cert = x509_cert::Certificate::from_der(&leaf.1).map_err(|e| {
            Error::InvalidLeafCertificate {
                reason: bounded_der_error(&e),
            }
        })?;
        let validity = &cert.tbs_certificate.validity;
        let not_before = Some(validity.not_before.to_system_time());
        let not_after = Some(validity.not_after.to_system_time());

        // Key errors never include key bytes: only a fixed reason.
        let keys = Wipe(pem_blocks(key.expose_secret().as_bytes()).map_err(|_| {
            Error::InvalidKeyPair {
                reason: "private key is not valid PEM".to_owned(),
            }
        })?);
        // As Go's `tls.X509KeyPair`: the first block whose label ends in "PRIVATE KEY", parsed
        // by content (PKCS#1, PKCS#8 or SEC1) whatever the label names.
        let (label, der) = keys
            .0
            .iter()
            .find(|(label, _)| label == "PRIVATE KEY" || label.ends_with(" PRIVATE KEY"))
            .ok_or_else(|| Error::InvalidKeyPair {
                reason: "failed to find PEM block with type ending in \"PRIVATE KEY\" in key input"
                    .to_owned(),
            })?;
        if label == "ENCRYPTED PRIVATE KEY" || label.contains("ENCRYPTED") {
            return Err(Error::InvalidKeyPair {
                reason: "encrypted private keys are not supported".to_owned(),
            });
        }
        crate::keypair::check(&cert.tbs_certificate.subject_public_key_info, der)?;
        Ok(ClientIdentity {
            certificate_pem,
            key,
            not_before,
            not_after,
        })
    }

    /// The certificate chain (PEM), leaf first.
    #[must_use]
    pub fn certificate_pem(&self) -> &str {
        &self.certificate_pem
    }

    /// The private key (PEM).
    #[must_use]
    pub fn key(&self) -> &ClientKey {
        &self.key
    }

    /// The leaf certificate's `notBefore`.
    #[must_use]
    pub fn not_before(&self) -> Option<SystemTime> {
        self.not_before
    }

    /// The leaf certificate's `notAfter`.
    #[must_use]
    pub fn not_after(&self) -> Option<SystemTime> {
        self.not_after
    }
}

/// Decoded key blocks, wiped on drop.
struct Wipe(Vec<(String, Vec<u8>)>);

impl Drop for Wipe {
    fn drop(&mut self) {
        for (_, der) in &mut self.0 {
            zeroize::Zeroize::zeroize(der);
        }
    }
}

fn bounded_der_error(e: &der::Error) -> String {
    crate::error::bounded(&e.kind().to_string(), 120)
}

/// Splits PEM text into `(label, DER)` blocks, ignoring text between blocks as Go's `pem.Decode`
/// does. At most 64 blocks.
fn pem_blocks(input: &[u8]) -> Result<Vec<(String, Vec<u8>)>, &'static str> {
    const BEGIN: &str = "-----BEGIN ";
    const DASHES: &str = "-----";
    let text = core::str::from_utf8(input).map_err(|_| "not UTF-8")?;
    let mut rest = text;
    let mut out = Vec::new();
    while let Some(start) = rest.find(BEGIN) {
        let after = rest
            .get(start.saturating_add(BEGIN.len())..)
            .ok_or("truncated")?;
        let (label, body) = after.split_once(DASHES).ok_or("malformed BEGIN line")?;
        if label.contains('\n') || label.len() > 64 {
            return Err("malformed BEGIN line");
        }
        let end_marker = format!("-----END {label}-----");
        let (body, tail) = body
            .split_once(end_marker.as_str())
            .ok_or("missing END line")?;
        let compact: zeroize::Zeroizing<String> =
            zeroize::Zeroizing::new(body.chars().filter(|c| !c.is_ascii_whitespace()).collect());
        if compact.contains(':') {
            return Err("PEM headers are not supported");
        }
        let der = STANDARD
            .decode(compact.as_bytes())
            .map_err(|_| "invalid base64")?;
        out.push((label.to_owned(), der));
        if out.len() > 64 {
            return Err("too many PEM blocks");
        }
        rest = tail;
    }
    if out.is_empty() {
        return Err("failed to find any PEM data");
    }
    Ok(out)
}
