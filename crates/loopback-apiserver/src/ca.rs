//! The double's certificate authority: it signed the serving certificate, it verifies client
//! certificates, and it signs the client certificates the double issues (and, later, the
//! certificates its CSR signer issues).

use std::time::{Duration, SystemTime};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, DnValue, ExtendedKeyUsagePurpose, IsCa, KeyPair,
    KeyUsagePurpose, PublicKeyData,
};

use super::Error;

/// How long an issued client certificate is valid.
const CLIENT_CERT_VALIDITY: Duration = Duration::from_secs(365 * 24 * 60 * 60);
/// How far back an issued certificate's validity starts, for clock skew between hosts (the
/// backdating kube-controller-manager's signer applies).
const BACKDATE: Duration = Duration::from_secs(5 * 60);
/// The most subject organizations (`O`) a certificate the double issues can carry: rcgen 0.13
/// keeps one value per attribute type, and the double spells the second `O` as a custom attribute
/// with the same object identifier (2.5.4.10), which decodes as an organization everywhere.
pub(crate) const MAX_ORGANIZATIONS: usize = 2;
/// `id-at-organizationName`.
const ORGANIZATION_OID: [u64; 4] = [2, 5, 4, 10];

/// The CA: its certificate, its key and the certificate's PEM.
pub(crate) struct Ca {
    cert: rcgen::Certificate,
    key: KeyPair,
    pem: String,
}

impl Ca {
    /// A fresh self-signed CA (ECDSA P-256).
    pub(crate) fn generate() -> Result<Ca, Error> {
        let key = new_key()?;
        let mut params =
            CertificateParams::new(Vec::<String>::new()).map_err(Error::Certificate)?;
        params
            .distinguished_name
            .push(DnType::CommonName, "loopback API server CA (a test double)");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let cert = params.self_signed(&key).map_err(Error::Certificate)?;
        let pem = cert.pem();
        Ok(Ca { cert, key, pem })
    }

    /// The CA certificate's PEM.
    pub(crate) fn pem(&self) -> &str {
        &self.pem
    }

    /// The CA certificate's `notAfter`.
    pub(crate) fn not_after(&self) -> SystemTime {
        self.cert.params().not_after.into()
    }

    /// The CA certificate's DER.
    pub(crate) fn der(&self) -> &rustls::pki_types::CertificateDer<'static> {
        self.cert.der()
    }

    /// Signs a certificate for `public_key` with `params` (issuer and authority key identifier
    /// come from the CA).
    pub(crate) fn sign(
        &self,
        params: CertificateParams,
        public_key: &impl PublicKeyData,
    ) -> Result<rcgen::Certificate, Error> {
        params
            .signed_by(public_key, &self.cert, &self.key)
            .map_err(Error::Certificate)
    }

    /// A client certificate and its new key (ECDSA P-256), as PEM: subject `CN=common_name`
    /// with one `O` per organization, key usage digitalSignature, extended key usage clientAuth,
    /// valid for a year from `now` (backdated five minutes).
    pub(crate) fn issue_client(
        &self,
        common_name: &str,
        organizations: &[&str],
        now: SystemTime,
    ) -> Result<(String, String), Error> {
        if organizations.len() > MAX_ORGANIZATIONS {
            return Err(Error::TooManyOrganizations {
                max: MAX_ORGANIZATIONS,
            });
        }
        let key = new_key()?;
        let mut params =
            CertificateParams::new(Vec::<String>::new()).map_err(Error::Certificate)?;
        params
            .distinguished_name
            .push(DnType::CommonName, common_name);
        for (i, o) in organizations.iter().enumerate() {
            let ty = if i == 0 {
                DnType::OrganizationName
            } else {
                DnType::CustomDnType(ORGANIZATION_OID.to_vec())
            };
            params
                .distinguished_name
                .push(ty, DnValue::Utf8String((*o).to_owned()));
        }
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        params.use_authority_key_identifier_extension = true;
        let not_before = now.checked_sub(BACKDATE).unwrap_or(now);
        let not_after = now
            .checked_add(CLIENT_CERT_VALIDITY)
            .ok_or(Error::Validity)?;
        set_validity(&mut params, not_before, not_after)?;
        let cert = self.sign(params, &key)?;
        Ok((cert.pem(), key.serialize_pem()))
    }
}

/// Sets `params`' validity to `[not_before, not_after]`, to the second.
pub(crate) fn set_validity(
    params: &mut CertificateParams,
    not_before: SystemTime,
    not_after: SystemTime,
) -> Result<(), Error> {
    // rcgen's time type is the `time` crate's, which this crate does not name: the Unix epoch
    // from rcgen plus whole seconds.
    let epoch = rcgen::date_time_ymd(1970, 1, 1);
    let at = |t: SystemTime| {
        t.duration_since(SystemTime::UNIX_EPOCH)
            .ok()
            .and_then(|d| Duration::from_secs(d.as_secs()).try_into().ok())
            .and_then(|d| epoch.checked_add(d))
    };
    params.not_before = at(not_before).ok_or(Error::Validity)?;
    params.not_after = at(not_after).ok_or(Error::Validity)?;
    Ok(())
}

/// A fresh key pair (rcgen's default algorithm, ECDSA P-256), when a crypto feature is on.
pub(crate) fn new_key() -> Result<KeyPair, Error> {
    #[cfg(any(feature = "ring", feature = "aws-lc-rs"))]
    {
        KeyPair::generate().map_err(Error::Certificate)
    }
    #[cfg(not(any(feature = "ring", feature = "aws-lc-rs")))]
    {
        Err(Error::NoCryptoProvider)
    }
}
