//! x509 client-certificate authentication: a TLS client's certificate chain verified against a
//! client CA at `now` for client authentication, the user read from the certificate as
//! Kubernetes' `CommonNameUserConversion` reads it.

use std::time::SystemTime;

use sha2::{Digest as _, Sha256};

use crate::error::Error;
use crate::user::UserInfo;

/// The extra key Kubernetes records a credential's identity under.
pub const CREDENTIAL_ID_EXTRA: &str = "authentication.kubernetes.io/credential-id";

/// A client CA bundle (`--client-ca-file`, the ConfigMap's `client-ca-file` or
/// `requestheader-client-ca-file`), parsed once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientCa {
    certificates: Vec<Vec<u8>>,
}

/// A client certificate that chains to a [`ClientCa`] for client authentication.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedClientCertificate {
    common_name: Option<String>,
    organizations: Vec<String>,
    fingerprint: [u8; 32],
}

impl ClientCa {
    /// Reads a PEM bundle of one or more CA certificates.
    ///
    /// # Errors
    ///
    /// [`Error::Certificate`] when the bundle is too large, holds no certificate, too many, or
    /// a PEM block of another type.
    pub fn from_pem(pem: &[u8]) -> Result<ClientCa, Error> {
        let certificates = tls_bootstrap::ca_certificates(pem).map_err(Error::Certificate)?;
        Ok(ClientCa { certificates })
    }

    /// How many CA certificates the bundle holds.
    #[must_use]
    pub fn len(&self) -> usize {
        self.certificates.len()
    }

    /// Whether the bundle holds none (never, for a bundle that was read).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.certificates.is_empty()
    }

    /// Verifies a TLS client's certificate chain (DER: its certificate first, then any
    /// intermediates it sent) against this CA at `now`, for client authentication (the
    /// client-auth extended key usage is required when the certificate names any).
    ///
    /// # Errors
    ///
    /// [`Error::Certificate`] when the chain is empty, too long, unreadable, or does not chain
    /// to this CA for client authentication at `now`.
    pub fn verify<C: AsRef<[u8]>>(
        &self,
        chain: &[C],
        now: SystemTime,
    ) -> Result<VerifiedClientCertificate, Error> {
        tls_bootstrap::verify_client_chain(chain, &self.certificates, now)
            .map_err(Error::Certificate)?;
        let Some(leaf) = chain.first() else {
            return Err(Error::Certificate(
                tls_bootstrap::Error::InvalidCertificate {
                    reason: "no certificate",
                },
            ));
        };
        let leaf = leaf.as_ref();
        let subject = tls_bootstrap::Subject::of_certificate(leaf).map_err(Error::Certificate)?;
        Ok(VerifiedClientCertificate {
            common_name: subject.common_name().map(str::to_owned),
            organizations: subject.organizations().to_vec(),
            fingerprint: Sha256::digest(leaf).into(),
        })
    }

    /// The user of a TLS client's certificate chain, as Kubernetes' x509 authenticator (with
    /// `CommonNameUserConversion`) decides it: no chain is no user of this kind (`Ok(None)`);
    /// a chain is verified ([`ClientCa::verify`]); a certificate without a common name is no
    /// user (`Ok(None)`); otherwise the user is the common name, with the organizations as
    /// groups and the extra `authentication.kubernetes.io/credential-id` =
    /// `X509SHA256=<hex SHA-256 of the certificate>`. (Kubernetes' optional reading of a UID
    /// attribute, behind a feature gate, is not done.)
    ///
    /// # Errors
    ///
    /// As [`ClientCa::verify`].
    pub fn authenticate<C: AsRef<[u8]>>(
        &self,
        chain: &[C],
        now: SystemTime,
    ) -> Result<Option<UserInfo>, Error> {
        if chain.is_empty() {
            return Ok(None);
        }
        Ok(self.verify(chain, now)?.to_user())
    }
}

impl VerifiedClientCertificate {
    /// The subject's common name (the last one, as Go keeps it).
    #[must_use]
    pub fn common_name(&self) -> Option<&str> {
        self.common_name.as_deref()
    }

    /// The subject's organizations, in order.
    #[must_use]
    pub fn organizations(&self) -> &[String] {
        &self.organizations
    }

    /// The SHA-256 of the certificate's DER.
    #[must_use]
    pub fn fingerprint(&self) -> [u8; 32] {
        self.fingerprint
    }

    /// The user, as `CommonNameUserConversion` makes it; `None` without a common name.
    #[must_use]
    pub fn to_user(&self) -> Option<UserInfo> {
        let name = self.common_name.as_deref().filter(|n| !n.is_empty())?;
        let mut id = String::with_capacity(75);
        id.push_str("X509SHA256=");
        for b in self.fingerprint {
            id.push(hex_digit(b >> 4));
            id.push(hex_digit(b & 0x0f));
        }
        Some(
            UserInfo::new(name)
                .with_groups(self.organizations.iter().cloned())
                .with_extra(CREDENTIAL_ID_EXTRA, [id]),
        )
    }
}

fn hex_digit(n: u8) -> char {
    char::from_digit(u32::from(n), 16).unwrap_or('0')
}
